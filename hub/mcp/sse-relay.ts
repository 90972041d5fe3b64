import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Database, Org } from '../contracts.js';
import { ident } from '../data/sql.js';
import { orgById } from '../data/organizations.js';
import { liveSessions, type McpSession } from './sessions.js';
import { errorFields, type HubLogger } from '../observe/logger.js';

// The SSE transport keeps one stream open on one hub process, while the session's messages may
// reach any process behind the load balancer. Whichever process gets a message runs it, then
// hands the answer to the stream's holder: directly when that is itself, else through the
// database (the answer in mcp_relay, its id in a NOTIFY that the holder listens for). When the
// holder's LISTEN connection was lost (a database restart), it reads its streams' answers from
// the table once it listens again.
// A stream lasts no longer than its session: one whose session ended (DELETE, access ended) or
// went idle is closed at the next sweep, so streams cannot pile up past the session bounds.

/** This process, as sessions name their holder. */
export const PROCESS_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
const CHANNEL = 'svc_mcp_relay';

interface Held {
  transport: SSEServerTransport;
  org: Org;
  idleSeconds: number;
}

/** Longest a stream outlives its session. */
const SWEEP_MAX_MS = 30_000;

export class SseRelay {
  private readonly streams = new Map<string, Held>();
  private stop: (() => Promise<void>) | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(
    private readonly db: Database,
    private readonly log: HubLogger,
  ) {}

  async start(): Promise<void> {
    this.stop = await this.db.listen(
      CHANNEL,
      (payload) =>
        void this.pickUp(payload).catch((err: Error) =>
          this.log.warn({ event: 'mcp.relay_failed', ...errorFields(err) }, `MCP relay: ${err.message}`),
        ),
      () =>
        void this.catchUp().catch((err: Error) =>
          this.log.warn({ event: 'mcp.relay_failed', ...errorFields(err) }, `MCP relay: ${err.message}`),
        ),
    );
  }

  /** After a lost LISTEN connection: the answers relayed to this process's streams meanwhile. */
  private async catchUp(): Promise<void> {
    const byOrg = new Map<string, { org: Org; ids: string[] }>();
    for (const [id, h] of this.streams) {
      const g = byOrg.get(h.org.id) ?? { org: h.org, ids: [] };
      g.ids.push(id);
      byOrg.set(h.org.id, g);
    }
    for (const { org, ids } of byOrg.values()) {
      const rows = await this.db.query<{ id: string; session_id: string; message: JSONRPCMessage }>(
        `DELETE FROM ${ident(org.schema)}.mcp_relay WHERE session_id = ANY ($1::text[]) RETURNING id, session_id, message`,
        [ids],
      );
      // In the order they were relayed.
      for (const row of rows.rows.sort((a, b) => Number(a.id) - Number(b.id)))
        await this.streams.get(row.session_id)?.transport.send(row.message);
    }
  }

  hold(sessionId: string, transport: SSEServerTransport, org: Org, idleSeconds: number): void {
    this.streams.set(sessionId, { transport, org, idleSeconds });
    const every = Math.min(SWEEP_MAX_MS, (idleSeconds * 1000) / 2);
    if (!this.sweeper) {
      this.sweeper = setInterval(
        () =>
          void this.sweep().catch((err: Error) =>
            this.log.warn({ event: 'mcp.sweep_failed', ...errorFields(err) }, `MCP streams: ${err.message}`),
          ),
        every,
      );
      this.sweeper.unref();
    }
  }

  /** SSE streams this process holds open. */
  get open(): number {
    return this.streams.size;
  }

  release(sessionId: string): void {
    this.streams.delete(sessionId);
    if (this.streams.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  /** Closes the streams whose session has ended or gone idle. */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const byOrg = new Map<string, { org: Org; idleSeconds: number; ids: string[] }>();
      for (const [id, h] of this.streams) {
        const g = byOrg.get(h.org.id) ?? { org: h.org, idleSeconds: h.idleSeconds, ids: [] };
        g.ids.push(id);
        byOrg.set(h.org.id, g);
      }
      for (const { org, idleSeconds, ids } of byOrg.values()) {
        const live = await liveSessions(this.db, org, ids, idleSeconds);
        for (const id of ids) {
          if (live.has(id)) continue;
          const held = this.streams.get(id);
          this.release(id);
          await held?.transport.close().catch(() => undefined);
        }
      }
    } finally {
      this.sweeping = false;
    }
  }

  /** Sends the answer down the session's stream, wherever it is held. */
  async deliver(org: Org, session: McpSession, message: JSONRPCMessage): Promise<void> {
    const local = this.streams.get(session.id);
    if (local) return local.transport.send(message);
    const s = ident(org.schema);
    const row = (
      await this.db.query<{ id: string }>(`INSERT INTO ${s}.mcp_relay (session_id, message) VALUES ($1, $2::jsonb) RETURNING id`, [
        session.id,
        JSON.stringify(message),
      ])
    ).rows[0]!;
    await this.db.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ holder: session.holder, org: org.id, id: row.id })]);
  }

  private async pickUp(payload: string): Promise<void> {
    const note = JSON.parse(payload) as { holder?: string; org?: string; id?: string };
    if (note.holder !== PROCESS_ID || !note.org || !note.id) return;
    const org = await orgById(this.db, note.org);
    if (!org) return;
    const row = (
      await this.db.query<{ session_id: string; message: JSONRPCMessage }>(
        `DELETE FROM ${ident(org.schema)}.mcp_relay WHERE id = $1 RETURNING session_id, message`,
        [note.id],
      )
    ).rows[0];
    if (row) await this.streams.get(row.session_id)?.transport.send(row.message);
  }

  async close(): Promise<void> {
    await this.stop?.();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const h of this.streams.values()) await h.transport.close().catch(() => undefined);
    this.streams.clear();
  }
}
