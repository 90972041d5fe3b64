import type { Org, Queryable } from '../contracts.js';
import { ident, writeLockSql } from '../data/sql.js';

// Erasing a person's own data when they are deleted (REST, the admin UI, SCIM: all through
// endAccess). What is theirs alone goes: the engrams of their personal scope (user:<name>) with
// their postings, vectors and events, their sessions and episodes, the injection receipts that
// hold their tasks, the answers kept for their idempotency keys, and webhook deliveries not yet
// pruned that carry one of the erased engrams. What stays: the engrams they wrote into shared
// scopes (the team's knowledge, not personal data), their user row without e-mail or SCIM name
// (records name its id), and the audit log, whose chain is signed and append-only: its rows name
// actions, ids and outcomes, never an engram's statement, and it records this erasure with counts.

export interface Erased {
  engrams: number;
  sessions: number;
  episodes: number;
  events: number;
}

export async function erasePersonalData(q: Queryable, org: Pick<Org, 'schema'>, userId: string, userName: string): Promise<Erased> {
  const s = ident(org.schema);
  const scope = `user:${userName}`;
  // Engram writes of the organization take this lock (org-backend/pg-writes.ts): revisions and the
  // scope statistics change in order with theirs.
  await q.query(writeLockSql(org.schema));
  const gone = await q.query<{ id: string; ntok: number }>(`DELETE FROM ${s}.engrams WHERE scope = $1 RETURNING id, ntok`, [scope]);
  const ids = gone.rows.map((r) => r.id);
  if (ids.length > 0) {
    // Postings have no foreign key (migration 017): they go by hand, vectors with them.
    await q.query(`DELETE FROM ${s}.engram_terms WHERE engram_id = ANY($1::text[])`, [ids]);
    await q.query(`DELETE FROM ${s}.engram_vectors WHERE engram_id = ANY($1::text[])`, [ids]);
    const tokens = gone.rows.reduce((sum, r) => sum + Number(r.ntok), 0);
    await q.query(`UPDATE ${s}.fts_scope_stats SET n_rows = n_rows - $2, n_tokens = n_tokens - $3 WHERE scope = $1`, [
      scope,
      ids.length,
      tokens,
    ]);
    await q.query(
      `DELETE FROM ${s}.webhook_deliveries WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS i WHERE body LIKE '%' || i || '%')`,
      [ids],
    );
  }
  const events = await q.query(
    `DELETE FROM ${s}.engram_events WHERE engram_id = ANY($1::text[]) OR (action = 'injected' AND doc->>'owner' = $2) RETURNING 1`,
    [ids, userName],
  );
  const sessions = await q.query(`DELETE FROM ${s}.sessions WHERE owner = $1 OR scope = $2 RETURNING 1`, [userName, scope]);
  const episodes = await q.query(`DELETE FROM ${s}.episodes WHERE owner = $1 OR scope = $2 RETURNING 1`, [userName, scope]);
  await q.query(`DELETE FROM ${s}.idempotency_keys WHERE user_id = $1`, [userId]);
  return { engrams: ids.length, sessions: sessions.rows.length, episodes: episodes.rows.length, events: events.rows.length };
}
