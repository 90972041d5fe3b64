import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware, ParameterizedContext } from 'koa';
import type Router from '@koa/router';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../contracts.js';
import { invalid } from '../../engine/errors.js';
import { HubProblem } from '../http/problem.js';
import { routeLabel } from '../observe/request-log.js';
import { poolStats } from '../data/database.js';
import { postingsCacheOf } from '../data/postings-cache.js';
import { listOrgs } from '../data/organizations.js';
import { ident } from '../data/sql.js';
import type { AuditWriter } from '../audit/audit-log.js';
import { onRefusal } from '../limits/refusals.js';
import type { FailedAuthGuard } from '../limits/failed-auth.js';
import type { DeliveryEvent, DeliveryWorker } from '../webhooks/delivery-worker.js';

// The hub's metrics in the Prometheus text format, at GET /metrics behind a bearer token of their
// own (SVC_HUB_METRICS_TOKEN; without it /metrics is a 404: nothing is exposed). One registry per
// hub, never prom-client's global one, so several hubs in one process (tests) keep theirs apart.
//
// Counters and histograms move where things happen: each request (one middleware at the top of
// the app, labelled by the route template, never the raw path), each refusal of a rate limit
// (limits/refusals.ts), each webhook delivery. Gauges are read when scraped: the database pool,
// the audit writer's queue, the postings cache, SSE streams, and (one query per organization,
// bounded in time) the webhook backlog and open MCP sessions, which are the database's and so
// the same on every process.

/** What the metrics read but do not own. */
export interface MetricSources {
  db: Database;
  audit: AuditWriter;
  /** An MCP session unused this long is closed (counted as open until then). */
  mcpIdleSeconds: number;
}

/** What the app builds after its first middleware: given to attach(). */
export interface LateSources {
  webhooks: DeliveryWorker;
  /** SSE streams this process holds. */
  sseStreams: () => number;
}

export interface MetricsOptions {
  /** The bearer token a scraper sends; absent: /metrics answers 404. */
  token?: string;
  /** Longest the database-backed gauges may take on a scrape (default 2 s). */
  databaseTimeoutMs?: number;
}

