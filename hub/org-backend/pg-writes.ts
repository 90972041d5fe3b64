import type { EngramWriter } from '../../engine/backend.js';
import type { EventNote } from '../../engine/model/records.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';
import { contentHash } from '../../engine/model/content-hash.js';
import { changeEvent } from '../../engine/model/change-event.js';
import { formatId, idDay, idStem } from '../../engine/model/ids.js';
import { validateEngram } from '../../engine/model/validate-engram.js';
import { invalid } from '../../engine/errors.js';
import type { Queryable } from '../contracts.js';
import { writeLockSql } from '../data/sql.js';
import { documentTerms } from '../../engine/search/fts-tokens.js';
import { outboxSql, type WebhookEvent } from '../webhooks/webhook-outbox.js';
import { getDoc, visible, type OrgView } from './pg-view.js';

// Engram writes on the hub's PostgreSQL backend: one unit of work is one transaction holding
// the organization's advisory write lock, and each engram is written with its postings, scope
// statistics, change event and webhook events in a single statement, deferred where the
// transaction can (a request's goes with its commit).

export async function writeUnit<T>(view: OrgView, fn: (tx: EngramWriter) => Promise<T>): Promise<T> {
  return view.db.transaction(async (q) => {
    // The organization's write lock, taken before the unit's first query and held to the end
    // of the transaction (learn's first query takes it and reads in one round trip). The
    // shorter the span from lock to commit, the more writes an organization takes a second.
    let locked = false;
    const lock = async (): Promise<void> => {
      if (locked) return;
      await q.query(writeLockSql(view.org.schema));
      locked = true;
    };
    // Ids this unit allocated and has not written yet: no engram can have them, so their
    // first put skips reading a prior version (and fails rather than overwrite one).
    const fresh = new Set<string>();
    // Per id stem, the last id taken as this unit knows it (read under the lock, or allocated
    // here), and the counters allocated here and not yet stored: the next put stores them.
    const counters = new Map<string, number>();
    const unstored = new Map<string, number>();
    const takeUnstored = (): Map<string, number> => {
      const taken = new Map(unstored);
      unstored.clear();
      return taken;
    };
    const tx: EngramWriter = {
      get: async (id) => {
        await lock();
        return visible(view, await getDoc(q, view.s, id));
      },
      // Takes the lock (again, if held: it is re-entrant) and reads after it, in one round trip,
      // with the last id of today's stem (what learn allocates next).
      findByHash: async (hash) => {
        const stem = idStem('ENG', view.org.idPrefix, idDay(new Date()));
        const rows = (
          await q.queryPrepared<{ doc: EngramDoc | null; last_id: number | null }>(writeLockSql(view.org.schema), byHashSql(view.s), [
            stem,
            hash,
            view.readable ? [...view.readable] : null,
          ])
        ).rows;
        locked = true;
        if (!counters.has(stem)) counters.set(stem, Number(rows[0]!.last_id));
        return rows.slice(1).map((r) => r.doc!);
      },
      allocateId: async (kind, now) => {
        await lock();
        const day = idDay(now);
        const stem = idStem(kind, view.org.idPrefix, day);
        const known = counters.get(stem);
        let last: number;
        if (known === undefined) {
          const r = await q.query<{ last: number }>(
            `INSERT INTO ${view.s}.id_counters (stem, last) VALUES ($1, 1)
             ON CONFLICT (stem) DO UPDATE SET last = ${view.s}.id_counters.last + 1 RETURNING last`,
            [stem],
          );
          last = Number(r.rows[0]!.last);
        } else {
          last = known + 1;
          unstored.set(stem, last);
        }
        counters.set(stem, last);
        const id = formatId(kind, view.org.idPrefix, day, last);
        fresh.add(id);
        return id;
      },
      put: async (engram, note) => {
        await lock();
        await putEngram(view, q, engram, note, fresh.delete(engram.id), takeUnstored);
      },
    };
    const result = await fn(tx);
    if (unstored.size > 0) {
      // Allocated and not written (a unit may): stored all the same, so no id is handed out twice.
      const params: unknown[] = [];
      await q.query(`WITH ${countersSql(view, takeUnstored(), params)} SELECT 1`, params);
    }
    return result;
  });
}

/**
 * The last id of a stem (first row), then the engrams with a content hash that the caller may
 * read, oldest first. Prepared: planned once per connection, where a function's dynamic SQL
 * was planned on every create, under the organization's write lock.
 */
const byHashSql = (s: string): string =>
  `SELECT doc, last_id FROM (
     SELECT 0 AS k, 0::bigint AS seq, NULL::jsonb AS doc, coalesce((SELECT last FROM ${s}.id_counters WHERE stem = $1), 0) AS last_id
     UNION ALL
     SELECT 1, seq, doc, NULL FROM ${s}.engrams WHERE content_hash = $2 AND ($3::text[] IS NULL OR scope = ANY ($3))) found
   ORDER BY k, seq`;

