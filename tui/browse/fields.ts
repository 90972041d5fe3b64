import { engramJsonSchema } from '../../engine/model/engram-schema.js';
import { oneLine } from '../../engine/text.js';
import { displayWidth, truncate, wrapLines } from './text.js';

// The detail view: every field of a record as readable lines, nested objects indented,
// arrays of scalars joined, arrays of objects as `- ` items, long text wrapped to the width.
// Fields the schema does not know are shown too, after the known ones, under a heading.

export interface DetailLine {
  text: string;
  /** A field label line (rendered bold), a heading (dim), or plain text. */
  kind: 'field' | 'heading' | 'text';
}

const ENGRAM_FIELD_ORDER: readonly string[] = Object.keys(engramJsonSchema.properties);

export function engramLines(doc: Record<string, unknown>, width: number): DetailLine[] {
  return [...engramLineSource(doc, width)];
}

/** The lines of `engramLines`, one at a time (a long statement is laid out as far as it is read). */
export function engramLineSource(doc: Record<string, unknown>, width: number): Generator<DetailLine> {
  return recordLineSource(doc, width, ENGRAM_FIELD_ORDER, 'fields not in the engram schema');
}

/**
 * Lines for a record, one at a time: fields in `order` first (those present), then any others.
 * With a heading, the others are set apart under it (they are unknown to the schema).
 */
export function* recordLineSource(
  doc: Record<string, unknown>,
  width: number,
  order: readonly string[] = [],
  otherHeading?: string,
): Generator<DetailLine> {
  for (const l of fieldLines(doc, width, order, otherHeading)) yield { ...l, text: truncate(l.text, width) };
}

function* fieldLines(doc: Record<string, unknown>, width: number, order: readonly string[], otherHeading?: string): Generator<DetailLine> {
  const known = order.filter((k) => k in doc);
  const others = Object.keys(doc).filter((k) => !order.includes(k));
  for (const key of known) yield* valueLines(key, doc[key], 0, width);
  if (others.length && otherHeading && known.length) yield { text: `── ${otherHeading} ──`, kind: 'heading' };
  for (const key of others) yield* valueLines(key, doc[key], 0, width);
}

function isScalar(v: unknown): boolean {
  return v === null || v === undefined || ['string', 'number', 'boolean', 'bigint'].includes(typeof v);
}

function scalarText(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return '(none)';
  if (typeof v === 'string') return v === '' ? '""' : v;
  return String(v);
}

/** Label + value, wrapped: continuation lines are indented two columns past the label's indent. */
function* labelled(label: string, value: string, indent: number, width: number, kind: DetailLine['kind'] = 'field'): Generator<DetailLine> {
  const pad = ' '.repeat(indent);
  const head = `${pad}${label}: `;
  const contPad = ' '.repeat(Math.min(indent + 2, Math.max(0, width - 10)));
  const firstWidth = Math.max(8, width - displayWidth(head));
  const restWidth = Math.max(8, width - contPad.length);
  // Multi-line strings keep their paragraphs.
  let first = true;
  for (const para of value.split(/\r?\n/)) {
    for (const part of wrapLines(para, restWidth, first ? firstWidth : restWidth)) {
      yield first ? { text: head + part, kind } : { text: contPad + part, kind: 'text' };
      first = false;
    }
  }
}

function* valueLines(key: string, value: unknown, indent: number, width: number): Generator<DetailLine> {
  const pad = ' '.repeat(indent);
  if (isScalar(value)) return yield* labelled(key, scalarText(value), indent, width);
  if (Array.isArray(value)) {
    if (value.length === 0) return yield { text: `${pad}${key}: []`, kind: 'field' };
    if (value.every(isScalar)) return yield* labelled(key, value.map(scalarText).join(', '), indent, width);
    yield { text: `${pad}${key}:`, kind: 'field' };
    for (const item of value) yield* itemLines(item, indent + 2, width);
    return;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return yield { text: `${pad}${key}: {}`, kind: 'field' };
    yield { text: `${pad}${key}:`, kind: 'field' };
    for (const [k, v] of entries) yield* valueLines(k, v, indent + 2, width);
    return;
  }
  yield* labelled(key, oneLine(String(value)), indent, width);
}

/** One array item: `- value`, or `- first: x` with the other keys aligned under it. */
function* itemLines(item: unknown, indent: number, width: number): Generator<DetailLine> {
  const pad = ' '.repeat(indent);
  if (isScalar(item)) {
    let i = 0;
    for (const part of wrapLines(scalarText(item), Math.max(8, width - indent - 2))) {
      yield { text: `${pad}${i++ === 0 ? '- ' : '  '}${part}`, kind: 'text' };
    }
    return;
  }
  if (Array.isArray(item)) {
    yield { text: `${pad}-`, kind: 'text' };
    for (const sub of item) yield* itemLines(sub, indent + 2, width);
    return;
  }
  const entries = Object.entries(item as Record<string, unknown>);
  if (entries.length === 0) return yield { text: `${pad}- {}`, kind: 'text' };
  let first = true;
  for (const [k, v] of entries) {
    for (const line of valueLines(k, v, indent + 2, width)) {
      // The item's first line: its indent becomes `- `.
      yield first ? { ...line, text: `${pad}- ${line.text.slice(indent + 2)}` } : line;
      first = false;
    }
  }
}
