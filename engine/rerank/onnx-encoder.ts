// The hand-rolled ONNX protobuf encoder of tiny-model.ts, re-exported for other tiny graphs (the
// test reranker), plus the two pieces that file does not need: nodes with unique names (a graph
// may use an operator more than once) and integer-list attributes.

import { bytesField, intField, msg, type Field } from '../embed/tiny-model.js';

export { FLOAT, INT64, bytesField, intAttr, intField, int64s, msg, tensor, valueInfo, varint, type Field } from '../embed/tiny-model.js';

const ATTR_INTS = 7; // AttributeProto.AttributeType

/** NodeProto with an explicit (unique) name. */
export function namedNode(name: string, opType: string, inputs: string[], outputs: string[], attrs: Field[] = []): Field {
  return msg(1, [...inputs.map((i) => bytesField(1, i)), ...outputs.map((o) => bytesField(2, o)), bytesField(3, name), bytesField(4, opType), ...attrs]);
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