/** The WITH item storing allocated id counters (never lowering one); its parameters are appended to `params`. */
function countersSql(view: OrgView, allocated: Map<string, number>, params: unknown[]): string {
  params.push([...allocated.keys()], [...allocated.values()]);
  const n = params.length - 1;
  return `counted AS (
       INSERT INTO ${view.s}.id_counters AS c (stem, last) SELECT * FROM unnest($${n}::text[], $${n + 1}::int[])
       ON CONFLICT (stem) DO UPDATE SET last = greatest(c.last, excluded.last))`;
}

/**
 * Writes an engram, its postings, its scope statistics, its change event, its webhook events
 * and the id counters allocated before it in one statement (one round trip while the organization's write lock is held).
 */
async function putEngram(
  view: OrgView,
  q: Queryable,
  engram: EngramDoc,
  note: EventNote | undefined,
  fresh: boolean,
  takeCounters: () => Map<string, number>,
): Promise<void> {
  const check = validateEngram(engram);
  if (!check.ok) throw invalid(`engram ${engram.id} is invalid`, check.errors);
  const prior = fresh
    ? undefined
    : (await q.query<{ doc: EngramDoc; ntok: number }>(`SELECT doc, ntok FROM ${view.s}.engrams WHERE id = $1`, [engram.id])).rows[0];
  const before = prior?.doc ?? null;
  view.policy?.engramWrite(before, engram);
  const { terms, ntok } = documentTerms(engram);
  const hash = engram.content_hash ?? contentHash(engram.statement);
  // The collection statistics of the scope it left and the one it is in, as deltas.
  const stats = new Map<string, { rows: number; tokens: number }>([[engram.scope, { rows: 1, tokens: ntok }]]);
  if (before) {
    const left = stats.get(before.scope) ?? { rows: 0, tokens: 0 };
    stats.set(before.scope, { rows: left.rows - 1, tokens: left.tokens - Number(prior!.ntok) });
  }
  const event = changeEvent(before, engram, note);
  const params: unknown[] = [
    engram.id,
    engram.scope,
    engram.status,
    engram.type,
    engram.domain ?? null,
    hash,
    engram.pinned === true,
    ntok,
    JSON.stringify(engram),
    [...terms.keys()],
    [...terms.values()],
    [...stats.keys()],
    [...stats.values()].map((d) => d.rows),
    [...stats.values()].map((d) => d.tokens),
    JSON.stringify(event ? [event] : []),
  ];
  const counted = countersSql(view, takeCounters(), params);
  const outbox = outboxSql(view.org, [{ type: lifecycleEvent(before, engram), data: engram }], params);
  const s = view.s;
  const upsert = fresh
    ? ''
    : `ON CONFLICT (id) DO UPDATE SET scope = excluded.scope, status = excluded.status, type = excluded.type,
         domain = excluded.domain, content_hash = excluded.content_hash, pinned = excluded.pinned, ntok = excluded.ntok,
         doc = excluded.doc, updated_at = now(), rev = DEFAULT`;
  // The terms it no longer has go; the others are written over (disjoint rows: one statement may do both).
  // Nothing waits for its answer: in a request it goes with the next round trip (request-database.ts).
  const run = q.defer ? q.defer.bind(q) : q.query.bind(q);
  await run(
    `WITH written AS (
       INSERT INTO ${s}.engrams (id, scope, status, type, domain, content_hash, pinned, ntok, doc, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, now()) ${upsert}
       RETURNING id, seq, ntok, status, scope),
     gone AS (DELETE FROM ${s}.engram_terms WHERE engram_id = $1 AND term <> ALL ($10::text[])),
     postings AS (
       INSERT INTO ${s}.engram_terms (term, engram_id, wtf, ntok, live, scope, seq)
       SELECT x.t, e.id, x.w, e.ntok, e.status <> 'retired', e.scope, e.seq FROM unnest($10::text[], $11::float8[]) AS x(t, w), written e
       ON CONFLICT (term, engram_id) DO UPDATE SET wtf = excluded.wtf, ntok = excluded.ntok, live = excluded.live, scope = excluded.scope, seq = excluded.seq),
     stats AS (
       INSERT INTO ${s}.fts_scope_stats AS f (scope, n_rows, n_tokens) SELECT * FROM unnest($12::text[], $13::bigint[], $14::bigint[])
       ON CONFLICT (scope) DO UPDATE SET n_rows = f.n_rows + excluded.n_rows, n_tokens = f.n_tokens + excluded.n_tokens),
     events AS (
       INSERT INTO ${s}.engram_events (at, action, engram_id, session, doc)
       SELECT (x.doc->>'at')::timestamptz, x.doc->>'action', x.doc->>'engram_id', x.doc->>'session', x.doc
         FROM jsonb_array_elements($15::jsonb) AS x(doc)),
     ${counted},
     ${outbox.cte}
     ${outbox.select}`,
    params,
  );
}

/** The webhook event of an engram write: a new one, one retired by it, or any other change. */
function lifecycleEvent(before: EngramDoc | null, after: EngramDoc): WebhookEvent {
  if (!before) return 'engram.created';
  return after.status === 'retired' && before.status !== 'retired' ? 'engram.retired' : 'engram.updated';
}
