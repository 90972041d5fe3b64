import type { EngramEvent, Episode, EventFilter, Session, TimelineFilter } from '../../engine/model/records.js';
import { queryTerms } from '../../engine/search/fts-query.js';
import { invalid } from '../../engine/errors.js';
import type { AccessPolicy, Queryable } from '../contracts.js';
import { SqlWhere } from '../data/sql-where.js';
import { emitEvents } from '../webhooks/webhook-outbox.js';
import { readableIds, recordScope, scopeClause, type OrgView } from './pg-view.js';

// Episodes, sessions and change events on the hub's PostgreSQL backend: each has an owner and a
// scope, and a reader sees only the records (and the engram ids in them) it may read.

export async function appendEpisodes(view: OrgView, episodes: Episode[]): Promise<void> {
  if (episodes.length === 0) return;
  // The author is the caller, whatever the episode says; its scope one the caller writes.
  const owned = episodes.map((e) => ({ ...e, ...(view.owner ? { owner: view.owner } : {}), scope: recordScope(view, e.scope) }));
  if (view.policy) for (const e of owned) await checkEpisode(view, view.policy, e);
  await view.db.query(
    `INSERT INTO ${view.s}.episodes (id, at, agent, channel, session, summary, owner, scope, doc)
     SELECT x.doc->>'id', (x.doc->>'at')::timestamptz, x.doc->>'agent', x.doc->>'channel', x.doc->>'session', x.doc->>'summary',
            x.doc->>'owner', x.doc->>'scope', x.doc
       FROM jsonb_array_elements($1::jsonb) AS x(doc)
     ON CONFLICT (id) DO NOTHING`,
    [JSON.stringify(owned)],
  );
}

/** An episode goes where its author writes, and names only a session and engrams its author reads. */
async function checkEpisode(view: OrgView, policy: AccessPolicy, e: Episode): Promise<void> {
  policy.episodeWrite(e.scope!);
  if (e.session && !(await getSession(view, e.session)))
    throw invalid(`session: no session ${e.session}`, [`session: no session ${e.session}`]);
  const ids = e.engram_ids ?? [];
  const readable = new Set(await readableIds(view, ids));
  const unknown = ids.filter((id) => !readable.has(id));
  if (unknown.length)
    throw invalid(
      `engram_ids: no engram ${unknown.join(', ')}`,
      unknown.map((id) => `engram_ids: no engram ${id}`),
    );
}

/** An episode or session as its reader may see it: only the engram ids it may read. */
async function forReader<T extends { engram_ids?: string[] }>(view: OrgView, record: T): Promise<T> {
  if (!record.engram_ids?.length) return record;
  return { ...record, engram_ids: await readableIds(view, record.engram_ids) };
}

export async function queryEpisodes(view: OrgView, f: TimelineFilter): Promise<Episode[]> {
  const w = new SqlWhere();
  let rank = '';
  if (f.query) {
    const terms = queryTerms(f.query);
    if (terms.length === 0) return [];
    // PostgreSQL's English stemming over the summaries, any of the query's terms.
    const tsq = `websearch_to_tsquery('english', ${w.param(
      terms
        .map((t) => t.replace(/[^\p{L}\p{N}\s]/gu, ' ').trim())
        .filter(Boolean)
        .join(' or '),
    )})`;
    w.raw(`to_tsvector('english', summary) @@ ${tsq}`);
    rank = `ts_rank(to_tsvector('english', summary), ${tsq}) DESC, `;
  }
  if (f.agent !== undefined) w.add('agent = ?', f.agent);
  if (f.channel !== undefined) w.add('channel = ?', f.channel);
  if (f.session !== undefined) w.add('session = ?', f.session);
  if (f.from) w.add('at >= ?::timestamptz', f.from);
  if (f.to) w.add('at <= ?::timestamptz', f.to);
  const scope = scopeClause(view, 'scope', w.params);
  const r = await view.db.query<{ doc: Episode }>(
    `SELECT doc FROM ${view.s}.episodes WHERE true${w.sql}${scope} ORDER BY ${rank}at DESC, id DESC LIMIT ${w.param(f.limit ?? 20)}`,
    w.params,
  );
  return Promise.all(r.rows.map((x) => forReader(view, x.doc)));
}

export async function getEpisode(view: OrgView, id: string): Promise<Episode | null> {
  const params: unknown[] = [id];
  const scope = scopeClause(view, 'scope', params);
  const doc = (await view.db.query<{ doc: Episode }>(`SELECT doc FROM ${view.s}.episodes WHERE id = $1${scope}`, params)).rows[0]?.doc;
  return doc ? forReader(view, doc) : null;
}

