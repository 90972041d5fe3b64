import { randomUUID } from 'node:crypto';
import type { Database, Org, Principal } from '../contracts.js';
import { ident } from '../data/sql.js';
import type { McpLimits } from '../config.js';
import { HubProblem, notFoundProblem } from '../http/problem.js';
import { noteRefusal } from '../limits/refusals.js';

// MCP sessions (migrations org/011, org/020): opened by one token and usable only by it (another
// token's call, of the same user or not, gets a 404, like any hidden resource; an OAuth token
// refreshed from the same grant keeps its sessions), closed when idle too long, bounded per
// token and per person. Stored in the database so that every hub process knows every session:
// a request may reach any of them.

export type McpTransportKind = 'sse' | 'http';
export type McpProfile = 'full' | 'lean';

export interface McpSession {
  id: string;
  userId: string;
  tokenId: string;
  transport: McpTransportKind;
  profile: McpProfile;
  clientName: string | null;
  /** The process holding the session's SSE stream. */
  holder: string | null;
}

interface Row {
  id: string;
  user_id: string;
  token_id: string;
  transport: McpTransportKind;
  profile: McpProfile;
  client_name: string | null;
  holder: string | null;
}

const COLUMNS = 'id, user_id, token_id, transport, profile, client_name, holder';

const fromRow = (r: Row): McpSession => ({
  id: r.id,
  userId: r.user_id,
  tokenId: r.token_id,
  transport: r.transport,
  profile: r.profile,
  clientName: r.client_name,
  holder: r.holder,
});

/** Opens a session for the token, within its bounds of open sessions per token and per person (idle ones are closed first). */
export async function openSession(
  db: Database,
  p: Principal,
  opts: { transport: McpTransportKind; profile: McpProfile; clientName?: string; holder?: string; id?: string; limits: McpLimits },
): Promise<McpSession> {
  const s = ident(p.org.schema);
  await db.query(
    `UPDATE ${s}.mcp_sessions SET closed_at = now() WHERE user_id = $1 AND closed_at IS NULL AND last_seen_at < now() - make_interval(secs => $2)`,
    [p.userId, opts.limits.idleSeconds],
  );
  const open = (
    await db.query<{ token: number; person: number }>(
      `SELECT count(*) FILTER (WHERE token_id = $2)::int AS token, count(*)::int AS person FROM ${s}.mcp_sessions WHERE user_id = $1 AND closed_at IS NULL`,
      [p.userId, p.tokenId],
    )
  ).rows[0]!;
  const end = `end one (DELETE /mcp with its Mcp-Session-Id, or close its SSE stream) or let one stay idle ${opts.limits.idleSeconds} s`;
  if (Number(open.token) >= opts.limits.maxSessionsPerToken || Number(open.person) >= opts.limits.maxSessionsPerUser)
    noteRefusal(db, ['mcp-sessions']);
  if (Number(open.token) >= opts.limits.maxSessionsPerToken) {
    throw new HubProblem(
      429,
      'too-many-sessions',
      'Too many MCP sessions',
      `this token holds ${open.token} open MCP sessions, the most it may: ${end}`,
    );
  }
  if (Number(open.person) >= opts.limits.maxSessionsPerUser) {
    throw new HubProblem(
      429,
      'too-many-sessions',
      'Too many MCP sessions',
      `${p.userName} holds ${open.person} open MCP sessions over all their tokens, the most one person may: ${end}`,
    );
  }
  const id = opts.id ?? randomUUID();
  const r = await db.query<Row>(
    `INSERT INTO ${s}.mcp_sessions (id, user_id, token_id, grant_id, transport, profile, client_name, holder) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING ${COLUMNS}`,
    [id, p.userId, p.tokenId, p.grant ?? null, opts.transport, opts.profile, opts.clientName ?? null, opts.holder ?? null],
  );
  return fromRow(r.rows[0]!);
}

/** How stale `last_seen_at` may get before a use refreshes it: concurrent calls of one session must not queue on its row. */
const TOUCH_AFTER_S = 30;
/**
 * A session this process just found open is taken as open for this long without asking the
 * database again (its owner never changes; an end on another process is seen within it).
 */
const RECENT_MS = 2000;
const MAX_RECENT = 10_000;
const recent = new Map<string, { session: McpSession; until: number }>();

/**
 * The caller's open session `id`, marked as used (at most every TOUCH_AFTER_S); 404 when there is
 * none, when another token opened it (of another user or the same one; an OAuth token of the
 * same grant is the same credential), or when it has ended or gone idle.
 */
export async function useSession(db: Database, p: Principal, id: string, limits: McpLimits): Promise<McpSession> {
  const key = `${p.org.id}\n${p.userId}\n${p.tokenId}\n${id}`;
  const hit = recent.get(key);
  if (hit && hit.until > Date.now()) return hit.session;
  const s = ident(p.org.schema);
  const r = await db.query<Row & { stale: boolean }>(
    `SELECT ${COLUMNS}, last_seen_at < now() - make_interval(secs => $4) AS stale
       FROM ${s}.mcp_sessions
      WHERE id = $1 AND user_id = $2 AND (token_id = $5 OR (grant_id IS NOT NULL AND grant_id = $6))
        AND closed_at IS NULL AND last_seen_at >= now() - make_interval(secs => $3)`,
    [id, p.userId, limits.idleSeconds, Math.min(TOUCH_AFTER_S, limits.idleSeconds / 2), p.tokenId, p.grant ?? null],
  );
  const row = r.rows[0];
  if (!row)
    throw notFoundProblem(
      `no open MCP session ${id} for this token: it ended, went idle (${limits.idleSeconds} s) or never existed; start a new one`,
    );
  if (row.stale) await db.query(`UPDATE ${s}.mcp_sessions SET last_seen_at = now() WHERE id = $1`, [id]);
  const session = fromRow(row);
  if (recent.size >= MAX_RECENT) recent.clear();
  recent.set(key, { session, until: Date.now() + RECENT_MS });
  return session;
}

export async function recordClient(db: Database, org: Org, id: string, clientName: string | undefined): Promise<void> {
  if (clientName)
    await db.query(`UPDATE ${ident(org.schema)}.mcp_sessions SET client_name = $2 WHERE id = $1`, [id, clientName.slice(0, 200)]);
}

export async function closeSession(db: Database, org: Org, id: string): Promise<void> {
  for (const key of recent.keys()) if (key.startsWith(`${org.id}\n`) && key.endsWith(`\n${id}`)) recent.delete(key);
  await db.query(`UPDATE ${ident(org.schema)}.mcp_sessions SET closed_at = now() WHERE id = $1 AND closed_at IS NULL`, [id]);
}

/**
 * Of these sessions, those still open and used within the idle limit; the idle ones are closed
 * on the way (their streams end with them: sse-relay.ts).
 */
export async function liveSessions(db: Database, org: Org, ids: string[], idleSeconds: number): Promise<Set<string>> {
  const s = ident(org.schema);
  await db.query(
    `UPDATE ${s}.mcp_sessions SET closed_at = now() WHERE id = ANY($1) AND closed_at IS NULL AND last_seen_at < now() - make_interval(secs => $2)`,
    [ids, idleSeconds],
  );
  const r = await db.query<{ id: string }>(`SELECT id FROM ${s}.mcp_sessions WHERE id = ANY($1) AND closed_at IS NULL`, [ids]);
  return new Set(r.rows.map((x) => x.id));
}
