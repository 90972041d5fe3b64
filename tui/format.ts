import type { EngramDoc } from '../engine/model/engram-schema.js';

// How engrams appear in command output: a compact JSON summary and a one-line text form.

export function engramSummary(e: EngramDoc): Record<string, unknown> {
  return {
    id: e.id,
    statement: e.statement,
    type: e.type,
    scope: e.scope,
    status: e.status,
    ...(e.domain ? { domain: e.domain } : {}),
    tags: e.tags ?? [],
    ...(e.rationale ? { rationale: e.rationale } : {}),
    pinned: e.pinned ?? false,
  };
}

export function engramLine(e: EngramDoc): string {
  const marks = [e.type, e.scope, e.domain, e.status !== 'active' ? e.status : undefined].filter(Boolean).join(' · ');
  return `${e.id}  [${marks}]\n    ${e.statement}`;
}
