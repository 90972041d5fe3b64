// A hand-rolled ONNX protobuf encoder (field numbers from onnx.proto), enough for the tiny
// graphs the tests build themselves: the embedder (tiny-model.ts) and the reranker
// (rerank/tiny-reranker.ts). No network, no ONNX tooling.

export const FLOAT = 1; // TensorProto.DataType
export const INT64 = 7;
const ATTR_INT = 2; // AttributeProto.AttributeType

export type Field = Buffer;

export function varint(n: number | bigint): Buffer {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n; // negative int64 are 10-byte two's complement varints
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Buffer.from(out);
}
export const intField = (field: number, n: number | bigint): Field => Buffer.concat([varint((field << 3) | 0), varint(n)]);
export const bytesField = (field: number, data: Uint8Array | string): Field => {
  const b = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([varint((field << 3) | 2), varint(b.length), b]);
};
export const msg = (field: number, parts: Field[]): Field => bytesField(field, Buffer.concat(parts));

export function tensor(field: number, name: string, dataType: number, dims: number[], raw: Uint8Array): Field {
  return msg(field, [...dims.map((d) => intField(1, d)), intField(2, dataType), bytesField(8, name), bytesField(9, raw)]);
}

export function valueInfo(field: number, name: string, elemType: number, dims: (number | string)[]): Field {
  const dimMsgs = dims.map((d) => msg(1, [typeof d === 'number' ? intField(1, d) : bytesField(2, d)]));
  const tensorType = msg(1, [intField(1, elemType), msg(2, dimMsgs)]);
  return msg(field, [bytesField(1, name), msg(2, [tensorType])]);
}

export const intAttr = (name: string, i: number): Field => msg(5, [bytesField(1, name), intField(3, i), intField(20, ATTR_INT)]);
export const int64s = (values: number[]): Uint8Array => new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);

const ATTR_INTS = 7; // AttributeProto.AttributeType

/** NodeProto with an explicit (unique) name. */
export function namedNode(name: string, opType: string, inputs: string[], outputs: string[], attrs: Field[] = []): Field {
  return msg(1, [
    ...inputs.map((i) => bytesField(1, i)),
    ...outputs.map((o) => bytesField(2, o)),
    bytesField(3, name),
    bytesField(4, opType),
    ...attrs,
  ]);
}

/** An INTS attribute, e.g. `perm` of Transpose or `axes` of ReduceMax before opset 18. */
export function intsAttr(name: string, values: number[]): Field {
  return msg(5, [bytesField(1, name), ...values.map((v) => intField(8, v)), intField(20, ATTR_INTS)]);
}

export const float32s = (values: ArrayLike<number>): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);

/** ModelProto around a graph (fields already encoded), at IR version 8 and the default opset. */
export function onnxModelProto(graph: Field[], opset = 13, producer = 'svc-tests'): Buffer {
  return Buffer.concat([intField(1, 8), bytesField(2, producer), msg(7, graph), msg(8, [bytesField(1, ''), intField(2, opset)])]);
}
