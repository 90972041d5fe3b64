import type { EngramDoc } from '../engine/model/engram-schema.js';

// How engrams appear in text output (JSON shapes are in engine/ops/result-json.ts).

export function engramLine(e: EngramDoc): string {
  const marks = [e.type, e.scope, e.domain, e.status !== 'active' ? e.status : undefined].filter(Boolean).join(' · ');
  return `${e.id}  [${marks}]\n    ${e.statement}`;
}
