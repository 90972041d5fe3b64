import type { EngramDoc } from '../model/engram-types.js';
import type { LearnResult } from './learn.js';
import type { RecallHit } from './recall.js';

// How results appear as JSON: one shape for the CLI's --json output and the MCP tools.

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

/** The same fields as `svc learn --json`, plus the statement. */
export function learnSummary(r: LearnResult): Record<string, unknown> {
  const e = r.engram;
  return {
    id: e.id,
    statement: e.statement,
    type: e.type,
    scope: e.scope,
    status: e.status,
    action: r.action,
    reference_count: e.reference_count,
    recurrence_count: e.recurrence_count,
    recurrences: r.recurrences,
    ...(r.near_duplicate ? { near_duplicate: r.near_duplicate } : {}),
    warnings: r.warnings,
  };
}

/** One recall result: the engram's summary, its score and what each leg said about it. */
export function recallHitJson(h: RecallHit): Record<string, unknown> {
  return {
    ...engramSummary(h.engram),
    score: h.score,
    found_by: h.found_by,
    ...(h.bm25 ? { bm25: h.bm25 } : {}),
    ...(h.vector ? { vector: h.vector } : {}),
    ...(h.via ? { via: h.via } : {}),
    ...(h.rerank_score === undefined ? {} : { rerank_score: h.rerank_score }),
    candidate: h.candidate,
    ...(h.source ? { source: h.source } : {}),
  };
}
