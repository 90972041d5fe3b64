import type { Database, Org } from '../contracts.js';
import { ident } from './sql.js';

// Engram health for the admin: counts by status, type and scope, feedback totals, live engrams
// never used (no injection, no hit, no feedback) and stale ones (not accessed in 90 days).

export interface Insights {
  engrams: number;
  by_status: Record<string, number>;
  by_type: Record<string, number>;
  by_scope: Record<string, number>;
  feedback: { positive: number; negative: number; neutral: number };
  never_used: number;
  stale: number;
  candidates: number;
}

export async function insights(db: Database, org: Org, now = new Date()): Promise<Insights> {
  const s = ident(org.schema);
  const grouped = async (col: string) =>
    Object.fromEntries(
      (
        await db.query<{ k: string; n: number }>(`SELECT ${col} AS k, count(*)::int AS n FROM ${s}.engrams GROUP BY ${col} ORDER BY ${col}`)
      ).rows.map((r) => [r.k, Number(r.n)]),
    );
  const [by_status, by_type, by_scope] = [await grouped('status'), await grouped('type'), await grouped('scope')];
  const staleBefore = new Date(now.getTime() - 90 * 86_400_000).toISOString();
  const r = (
    await db.query<Record<string, number>>(
      `SELECT count(*)::int AS engrams,
              coalesce(sum((doc->'feedback_signals'->>'positive')::int), 0)::int AS positive,
              coalesce(sum((doc->'feedback_signals'->>'negative')::int), 0)::int AS negative,
              coalesce(sum((doc->'feedback_signals'->>'neutral')::int), 0)::int AS neutral,
              count(*) FILTER (WHERE status <> 'retired' AND coalesce((doc->'usage'->>'injections')::int, 0) = 0
                AND coalesce((doc->'usage'->>'hits')::int, 0) = 0
                AND coalesce((doc->'feedback_signals'->>'positive')::int, 0) + coalesce((doc->'feedback_signals'->>'negative')::int, 0) = 0)::int AS never_used,
              count(*) FILTER (WHERE status <> 'retired' AND coalesce(nullif(doc->'activation'->>'last_accessed', ''), doc->'temporal'->>'learned_at') < $1)::int AS stale,
              count(*) FILTER (WHERE status = 'candidate')::int AS candidates
         FROM ${s}.engrams`,
      [staleBefore],
    )
  ).rows[0]!;
  return {
    engrams: Number(r.engrams),
    by_status,
    by_type,
    by_scope,
    feedback: { positive: Number(r.positive), negative: Number(r.negative), neutral: Number(r.neutral) },
    never_used: Number(r.never_used),
    stale: Number(r.stale),
    candidates: Number(r.candidates),
  };
}
