import type { Database, Org, Role } from '../contracts.js';
import { Policy } from '../access/policy.js';
import { resolveScopes } from '../access/scopes.js';
import { currentEpoch } from '../access/epoch.js';
import { appendAudit } from '../audit/audit-log.js';
import { ident } from '../data/sql.js';
import { errorFields, type HubLogger } from '../observe/logger.js';
import { PLAIN_BOX, type SecretBox } from '../data/secret-box.js';
import { listOrgs } from '../data/organizations.js';
import { postOutbound, type OutboundPolicy } from '../net/outbound.js';
import { WEBHOOK_CHANNEL } from './webhook-outbox.js';
import { deliveryHeaders } from './signature.js';

// Every hub process runs one worker. It claims due deliveries of an organization with FOR UPDATE
// SKIP LOCKED and a lease (locked_until), sends them, and records the outcome: two processes
// never send one delivery at once, and a process killed mid-send leaves a lease that runs out,
// so the delivery is sent again (at least once; receivers drop duplicates by event id).
//
// A receiver's slowness delays only its own deliveries: each send runs on its own (no batch
// waits for its slowest), a webhook has at most PER_WEBHOOK sends in flight in this process (a
// webhook at its bound is not claimed from), the process at most IN_FLIGHT, and organizations
// take turns, each claiming at most TURN per turn. A finished send wakes the worker. A failed
// attempt waits an exponentially growing, jittered delay. When a delivery has used every
// attempt: if the webhook has had no success since that event, the receiver is down and the
// webhook is disabled (audited; its pending deliveries wait for an admin to re-enable it);
// otherwise the receiver refuses this one payload, and only that delivery is given up.
//
// A delivery carries only what the webhook's creator may read when it is sent (see `withheld`).
//
// NOTIFY on WEBHOOK_CHANNEL (sent when a change that queued deliveries commits) wakes the worker
// at once; a poll every `pollMs` picks up retries that came due. Times come from `clock`, so
// tests can move it.

export interface WebhookSettings {
  /** One attempt's deadline. */
  timeoutMs: number;
  /** Attempts per delivery before it counts as failed for good. */
  maxAttempts: number;
  /** Delay after the first failed attempt; it doubles after each, up to retryCapMs. */
  retryBaseMs: number;
  retryCapMs: number;
  /** How often due retries are looked for. */
  pollMs: number;
  /** Opens the webhooks' secrets, sealed at rest under SVC_HUB_SECRET_KEY (absent: stored as given). */
  secrets?: SecretBox;
}

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = {
  timeoutMs: 10_000,
  maxAttempts: 12,
  retryBaseMs: 10_000,
  retryCapMs: 3_600_000,
  pollMs: 2_000,
};

/** Sends in flight in one process, all webhooks together. */
const IN_FLIGHT = 32;
/** Sends in flight for one webhook in one process. */
const PER_WEBHOOK = 2;
/** Deliveries an organization claims per turn. */
const TURN = 8;
/** Due rows looked at per claim (a webhook at its bound is skipped before this). */
const SCAN = 200;
/** Webhook creators' policies held (all organizations): past it, they are resolved anew. */
const MAX_CREATORS = 10_000;
/** What a receiver may answer with; its body is not used. */
export const RECEIVER_ANSWER_BYTES = 1024 * 1024;
/** Delivered and given-up rows are kept this long for the deliveries view, then pruned. */
const KEEP_MS = 7 * 24 * 3600_000;

/** The wait after the `attempts`-th failure: half the backoff step fixed, half random (equal jitter). */
export function retryDelay(attempts: number, s: WebhookSettings, random: () => number = Math.random): number {
  const step = Math.min(s.retryCapMs, s.retryBaseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(step / 2 + (random() * step) / 2);
}

export interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  latencyMs: number;
  error: string | null;
}

/** Sends one delivery, once. */
export async function attempt(
  url: string,
  secret: string,
  event: { id: string; type: string },
  body: string,
  sentAt: Date,
  policy: OutboundPolicy,
): Promise<AttemptOutcome> {
  const started = performance.now();
  try {
    const status = await postOutbound(url, body, deliveryHeaders(secret, event, body, sentAt), policy);
    const latencyMs = Math.round(performance.now() - started);
    return status >= 200 && status < 300
      ? { ok: true, status, latencyMs, error: null }
      : { ok: false, status, latencyMs, error: `the receiver answered ${status}` };
  } catch (err) {
    return { ok: false, status: null, latencyMs: Math.round(performance.now() - started), error: (err as Error).message.slice(0, 500) };
  }
}

interface Claimed {
  id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  body: string;
  attempts: number;
  created_at: Date | string;
  url: string;
  secret: string;
  created_by: string;
}

