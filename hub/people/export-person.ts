import type { Database, Principal } from '../contracts.js';
import { listApiKeys, getUser } from '../access/identity.js';
import { ident } from '../data/sql.js';
import { listGrants } from '../login/grant-routes.js';

// Everything the hub holds about the caller, as one document (GET /api/v1/me/export): their
// account and groups, the engrams of their personal scope in every status, the sessions and
// episodes they own, the injection receipts that hold their tasks, their API keys' metadata (never
// a secret: the hub keeps only hashes) and their OAuth grants. Engrams they wrote into shared
// scopes belong to the team and are exported with packs, not here.

export const EXPORT_FORMAT = 'svc-person-export/1';

export async function exportPerson(db: Database, p: Principal): Promise<Record<string, unknown>> {
  const s = ident(p.org.schema);
  const scope = `user:${p.userName}`;
  const [user, groups, engrams, sessions, episodes, receipts, keys, grants] = await Promise.all([
    getUser(db, p.org, p.userId),
    db.query<{ path: string }>(
      `SELECT g.path FROM ${s}.memberships m JOIN ${s}.groups g ON g.id = m.group_id WHERE m.user_id = $1 ORDER BY g.path`,
      [p.userId],
    ),
    db.query<{ doc: unknown }>(`SELECT doc FROM ${s}.engrams WHERE scope = $1 ORDER BY seq`, [scope]),
    db.query<{ doc: unknown }>(`SELECT doc FROM ${s}.sessions WHERE owner = $1 ORDER BY id`, [p.userName]),
    db.query<{ doc: unknown }>(`SELECT doc FROM ${s}.episodes WHERE owner = $1 ORDER BY at, id`, [p.userName]),
    db.query<{ doc: Record<string, unknown> }>(
      `SELECT doc FROM ${s}.engram_events WHERE action = 'injected' AND doc->>'owner' = $1 ORDER BY at, seq`,
      [p.userName],
    ),
    listApiKeys(db, p.org, { limit: 10_000, userId: p.userId }),
    listGrants(db, p.org, p.userId),
  ]);
  return {
    format: EXPORT_FORMAT,
    exported_at: new Date().toISOString(),
    organization: p.org.slug,
    user: { ...user, groups: groups.rows.map((g) => g.path) },
    scope,
    engrams: engrams.rows.map((r) => r.doc),
    sessions: sessions.rows.map((r) => r.doc),
    episodes: episodes.rows.map((r) => r.doc),
    injections: receipts.rows.map(({ doc: { owner: _owner, ...receipt } }) => receipt),
    api_keys: keys,
    oauth_grants: grants,
  };
}
