import type { ServerResponse } from 'node:http';
import type Router from '@koa/router';
import type { Database } from '../contracts.js';
import { HubProblem, PROBLEM_CONTENT_TYPE, problemDocument } from '../http/problem.js';
import { loadMigrations } from '../data/migrate.js';
import { listOrgs } from '../data/organizations.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import type { AuditWriter } from '../audit/audit-log.js';
import { invalid } from '../../engine/errors.js';

// Readiness, for a load balancer: GET /ready answers 200 {"status":"ready"} when this process
// should get traffic, else 503 with the reasons: while it starts, when the control schema or an
// organization's schema lacks a migration this hub knows (an organization being created by
// another process, a hub newer than its database), when the database does not answer within the
// bound, when the audit writer has stopped or its writes fail, and from the moment the hub starts
// to stop (drain), so the balancer stops sending before the port closes. GET /health stays the
// cheap liveness answer: the process runs.

export interface ReadinessDeps {
  db: Database;
  audit: AuditWriter;
  /** Longest the database checks may take (default 2 s). */
  timeoutMs?: number;
}

export class Readiness {
  private draining = false;
  /** Organization schemas seen with every migration: not asked again (migrations are never undone). */
  private readonly atHead = new Set<string>();

  constructor(private readonly deps: ReadinessDeps) {}

  /** From now on /ready answers 503: the hub is stopping. */
  drain(): void {
    this.draining = true;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Why this process should get no traffic now (empty: ready). */
  async reasons(): Promise<string[]> {
    const reasons: string[] = [];
    if (this.draining) reasons.push('the hub is stopping');
    const audit = this.deps.audit.stats();
    if (audit.closed) reasons.push('the audit writer has stopped');
    else if (audit.failing) reasons.push('audit writes are failing (the writer retries)');
    const ms = this.deps.timeoutMs ?? 2000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const late = await Promise.race([
        this.migrationReasons().then((r) => {
          reasons.push(...r);
          return false;
        }),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), ms))),
      ]);
      if (late) reasons.push(`the database did not answer within ${ms} ms`);
    } catch (err) {
      reasons.push(`the database failed: ${(err as Error).message.split('\n')[0]}`);
    } finally {
      clearTimeout(timer);
    }
    return reasons;
  }

  /** Schemas missing a migration this hub knows. */
  private async migrationReasons(): Promise<string[]> {
    const { db } = this.deps;
    const missing = async (schema: string, kind: 'control' | 'org'): Promise<number> => {
      const known = loadMigrations(kind).map((m) => m.version);
      try {
        const r = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${ident(schema)}.schema_migrations WHERE version = ANY($1::int[])`,
          [known],
        );
        return known.length - Number(r.rows[0]?.n ?? 0);
      } catch (err) {
        // No schema (or no migrations table) yet: nothing applied.
        if ((err as { code?: string }).code === '42P01' || (err as { code?: string }).code === '3F000') return known.length;
        throw err;
      }
    };
    const reasons: string[] = [];
    const control = await missing(CONTROL_SCHEMA, 'control');
    if (control > 0) {
      reasons.push(`the hub's control schema lacks ${control} migration${control === 1 ? '' : 's'} (run svc hub migrate)`);
      return reasons;
    }
    for (const org of await listOrgs(db)) {
      if (this.atHead.has(org.schema)) continue;
      const n = await missing(org.schema, 'org');
      if (n === 0) this.atHead.add(org.schema);
      else reasons.push(`organization ${org.slug} lacks ${n} migration${n === 1 ? '' : 's'}`);
    }
    return reasons;
  }

  /**
   * GET /ready: 200 {"status":"ready"}, or a 503 problem document naming the reasons (rendered
   * here: an expected 503 is no internal error for the app's handler to log).
   */
  register(router: Router, docsUrl: string): void {
    router.get('/ready', async (ctx) => {
      const reasons = await this.reasons();
      ctx.set('cache-control', 'no-store');
      if (reasons.length === 0) {
        ctx.body = { status: 'ready' };
        return;
      }
      ctx.status = 503;
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = JSON.stringify(problemDocument(notReady(reasons), docsUrl, ctx.path));
    });
  }
}

function notReady(reasons: string[]): HubProblem {
  return new HubProblem(503, 'not-ready', 'Not ready', `${reasons.join('; ')}`, { members: { reasons } });
}

/** SVC_HUB_UNREADY_SECONDS: how long a stopping hub serves on while /ready answers 503 (default 0). */
export function unreadySeconds(env: NodeJS.ProcessEnv): number {
  const raw = env.SVC_HUB_UNREADY_SECONDS;
  if (raw === undefined || raw === '') return 0;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 3600)
    throw invalid(`SVC_HUB_UNREADY_SECONDS must be a whole number of seconds from 0 to 3600 (got "${raw}")`);
  return n;
}

/** The answer to /ready while the hub is still being built (start.ts): 503, starting. */
export function answerStarting(res: ServerResponse, docsUrl = 'https://svc.dev/docs'): void {
  const body = JSON.stringify(problemDocument(notReady(['the hub is starting']), docsUrl, '/ready'));
  res.writeHead(503, { 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store' });
  res.end(body);
}