/** The policy of a webhook's creator as the database stands; null when that person's access has ended. */
async function resolveCreator(db: Database, org: Org, name: string): Promise<Policy | null> {
  const user = (
    await db.query<{ id: string; name: string; role: Role; active: boolean }>(
      `SELECT id, name, role, active FROM ${ident(org.schema)}.users WHERE name = $1`,
      [name],
    )
  ).rows[0];
  if (!user?.active) return null;
  const scopes = await resolveScopes(db, org, user);
  return new Policy({ userName: user.name, role: user.role, ...scopes });
}

/**
 * Why a delivery may not go out: a delivery carries only what the webhook's creator may read at
 * delivery time (an engram or a session by its scope; audit entries to an admin), so a webhook
 * never shows what REST would hide from the person who made it.
 */
export function withheld(d: Pick<Claimed, 'event' | 'body' | 'created_by'>, reader: Policy | null): string | null {
  if (!reader) return `${d.created_by}, who made this webhook, has no access any more`;
  if (d.event === 'audit.entry') return reader.caller.role === 'admin' ? null : `${d.created_by} is no admin any more`;
  const data = (JSON.parse(d.body) as { data?: { scope?: unknown } }).data;
  const scope = typeof data?.scope === 'string' ? data.scope : undefined;
  if (scope === undefined || reader.mayRead(scope)) return null;
  return `${d.created_by} may not read scope "${scope}"`;
}

export interface WorkerDeps {
  db: Database;
  outbound: OutboundPolicy;
  settings: WebhookSettings;
  auditKey: string;
  log: HubLogger;
  clock?: () => number;
}

/** What the worker tells the metrics: a delivery made (lag: from its event to its delivery), an attempt failed, a webhook disabled. */
export type DeliveryEvent = { kind: 'delivered'; lagMs: number; latencyMs: number } | { kind: 'failed-attempt' } | { kind: 'disabled' };

export class DeliveryWorker {
  /** Told of each delivery outcome in this process (the metrics set it). */
  observer: ((e: DeliveryEvent) => void) | undefined;
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private orgs = new Map<string, Org>();
  /** Schemas to look at (or every organization), and the pass working on them. */
  private wanted = new Set<string>();
  private wantAll = false;
  private pass: Promise<void> | null = null;
  private closed = false;
  private lastPrune = 0;
  /** Sends in flight, by `<schema> <webhook id>`. */
  private readonly inFlight = new Map<string, number>();
  private readonly sending = new Set<Promise<void>>();
  /** Webhook creators' policies by `<schema> <name>`, with the epoch they were resolved at. */
  private readonly creators = new Map<string, { epoch: number; policy: Policy | null }>();

  constructor(private readonly deps: WorkerDeps) {
    this.clock = deps.clock ?? Date.now;
  }

  async start(): Promise<void> {
    // After a lost connection, what was notified meanwhile is read from the table: every organization is looked at.
    this.unlisten = await this.deps.db.listen(
      WEBHOOK_CHANNEL,
      (schema) => this.wake(schema),
      () => this.wake(null),
    );
    this.timer = setInterval(() => this.wake(null), this.deps.settings.pollMs);
    this.timer.unref();
    this.wake(null);
  }

  /** Looks for due deliveries now: of one organization (by schema) or, with null, of all. */
  wake(schema: string | null): void {
    if (this.closed) return;
    if (schema === null) this.wantAll = true;
    else this.wanted.add(schema);
    this.pass ??= this.drain().finally(() => {
      this.pass = null;
    });
  }

  /** Resolves when nothing is being sent (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.pass || this.sending.size > 0) {
      if (this.pass) await this.pass;
      else await Promise.all([...this.sending]);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.unlisten?.();
    await this.idle();
  }

  private async drain(): Promise<void> {
    while (!this.closed && (this.wantAll || this.wanted.size > 0)) {
      const all = this.wantAll;
      const schemas = [...this.wanted];
      this.wantAll = false;
      this.wanted.clear();
      try {
        if (all || schemas.some((s) => !this.orgs.has(s))) this.orgs = new Map((await listOrgs(this.deps.db)).map((o) => [o.schema, o]));
        const orgs = all ? [...this.orgs.values()] : schemas.map((s) => this.orgs.get(s)).filter((o): o is Org => o !== undefined);
        await this.takeTurns(orgs);
        if (all && this.clock() - this.lastPrune > 3600_000) {
          this.lastPrune = this.clock();
          for (const org of orgs) await this.prune(org);
        }
      } catch (err) {
        // The database went away for a moment, say: the next poll tries again.
        this.deps.log.warn(
          { event: 'webhook.poll_failed', ...errorFields(err) },
          `webhook deliveries: ${(err as Error).message.split('\n')[0]}`,
        );
      }
    }
  }

  /**
   * Organizations take turns claiming (each at most TURN a turn) until none has anything it may
   * claim or the process is at IN_FLIGHT; sends start at once and are not waited for here.
   */
  private async takeTurns(orgs: Org[]): Promise<void> {
    let claimedAny = true;
    while (claimedAny && !this.closed && this.running() < IN_FLIGHT) {
      claimedAny = false;
      for (const org of orgs) {
        const free = IN_FLIGHT - this.running();
        if (free <= 0 || this.closed) return;
        const claimed = await this.claim(org, Math.min(free, TURN));
        if (claimed.length === 0) continue;
        claimedAny = true;
        const readers = new Map<string, Promise<Policy | null>>();
        const readerOf = (name: string) => readers.get(name) ?? readers.set(name, this.creatorPolicy(org, name)).get(name)!;
        for (const d of claimed) this.launch(org, d, readerOf);
      }
    }
  }