export async function putSession(view: OrgView, session: Session): Promise<void> {
  const stored =
    (await view.db.query<{ doc: Session }>(`SELECT doc FROM ${view.s}.sessions WHERE id = $1`, [session.id])).rows[0]?.doc ?? null;
  // A new session is the caller's; a stored one keeps its owner (and only that owner changes it).
  const owner = stored ? stored.owner : (view.owner ?? session.owner);
  // A reader sees only the engram ids it may read: keep the stored ones it could not see.
  const engram_ids = [...new Set([...(stored?.engram_ids ?? []), ...session.engram_ids])];
  const owned: Session = { ...session, engram_ids, ...(owner ? { owner } : {}), scope: recordScope(view, session.scope ?? stored?.scope) };
  view.policy?.sessionWrite(stored, owned);
  await view.db.transaction(async (q) => {
    const ended = await q.query<{ was_open: boolean | null }>(
      `WITH prior AS (SELECT doc->>'ended_at' IS NULL AS open FROM ${view.s}.sessions WHERE id = $1)
       INSERT INTO ${view.s}.sessions (id, owner, scope, doc, updated_at) VALUES ($1, $2, $3, $4::jsonb, now())
       ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, scope = excluded.scope, updated_at = now()
       RETURNING (SELECT open FROM prior) AS was_open`,
      [owned.id, owned.owner ?? null, owned.scope, JSON.stringify(owned)],
    );
    if (owned.ended_at && ended.rows[0]?.was_open !== false) await emitEvents(q, view.org, [{ type: 'session.ended', data: owned }]);
  });
}

export async function getSession(view: OrgView, id: string): Promise<Session | null> {
  const params: unknown[] = [id];
  const scope = scopeClause(view, 'scope', params);
  const doc = (await view.db.query<{ doc: Session }>(`SELECT doc FROM ${view.s}.sessions WHERE id = $1${scope}`, params)).rows[0]?.doc;
  return doc ? forReader(view, doc) : null;
}

export async function sessionsOf(view: OrgView, owner: string, limit: number): Promise<Session[]> {
  const params: unknown[] = [owner, limit];
  const scope = scopeClause(view, 'scope', params);
  const rows = await view.db.query<{ doc: Session }>(
    `SELECT doc FROM ${view.s}.sessions WHERE owner = $1${scope} ORDER BY doc->>'started_at' DESC, id DESC LIMIT $2`,
    params,
  );
  return Promise.all(rows.rows.map((r) => forReader(view, r.doc)));
}

export async function appendEvents(view: OrgView, events: EngramEvent[]): Promise<void> {
  // An injection receipt holds the caller's task: it is theirs (see Policy.eventVisible).
  await insertEvents(
    view.db,
    view.s,
    view.owner ? events.map((e) => (e.action === 'injected' ? { ...e, owner: view.owner! } : e)) : events,
  );
}

export async function listEvents(view: OrgView, f: EventFilter): Promise<EngramEvent[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.engram_id) {
    params.push(f.engram_id);
    // Injections name their engrams inside the document.
    where.push(`(engram_id = $${params.length} OR (action = 'injected' AND doc->'engram_ids' ? $${params.length}))`);
  }
  if (f.session) {
    params.push(f.session);
    where.push(`session = $${params.length}`);
  }
  if (f.action) {
    params.push(f.action);
    where.push(`action = $${params.length}`);
  }
  if (view.policy) {
    // What the policy shows (Policy.eventVisible), as SQL so that `limit` counts only those.
    params.push([...view.policy.readable], view.policy.userName);
    const scopes = `$${params.length - 1}::text[]`;
    where.push(`(CASE WHEN action = 'injected'
        THEN doc->>'owner' = $${params.length} OR session IN (SELECT id FROM ${view.s}.sessions WHERE scope = ANY (${scopes}))
        ELSE engram_id IN (SELECT id FROM ${view.s}.engrams WHERE scope = ANY (${scopes})) END)`);
  }
  const limit = f.limit ? `LIMIT ${Math.floor(f.limit)}` : '';
  const r = await view.db.query<{ doc: EngramEvent }>(
    `SELECT doc FROM (SELECT doc, at, seq FROM ${view.s}.engram_events WHERE true${where.map((w) => ' AND ' + w).join('')}
      ORDER BY at DESC, seq DESC ${limit}) x ORDER BY at, seq`,
    params,
  );
  if (!view.policy) return r.rows.map((x) => x.doc);
  // An injection shown still names only the engrams the caller may read.
  return Promise.all(
    r.rows.map(async ({ doc }) => {
      const { owner: _owner, ...event } = doc as EngramEvent & { owner?: string };
      return event.engram_ids ? { ...event, engram_ids: await readableIds(view, event.engram_ids) } : event;
    }),
  );
}

async function insertEvents(q: Queryable, s: string, events: EngramEvent[]): Promise<void> {
  if (events.length === 0) return;
  await q.query(
    `INSERT INTO ${s}.engram_events (at, action, engram_id, session, doc)
     SELECT (x.doc->>'at')::timestamptz, x.doc->>'action', x.doc->>'engram_id', x.doc->>'session', x.doc
       FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(doc, n) ORDER BY n`,
    [JSON.stringify(events)],
  );
}
