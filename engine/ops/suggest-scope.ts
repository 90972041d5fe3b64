import type { EngramStore, SearchIndex } from '../backend.js';
import { DEFAULT_SCOPE } from '../model/scope.js';
import { recall, type TeamSource } from './recall.js';

// Where a statement learned without a scope should go: the scope of the engrams most like it,
// when they agree. Recall (BM25, and the hub when configured) finds the closest engrams; each
// scope's share of their relevance is its confidence. A scope is chosen when it holds at least
// two of them, a clear majority of the relevance (60%), and a strong match (half the best);
// otherwise `global`, as the spec says. Personal scopes of others never come back from recall.

const NEIGHBOURS = 10;
/**
 * The neighbours are found by the statement's rarest words, as many as 5,000 engrams hold in
 * all: in a large store its common words would make the search score tens of thousands of rows
 * (25 ms of a 145 ms `svc learn` at 100,000 engrams) and weigh little in the scores. Below that
 * size every word is searched.
 */
const NEIGHBOUR_ROWS = 5_000;
const MIN_SHARE = 0.6;
const MIN_BEST = 0.5;
const MIN_HITS = 2;

export interface ScopeSuggestion {
  scope: string;
  /** 0..1: the chosen scope's share of the neighbours' relevance (0 for the global fallback). */
  confidence: number;
  confident: boolean;
  reason: string;
  alternatives: Array<{ scope: string; confidence: number; engrams: number }>;
}

export async function suggestScope(
  backend: EngramStore & SearchIndex,
  statement: string,
  opts: { domain?: string; limit?: number; team?: TeamSource } = {},
): Promise<ScopeSuggestion> {
  const found = await recall(backend, statement, {
    limit: NEIGHBOURS,
    fast: true,
    rarestTermRows: NEIGHBOUR_ROWS,
    ...(opts.team ? { team: opts.team } : {}),
  });
  const by = new Map<string, { weight: number; best: number; n: number }>();
  let total = 0;
  for (const h of found.hits) {
    // The same domain counts for more: a topic tends to live in one scope.
    const w = h.score * (opts.domain && h.engram.domain === opts.domain ? 1.5 : 1);
    const s = by.get(h.engram.scope) ?? { weight: 0, best: 0, n: 0 };
    s.weight += w;
    s.best = Math.max(s.best, h.score);
    s.n += 1;
    by.set(h.engram.scope, s);
    total += w;
  }
  const ranked = [...by.entries()]
    .map(([scope, s]) => ({ scope, confidence: total > 0 ? Math.round((s.weight / total) * 100) / 100 : 0, engrams: s.n, best: s.best }))
    .sort((a, b) => b.confidence - a.confidence || b.engrams - a.engrams);
  const top = ranked[0];
  const alternatives = ranked.slice(0, opts.limit ?? 3).map(({ best: _b, ...r }) => r);
  if (top && top.engrams >= MIN_HITS && top.confidence >= MIN_SHARE && top.best >= MIN_BEST) {
    return {
      scope: top.scope,
      confidence: top.confidence,
      confident: true,
      reason: `${top.engrams} of the ${found.hits.length} closest engrams are in ${top.scope} (${Math.round(top.confidence * 100)}% of their relevance)`,
      alternatives,
    };
  }
  const why = !top
    ? 'no similar engram yet'
    : `no scope holds a clear majority of the ${found.hits.length} closest engrams${top ? ` (best: ${top.scope}, ${Math.round(top.confidence * 100)}%)` : ''}`;
  return { scope: DEFAULT_SCOPE, confidence: 0, confident: false, reason: why, alternatives };
}

/** Where a learn without a scope goes: `routed` there, or only `suggested` (kept here, the caller says how to share it). */
export interface UnscopedRoute {
  routed?: { scope: string; confidence: number; reason: string };
  suggested?: { scope: string; confidence: number; reason: string };
}

/**
 * Routes a learn without a scope. A scope whose engrams would leave the machine (`leaves`: a
 * team scope on the hub) is only suggested unless the project opted in (.svc.yaml
 * route_to_team: true): a personal note is never published without being asked to.
 */
export async function routeUnscoped(
  backend: EngramStore & SearchIndex,
  statement: string,
  opts: { domain?: string; team?: TeamSource; leaves?: (scope: string) => Promise<boolean>; routeToTeam?: boolean },
): Promise<UnscopedRoute> {
  const s = await suggestScope(backend, statement, {
    ...(opts.domain ? { domain: opts.domain } : {}),
    ...(opts.team ? { team: opts.team } : {}),
  });
  if (!s.confident) return {};
  const pick = { scope: s.scope, confidence: s.confidence, reason: s.reason };
  if (!opts.routeToTeam && opts.leaves && (await opts.leaves(s.scope))) return { suggested: pick };
  return { routed: pick };
}

/** The line that says how to share an engram kept on the machine instead of routed. */
export function suggestionLine(id: string, s: NonNullable<UnscopedRoute['suggested']>): string {
  return `Kept on this machine: it looks like ${s.scope}'s (${s.reason}). svc rescope ${id} --scope ${s.scope} shares it; route_to_team: true in .svc.yaml routes such learns there`;
}