/** SVC_HUB_METRICS_TOKEN: absent or empty means metrics off; a short one is refused. */
export function metricsToken(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.SVC_HUB_METRICS_TOKEN;
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 16 || /\s/.test(raw))
    throw invalid('SVC_HUB_METRICS_TOKEN must be at least 16 characters without spaces (e.g. openssl rand -hex 32)');
  return raw;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LAG_BUCKETS = [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400, 86400];

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export class HubMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly latency: Histogram<'method' | 'route'>;
  private readonly tokenDigest: Buffer | undefined;
  private readonly unsubscribe: () => void;
  private late: LateSources | undefined;
  private readonly onDelivery: (e: DeliveryEvent) => void;

  constructor(
    private readonly sources: MetricSources,
    opts: MetricsOptions = {},
  ) {
    const registers = [this.registry];
    this.tokenDigest = opts.token ? digest(opts.token) : undefined;
    // Process memory, CPU, event-loop lag, GC: only when someone may read them (the lag monitor costs a little).
    if (opts.token) collectDefaultMetrics({ register: this.registry });

    this.requests = new Counter({
      name: 'svc_hub_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.latency = new Histogram({
      name: 'svc_hub_http_request_duration_seconds',
      help: 'Time to answer an HTTP request (to the end of the handler), by method and route template',
      labelNames: ['method', 'route'],
      buckets: LATENCY_BUCKETS,
      registers,
    });

    // The database pool.
    const pool = (name: string, help: string, pick: (s: NonNullable<ReturnType<typeof poolStats>>) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const s = poolStats(sources.db);
          if (s) this.set(pick(s));
        },
      });
    pool('svc_hub_db_pool_size', 'Connections the database pool may open (PGlite: 1)', (s) => s.size);
    pool('svc_hub_db_pool_open', 'Connections the database pool has open', (s) => s.open);
    pool('svc_hub_db_pool_in_use', 'Connections of the pool in use', (s) => s.inUse);
    pool('svc_hub_db_pool_waiting', 'Callers waiting for a connection of the pool', (s) => s.waiting);

    // The audit writer.
    const audit = () => sources.audit.stats();
    new Gauge({
      name: 'svc_hub_audit_queue_rows',
      help: 'Audit rows queued, not yet written',
      registers,
      collect() {
        this.set(audit().pending);
      },
    });
    new Gauge({
      name: 'svc_hub_audit_queue_capacity_rows',
      help: 'Audit rows the queue holds at most (past it rows are lost and recorded as a gap)',
      registers,
      collect() {
        this.set(audit().maxQueue);
      },
    });
    mirrorCounter(
      registers,
      'svc_hub_audit_lost_rows_total',
      'Audit rows lost (queue full, unstorable, unwritten at stop): each is recorded in a gap marker',
      () => audit().lostRows,
    );
    mirrorCounter(registers, 'svc_hub_audit_write_failures_total', 'Audit batch writes that failed (retried)', () => audit().failedWrites);
    new Gauge({
      name: 'svc_hub_audit_writer_up',
      help: '1 while the audit writer runs and its writes succeed',
      registers,
      collect() {
        const s = audit();
        this.set(s.closed || s.failing ? 0 : 1);
      },
    });

    // Webhooks: what this process sends, as it happens.
    const deliveries = new Counter({
      name: 'svc_hub_webhook_deliveries_total',
      help: 'Webhook delivery attempts by this process, by outcome (delivered, failed)',
      labelNames: ['outcome'],
      registers,
    });
    const disables = new Counter({
      name: 'svc_hub_webhook_disables_total',
      help: 'Webhooks this process disabled (every attempt of a delivery failed, nothing delivered since)',
      registers,
    });
    const lag = new Histogram({
      name: 'svc_hub_webhook_delivery_lag_seconds',
      help: 'From the event to its delivery, for deliveries made by this process',
      buckets: LAG_BUCKETS,
      registers,
    });
    deliveries.inc({ outcome: 'delivered' }, 0);
    deliveries.inc({ outcome: 'failed' }, 0);
    this.onDelivery = (e) => {
      if (e.kind === 'delivered') {
        deliveries.inc({ outcome: 'delivered' });
        lag.observe(e.lagMs / 1000);
      } else if (e.kind === 'failed-attempt') deliveries.inc({ outcome: 'failed' });
      else disables.inc();
    };
    const sendsInFlight: Gauge = new Gauge({
      name: 'svc_hub_webhook_sends_in_flight',
      help: 'Webhook sends in flight in this process',
      registers,
      collect: () => {
        sendsInFlight.set(this.late?.webhooks.inFlightCount ?? 0);
      },
    });

    // MCP.
    const streams: Gauge = new Gauge({
      name: 'svc_hub_mcp_sse_streams_open',
      help: 'MCP SSE streams this process holds open',
      registers,
      collect: () => {
        streams.set(this.late?.sseStreams() ?? 0);
      },
    });

    // Rate limits.
    const refusals = new Counter({
      name: 'svc_hub_rate_limit_refusals_total',
      help: 'Requests refused by a limit, by policy (requests, writes, mcp-messages, ingest, auth-failures, sign-in-starts, mcp-sessions)',
      labelNames: ['policy'],
      registers,
    });
    this.unsubscribe = onRefusal(sources.db, (policy) => refusals.inc({ policy }));

    // The postings cache.
    const cache = () => postingsCacheOf(sources.db)?.stats();
    new Gauge({
      name: 'svc_hub_postings_cache_engrams',
      help: 'Engrams whose postings this process holds in memory',
      registers,
      collect() {
        this.set(cache()?.engrams ?? 0);
      },
    });
    new Gauge({
      name: 'svc_hub_postings_cache_capacity_engrams',
      help: 'Engrams the postings cache may hold (SVC_HUB_CACHE_ENGRAMS; 0: off)',
      registers,
      collect() {
        this.set(cache()?.maxEngrams ?? 0);
      },
    });
    new Gauge({
      name: 'svc_hub_postings_cache_organizations',
      help: 'Organizations whose postings this process holds',
      registers,
      collect() {
        this.set(cache()?.orgs ?? 0);
      },
    });
    const lookups = new Counter({
      name: 'svc_hub_postings_cache_lookups_total',
      help: 'Searches served by the postings cache: hit (held as is), miss (read what changed first), bypass (organization too large)',
      labelNames: ['result'],
      registers,
    });
    const seen = { hits: 0, misses: 0, bypassed: 0 };
    lookups.inc({ result: 'hit' }, 0);
    lookups.inc({ result: 'miss' }, 0);
    lookups.inc({ result: 'bypass' }, 0);
    const syncLookups = () => {
      const s = cache();
      if (!s) return;
      lookups.inc({ result: 'hit' }, s.hits - seen.hits);
      lookups.inc({ result: 'miss' }, s.misses - seen.misses);
      lookups.inc({ result: 'bypass' }, s.bypassed - seen.bypassed);
      Object.assign(seen, { hits: s.hits, misses: s.misses, bypassed: s.bypassed });
    };

    // What the database holds for every process: read per organization, bounded in time.
    const backlog = new Gauge({
      name: 'svc_hub_webhook_backlog',
      help: 'Webhook deliveries waiting to be sent (active webhooks, all processes)',
      registers,
    });
    const oldest = new Gauge({
      name: 'svc_hub_webhook_oldest_pending_seconds',
      help: 'Age of the oldest delivery waiting to be sent (0: none)',
      registers,
    });
    const disabled = new Gauge({ name: 'svc_hub_webhooks_disabled', help: 'Webhooks disabled now', registers });
    const sessions = new Gauge({
      name: 'svc_hub_mcp_sessions_open',
      help: 'MCP sessions open and used within the idle limit (all processes)',
      registers,
    });
    const up = new Gauge({
      name: 'svc_hub_metrics_database_up',
      help: '1 when the database-backed gauges were read on this scrape within the bound',
      registers,
    });
    this.beforeScrape = async () => {
      syncLookups();
      try {
        const totals = await within(this.databaseTotals(), opts.databaseTimeoutMs ?? 2000);
        backlog.set(totals.backlog);
        oldest.set(totals.oldest);
        disabled.set(totals.disabled);
        sessions.set(totals.sessions);
        up.set(1);
      } catch {
        up.set(0);
      }
    };
  }

  private readonly beforeScrape: () => Promise<void>;

  private async databaseTotals(): Promise<{ backlog: number; oldest: number; disabled: number; sessions: number }> {
    const { db, mcpIdleSeconds } = this.sources;
    const totals = { backlog: 0, oldest: 0, disabled: 0, sessions: 0 };
    for (const org of await listOrgs(db)) {
      const s = ident(org.schema);
      const r = (
        await db.query<{ backlog: number; oldest: number | null; disabled: number; sessions: number }>(
          `SELECT (SELECT count(*)::int FROM ${s}.webhook_deliveries d JOIN ${s}.webhooks w ON w.id = d.webhook_id
                    WHERE d.delivered_at IS NULL AND d.failed_at IS NULL AND w.state = 'active') AS backlog,
                  (SELECT extract(epoch FROM now() - min(d.created_at))::float8 FROM ${s}.webhook_deliveries d JOIN ${s}.webhooks w ON w.id = d.webhook_id
                    WHERE d.delivered_at IS NULL AND d.failed_at IS NULL AND w.state = 'active') AS oldest,
                  (SELECT count(*)::int FROM ${s}.webhooks WHERE state = 'disabled') AS disabled,
                  (SELECT count(*)::int FROM ${s}.mcp_sessions WHERE closed_at IS NULL AND last_seen_at >= now() - make_interval(secs => $1)) AS sessions`,
          [mcpIdleSeconds],
        )
      ).rows[0]!;
      totals.backlog += Number(r.backlog);
      totals.oldest = Math.max(totals.oldest, Number(r.oldest ?? 0));
      totals.disabled += Number(r.disabled);
      totals.sessions += Number(r.sessions);
    }
    return totals;
  }

  /** Counts every request by its route template; mount it first. */
  readonly middleware: Middleware = async (ctx, next) => {
    const started = performance.now();
    let failed = false;
    try {
      await next();
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      const label = routeLabel(ctx as ParameterizedContext & { _matchedRoute?: string | RegExp });
      const status = failed ? 500 : ctx.respond === false ? ctx.res.statusCode : ctx.status;
      this.requests.inc({ method: ctx.method, route: label, status: String(status) });
      this.latency.observe({ method: ctx.method, route: label }, (performance.now() - started) / 1000);
    }
  };

  /** The webhook worker and the SSE relay, once the app has them. */
  attach(late: LateSources): void {
    this.late = late;
    late.webhooks.observer = this.onDelivery;
  }

  /** GET /metrics: the text format for the right bearer token; 401 otherwise (a failed authentication), 404 when no token is set. */
  register(router: Router, failedAuth: FailedAuthGuard): void {
    router.get('/metrics', async (ctx) => {
      if (!this.tokenDigest) throw new HubProblem(404, 'not-found', 'Not found', 'no route GET /metrics');
      const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
      const ok = m !== null && timingSafeEqual(digest(m[1]!), this.tokenDigest);
      if (!ok) {
        // A wrong token counts against the address like any failed authentication.
        failedAuth.check(ctx.ip, false);
        if (m) await failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
        throw new HubProblem(
          401,
          'unauthorized',
          'Unauthorized',
          'send the metrics token (SVC_HUB_METRICS_TOKEN) as Authorization: Bearer <token>',
          {
            headers: { 'WWW-Authenticate': 'Bearer realm="svc-hub-metrics"' },
          },
        );
      }
      await this.beforeScrape();
      ctx.set('cache-control', 'no-store');
      ctx.type = this.registry.contentType;
      ctx.body = await this.registry.metrics();
    });
  }

  close(): void {
    this.unsubscribe();
    if (this.late?.webhooks.observer === this.onDelivery) this.late.webhooks.observer = undefined;
    this.registry.clear();
  }
}

/** A counter that follows a running total kept elsewhere (read when scraped). */
function mirrorCounter(registers: Registry[], name: string, help: string, read: () => number): Counter {
  let last = 0;
  return new Counter({
    name,
    help,
    registers,
    collect() {
      const now = read();
      if (now > last) this.inc(now - last);
      last = Math.max(last, now);
    },
  });
}

/** `work`, or a rejection once `ms` have passed. */
async function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HubProblem(503, 'timeout', 'Timeout', `no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
