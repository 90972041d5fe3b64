// A real, tiny cross-encoder in the layout svc loads rerankers from (model.onnx + tokenizer.json
// in a folder under <store>/models/), so tests run the real tokenizer pair encoding and the real
// ONNX runtime with no network. Its one logit per (query, passage) pair is a token-alignment
// score in the manner of ColBERT's MaxSim:
//
//   X        = Gather(table, input_ids)                 one-hot "concept" rows; synonyms share one
//   sim      = X · Xᵀ                                   [batch, seq, seq]: 1 where two tokens match
//   best_i   = max_j sim[i, j] · passage_mask[j]        does query token i occur in the passage?
//   coverage = Σ_i best_i · query_mask[i] · weight[i]   weighted share of the query the passage covers
//   logit    = sign · (coverage − length_penalty · Σ_j passage_mask[j] · weight[j])
//
// `weight` is the learned salience: 0 for special tokens and punctuation, small for stop words
// and word pieces, 1 for content words. A passage holding every query word outscores one holding
// some of them however short; among equal coverage the shorter passage wins. `invert` flips the
// sign: a deliberately harmful reranker, for testing the gate's `harmful` verdict.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildVocab, SPECIALS, writeTokenizerFiles } from '../embed/tiny-model.js';
import { STOP_WORDS } from '../search/stop-words.js';
import {
  FLOAT,
  INT64,
  float32s,
  int64s,
  intAttr,
  intsAttr,
  namedNode,
  onnxModelProto,
  tensor,
  valueInfo,
  bytesField,
} from '../embed/onnx-encoder.js';
import { RERANKER_ONNX, RERANKER_TOKENIZER } from './reranker.js';

export interface TinyRerankerOptions {
  /** Extra whole words for the vocabulary (lowercase); others split into letters, which barely count. */
  words?: string[];
  /** Groups of words the model treats as the same, e.g. [['car', 'automobile']]. */
  synonyms?: string[][];
  /** Negate every logit: prefers the worst match (a harmful reranker). */
  invert?: boolean;
  /** Subtracted per unit of passage content weight (default 0.01): breaks ties toward short passages. */
  lengthPenalty?: number;
  modelMaxLength?: number;
}

/** Writes model.onnx and tokenizer files into `dir` (created if needed). */
export function writeTinyReranker(dir: string, opts: TinyRerankerOptions = {}): void {
  const vocab = buildVocab({ words: opts.words, synonyms: opts.synonyms });
  const ids = new Map(vocab.map((t, i) => [t, i]));
  // One concept per token, shared within a synonym group.
  const concept = new Map<number, number>();
  let concepts = 0;
  for (const group of opts.synonyms ?? []) {
    const c = concepts++;
    for (const w of group) concept.set(ids.get(w.toLowerCase())!, c);
  }
  vocab.forEach((_, id) => concept.has(id) || concept.set(id, concepts++));

  const weight = vocab.map((token) => salience(token));
  const table = new Float32Array(vocab.length * concepts);
  vocab.forEach((_, id) => {
    if (weight[id]! > 0) table[id * concepts + concept.get(id)!] = 1; // specials and punctuation: zero rows
  });

  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, RERANKER_ONNX), rerankerGraph(table, vocab.length, concepts, weight, opts));
  writeTokenizerFiles(dir, RERANKER_TOKENIZER, vocab, opts.modelMaxLength ?? 128, { num_labels: 1 });
}

function salience(token: string): number {
  if (SPECIALS.includes(token)) return 0;
  if (!/[\p{L}\p{N}]/u.test(token)) return 0; // punctuation
  if (STOP_WORDS.has(token)) return 0.05;
  if (token.startsWith('##') || token.length === 1) return 0.2; // pieces of words outside the vocabulary
  return 1;
}

function rerankerGraph(table: Float32Array, vocabSize: number, concepts: number, weight: number[], opts: TinyRerankerOptions): Buffer {
  const n = (name: string, op: string, inputs: string[], outputs: string[], attrs = [] as Buffer[]) =>
    namedNode(name, op, inputs, outputs, attrs);
  const graph = [
    n('gather_rows', 'Gather', ['table', 'input_ids'], ['x']),
    n('gather_weight', 'Gather', ['weight', 'input_ids'], ['w']),
    n('cast_mask', 'Cast', ['attention_mask'], ['m'], [intAttr('to', FLOAT)]),
    n('cast_types', 'Cast', ['token_type_ids'], ['t'], [intAttr('to', FLOAT)]),
    n('passage_mask', 'Mul', ['m', 't'], ['pm']),
    n('query_mask', 'Sub', ['m', 'pm'], ['qm']),
    n('query_weight', 'Mul', ['qm', 'w'], ['qw']),
    n('passage_weight', 'Mul', ['pm', 'w'], ['pw']),
    n('transpose', 'Transpose', ['x'], ['xt'], [intsAttr('perm', [0, 2, 1])]),
    n('similarity', 'MatMul', ['x', 'xt'], ['sim']),
    n('passage_cols', 'Unsqueeze', ['pm', 'axis_1'], ['pm3']),
    n('passage_sim', 'Mul', ['sim', 'pm3'], ['psim']),
    n('best_match', 'ReduceMax', ['psim'], ['best'], [intsAttr('axes', [2]), intAttr('keepdims', 0)]),
    n('covered', 'Mul', ['best', 'qw'], ['cov']),
    n('coverage', 'ReduceSum', ['cov', 'axis_1'], ['coverage'], [intAttr('keepdims', 1)]),
    n('passage_len', 'ReduceSum', ['pw', 'axis_1'], ['plen'], [intAttr('keepdims', 1)]),
    n('penalty', 'Mul', ['plen', 'length_penalty'], ['pen']),
    n('raw', 'Sub', ['coverage', 'pen'], ['raw']),
    n('signed', 'Mul', ['raw', 'sign'], ['logits']),
    bytesField(2, 'tiny-reranker'),
    tensor(5, 'table', FLOAT, [vocabSize, concepts], new Uint8Array(table.buffer)),
    tensor(5, 'weight', FLOAT, [vocabSize], float32s(weight)),
    tensor(5, 'axis_1', INT64, [1], int64s([1])),
    tensor(5, 'length_penalty', FLOAT, [1], float32s([opts.lengthPenalty ?? 0.01])),
    tensor(5, 'sign', FLOAT, [1], float32s([opts.invert ? -1 : 1])),
    valueInfo(11, 'input_ids', INT64, ['batch', 'seq']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'seq']),
    valueInfo(11, 'token_type_ids', INT64, ['batch', 'seq']),
    valueInfo(12, 'logits', FLOAT, ['batch', 1]),
  ];
  return onnxModelProto(graph);
}
