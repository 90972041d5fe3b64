import type { EngramDoc } from '../engine/model/engram-types.js';

// How engrams appear in text output (JSON shapes are in engine/ops/result-json.ts).

/** A statement longer than this is cut in text output (JSON keeps it whole): one engram, a few lines. */
export const TEXT_STATEMENT_MAX = 200;

export function engramLine(e: EngramDoc): string {
  const marks = [e.type, e.scope, e.domain, e.status !== 'active' ? e.status : undefined].filter(Boolean).join(' · ');
  return `${e.id}  [${marks}]\n    ${shortStatement(e.statement)}`;
}

/** The statement on one line, cut at a word with an ellipsis past TEXT_STATEMENT_MAX characters. */
export function shortStatement(statement: string): string {
  const s = statement.replace(/\s+/g, ' ').trim();
  if (s.length <= TEXT_STATEMENT_MAX) return s;
  const cut = s.slice(0, TEXT_STATEMENT_MAX);
  const space = cut.lastIndexOf(' ');
  return `${space > TEXT_STATEMENT_MAX / 2 ? cut.slice(0, space) : cut}…`;
}