  private running(): number {
    return this.sending.size;
  }

  /** Sends in flight in this process. */
  get inFlightCount(): number {
    return this.sending.size;
  }

  /** Sends one delivery on its own; when it ends, its slot frees and the worker looks again. */
  private launch(org: Org, d: Claimed, readerOf: (name: string) => Promise<Policy | null>): void {
    const key = `${org.schema} ${d.webhook_id}`;
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    const run = (async () => {
      const why = withheld(d, await readerOf(d.created_by));
      await (why ? this.withhold(org, d, why) : this.send(org, d));
    })()
      .catch((err: Error) =>
        this.deps.log.warn(
          { event: 'webhook.delivery_failed', org: org.slug, webhook: d.webhook_id, delivery: d.id, ...errorFields(err) },
          `webhook delivery ${d.id} of ${org.slug}: ${err.message.split('\n')[0]}`,
        ),
      )
      .finally(() => {
        const left = (this.inFlight.get(key) ?? 1) - 1;
        if (left > 0) this.inFlight.set(key, left);
        else this.inFlight.delete(key);
        this.sending.delete(run);
        this.wake(org.schema);
      });
    this.sending.add(run);
  }

  /**
   * The policy of a webhook's creator as of now (null when their access has ended): resolved
   * again only when the organization's authorization epoch has moved, which every change to
   * people, roles, memberships, groups and packs does (a read of the epoch instead of four).
   */
  private async creatorPolicy(org: Org, name: string): Promise<Policy | null> {
    const epoch = await currentEpoch(this.deps.db, org);
    const key = `${org.schema} ${name}`;
    const held = this.creators.get(key);
    if (held?.epoch === epoch) return held.policy;
    // Resolved after the epoch was read: a change in between is seen now, and again next time.
    const policy = await resolveCreator(this.deps.db, org, name);
    if (this.creators.size >= MAX_CREATORS) this.creators.clear();
    this.creators.set(key, { epoch, policy });
    return policy;
  }

  /** A delivery its webhook's creator may not read now: never sent, marked so in the deliveries view. */
  private async withhold(org: Org, d: Claimed, why: string): Promise<void> {
    const now = new Date(this.clock());
    await this.deps.db.query(
      `UPDATE ${ident(org.schema)}.webhook_deliveries SET locked_until = NULL, failed_at = $2, last_error = $3 WHERE id = $1`,
      [d.id, now, `withheld: ${why}`],
    );
  }

  /**
   * Leases at most `limit` due deliveries of an organization, at most PER_WEBHOOK in flight per
   * webhook in this process (counting those already sending), oldest first within a webhook.
   */
  private async claim(org: Org, limit: number): Promise<Claimed[]> {
    const s = ident(org.schema);
    const now = new Date(this.clock());
    const lease = new Date(this.clock() + 2 * this.deps.settings.timeoutMs + 5_000);
    const busy: Record<string, number> = {};
    for (const [key, n] of this.inFlight) if (key.startsWith(`${org.schema} `)) busy[key.slice(org.schema.length + 1)] = n;
    const full = Object.keys(busy).filter((id) => busy[id]! >= PER_WEBHOOK);
    return (
      await this.deps.db.query<Claimed>(
        `WITH candidates AS (
           SELECT x.id, x.webhook_id FROM ${s}.webhook_deliveries x JOIN ${s}.webhooks y ON y.id = x.webhook_id
            WHERE x.delivered_at IS NULL AND x.failed_at IS NULL AND y.state = 'active'
              AND x.next_at <= $1 AND (x.locked_until IS NULL OR x.locked_until <= $1) AND x.webhook_id <> ALL ($4::text[])
            ORDER BY x.id LIMIT ${SCAN} FOR UPDATE OF x SKIP LOCKED),
         ranked AS (SELECT id, webhook_id, row_number() OVER (PARTITION BY webhook_id ORDER BY id) AS n FROM candidates),
         due AS (SELECT id FROM ranked WHERE n <= ${PER_WEBHOOK} - coalesce(($5::jsonb ->> webhook_id)::int, 0) ORDER BY id LIMIT $3)
         UPDATE ${s}.webhook_deliveries d SET locked_until = $2, attempts = d.attempts + 1
           FROM due, ${s}.webhooks w
          WHERE d.id = due.id AND w.id = d.webhook_id
          RETURNING d.id::text AS id, d.webhook_id, d.event_id, d.event, d.body, d.attempts, d.created_at, w.url, w.secret, w.created_by`,
        [now, lease, limit, full, JSON.stringify(busy)],
      )
    ).rows;
  }

