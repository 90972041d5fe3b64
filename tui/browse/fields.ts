import { engramJsonSchema } from '../../engine/model/engram-schema.js';
import { displayWidth, oneLine, truncate, wrap } from './text.js';

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
  return recordLines(doc, width, ENGRAM_FIELD_ORDER, 'fields not in the engram schema');
}

/**
 * Lines for a record: fields in `order` first (those present), then any others. With a
 * heading, the others are set apart under it (they are unknown to the schema).
 */
export function recordLines(doc: Record<string, unknown>, width: number, order: readonly string[] = [], otherHeading?: string): DetailLine[] {
  const known = order.filter((k) => k in doc);
  const others = Object.keys(doc).filter((k) => !order.includes(k));
  const lines: DetailLine[] = [];
  for (const key of known) lines.push(...valueLines(key, doc[key], 0, width));
  if (others.length && otherHeading && known.length) lines.push({ text: `── ${otherHeading} ──`, kind: 'heading' });
  for (const key of others) lines.push(...valueLines(key, doc[key], 0, width));
  return lines.map((l) => ({ ...l, text: truncate(l.text, width) }));
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
function labelled(label: string, value: string, indent: number, width: number, kind: DetailLine['kind'] = 'field'): DetailLine[] {
  const pad = ' '.repeat(indent);
  const head = `${pad}${label}: `;
  const contPad = ' '.repeat(Math.min(indent + 2, Math.max(0, width - 10)));
  const firstWidth = Math.max(8, width - displayWidth(head));
  const restWidth = Math.max(8, width - contPad.length);
  // Multi-line strings keep their paragraphs.
  const paragraphs = value.split(/\r?\n/);
  const out: DetailLine[] = [];
  paragraphs.forEach((para, pi) => {
    const parts = wrap(para, restWidth, pi === 0 ? firstWidth : restWidth);
    parts.forEach((part, i) => {
      if (pi === 0 && i === 0) out.push({ text: head + part, kind });
      else out.push({ text: contPad + part, kind: 'text' });
    });
  });
  return out;
}

function valueLines(key: string, value: unknown, indent: number, width: number): DetailLine[] {
  const pad = ' '.repeat(indent);
  if (isScalar(value)) return labelled(key, scalarText(value), indent, width);
  if (Array.isArray(value)) {
    if (value.length === 0) return [{ text: `${pad}${key}: []`, kind: 'field' }];
    if (value.every(isScalar)) return labelled(key, value.map(scalarText).join(', '), indent, width);
    const out: DetailLine[] = [{ text: `${pad}${key}:`, kind: 'field' }];
    for (const item of value) out.push(...itemLines(item, indent + 2, width));
    return out;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return [{ text: `${pad}${key}: {}`, kind: 'field' }];
    const out: DetailLine[] = [{ text: `${pad}${key}:`, kind: 'field' }];
    for (const [k, v] of entries) out.push(...valueLines(k, v, indent + 2, width));
    return out;
  }
  return labelled(key, oneLine(String(value)), indent, width);
}

/** One array item: `- value`, or `- first: x` with the other keys aligned under it. */
function itemLines(item: unknown, indent: number, width: number): DetailLine[] {
  const pad = ' '.repeat(indent);
  if (isScalar(item)) {
    return wrap(scalarText(item), Math.max(8, width - indent - 2)).map((part, i) => ({
      text: `${pad}${i === 0 ? '- ' : '  '}${part}`,
      kind: 'text' as const,
    }));
  }
  if (Array.isArray(item)) {
    const out: DetailLine[] = [{ text: `${pad}-`, kind: 'text' }];
    for (const sub of item) out.push(...itemLines(sub, indent + 2, width));
    return out;
  }
  const entries = Object.entries(item as Record<string, unknown>);
  if (entries.length === 0) return [{ text: `${pad}- {}`, kind: 'text' }];
  const out: DetailLine[] = [];
  entries.forEach(([k, v], i) => {
    const lines = valueLines(k, v, indent + 2, width);
    if (i === 0 && lines.length > 0) {
      // Replace the first line's indent with `- `.
      const first = lines[0]!;
      lines[0] = { ...first, text: `${pad}- ${first.text.slice(indent + 2)}` };
    }
    out.push(...lines);
  });
  return out;
}