  private async send(org: Org, d: Claimed): Promise<void> {
    const { db, settings } = this.deps;
    const s = ident(org.schema);
    // The secret is opened where it signs. The signed send time is the wall clock's: receivers hold it against theirs.
    const secret = (settings.secrets ?? PLAIN_BOX).open(d.secret);
    const out = await attempt(d.url, secret, { id: d.event_id, type: d.event }, d.body, new Date(), {
      ...this.deps.outbound,
      timeoutMs: settings.timeoutMs,
      maxBytes: RECEIVER_ANSWER_BYTES,
    });
    const now = new Date(this.clock());
    const result = [d.id, out.status, out.error, out.latencyMs];
    if (out.ok) {
      await db.query(
        `WITH done AS (UPDATE ${s}.webhook_deliveries SET delivered_at = $5, last_status = $2, last_error = $3, latency_ms = $4, locked_until = NULL WHERE id = $1 RETURNING webhook_id)
         UPDATE ${s}.webhooks SET last_success_at = $5 WHERE id IN (SELECT webhook_id FROM done)`,
        [...result, now],
      );
      this.observer?.({
        kind: 'delivered',
        lagMs: Math.max(0, now.getTime() - new Date(d.created_at).getTime()),
        latencyMs: out.latencyMs,
      });
      return;
    }
    this.observer?.({ kind: 'failed-attempt' });
    if (d.attempts < settings.maxAttempts) {
      const next = new Date(this.clock() + retryDelay(d.attempts, settings));
      await db.query(
        `UPDATE ${s}.webhook_deliveries SET next_at = $5, locked_until = NULL, last_status = $2, last_error = $3, latency_ms = $4 WHERE id = $1`,
        [...result, next],
      );
      this.deps.log.info({
        event: 'webhook.retry',
        org: org.slug,
        webhook: d.webhook_id,
        delivery: d.id,
        attempt: d.attempts,
        status: out.status,
        error: out.error,
        next_at: next.toISOString(),
      });
      return;
    }
    await this.exhausted(org, d, out, now);
  }

  /** A delivery used its last attempt: disable a receiver that is down, or give up one payload. */
  private async exhausted(org: Org, d: Claimed, out: AttemptOutcome, now: Date): Promise<void> {
    const s = ident(org.schema);
    await this.deps.db.transaction(async (q) => {
      const hook = (
        await q.query<{ state: string; last_success_at: Date | null }>(
          `SELECT state, last_success_at FROM ${s}.webhooks WHERE id = $1 FOR UPDATE`,
          [d.webhook_id],
        )
      ).rows[0];
      const down = hook !== undefined && (hook.last_success_at === null || new Date(hook.last_success_at) < new Date(d.created_at));
      await q.query(
        `UPDATE ${s}.webhook_deliveries SET locked_until = NULL, last_status = $2, last_error = $3, latency_ms = $4, next_at = $5, failed_at = $6 WHERE id = $1`,
        [d.id, out.status, out.error, out.latencyMs, now, down ? null : now],
      );
      if (!down || hook.state !== 'active') return;
      const reason = `${d.attempts} attempts to deliver ${d.event} ${d.event_id} failed since ${new Date(d.created_at).toISOString()} and nothing was delivered since; last: ${out.error}`;
      await q.query(`UPDATE ${s}.webhooks SET state = 'disabled', disabled_reason = $2 WHERE id = $1`, [d.webhook_id, reason]);
      await appendAudit(q, org, this.deps.auditKey, [
        {
          at: now.toISOString(),
          actor: 'svc-hub',
          token_id: null,
          action: 'webhook.disabled',
          resource: `webhook:${d.webhook_id}`,
          outcome: 0,
          details: { reason },
        },
      ]);
      this.deps.log.warn(
        { event: 'webhook.disabled', org: org.slug, webhook: d.webhook_id, attempts: d.attempts, reason },
        `webhook ${d.webhook_id} of ${org.slug} disabled: ${reason}`,
      );
      this.observer?.({ kind: 'disabled' });
    });
  }

  private async prune(org: Org): Promise<void> {
    const before = new Date(this.clock() - KEEP_MS);
    await this.deps.db.query(`DELETE FROM ${ident(org.schema)}.webhook_deliveries WHERE delivered_at < $1 OR failed_at < $1`, [before]);
  }
}
