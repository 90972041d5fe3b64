import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../audit/audit-log.js';
import { createOrgWithAdmin } from '../admin/provision.js';
import { ident } from '../data/sql.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';
import { startHubProcess, type HubProcess } from './support/hub-process.js';

// Writes of one organization racing through two hub processes on one PostgreSQL. A write holds
// the organization's lock from its first read to its commit, and that span is kept short (the
// lock is taken with learn's dedup read, the change and its events go in one statement, the
// audit chain's head is read under its lock in one round trip): none of that may let two
// writers see stale state.

const AUDIT_KEY = 'concurrent-writes-audit-key-0123456789';

describe.runIf(DATABASES.includes('postgres'))('concurrent writes across two hub processes (postgres)', () => {
  let t: TestDatabase;
  let hubs: HubProcess[] = [];
  let made: Awaited<ReturnType<typeof createOrgWithAdmin>>;
  const logged: string[] = [];

  beforeAll(async () => {
    t = await freshDatabase('postgres');
    made = await createOrgWithAdmin(t.db, 'racers', 'admin');
    const env = { DATABASE_URL: t.url!, SVC_HUB_AUDIT_KEY: AUDIT_KEY, SVC_HUB_RATE_LIMIT: '100000', SVC_HUB_WRITE_RATE_LIMIT: '100000' };
    hubs = await Promise.all([startHubProcess(env), startHubProcess(env)]);
    for (const h of hubs) h.child.stderr!.on('data', (d) => logged.push(String(d)));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(hubs.map((h) => h.stop()));
    await t?.close();
  });

  const call = async (i: number, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${hubs[i % 2]!.url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${made.apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const one = async <R>(sql: string): Promise<R> => (await t.db.query<R>(sql)).rows[0]!;

  it('dedups one statement learned at once, loses no feedback, and keeps statistics, postings and the audit chain exact', async () => {
    const s = ident(made.org.schema);
    const target = (await call(0, 'POST', '/engrams', { statement: 'Feedback target rule for the race', scope: 'org:racers' })).body;
    // 40 distinct creates, 24 creates of one statement, 24 feedbacks on one engram and 8 edits, all at once.
    const jobs: Array<() => Promise<{ status: number; body: any }>> = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 40; i++)
      jobs.push(() =>
        call(i, 'POST', '/engrams', {
          statement: `Distinct racing rule number ${i} about ${['queues', 'caches', 'locks', 'indexes'][i % 4]}`,
          scope: 'org:racers',
        }),
      );
    for (let i = 0; i < 24; i++)
      jobs.push(() => call(i, 'POST', '/engrams', { statement: 'Always take the lock before reading the head', scope: 'org:racers' }));
    for (let i = 0; i < 24; i++) jobs.push(() => call(i, 'POST', `/engrams/${target.id}/feedback`, { signal: 'positive' }));
    for (let i = 0; i < 8; i++) jobs.push(() => call(i, 'POST', '/engrams', { statement: `Scoped racing rule ${i}`, scope: `user:admin` }));
    const results = await Promise.all(jobs.map((job) => job()));
    expect(results.filter((r) => r.status >= 300).map((r) => JSON.stringify(r.body))).toEqual([]);

    // One engram for the statement learned 24 times: one 201, the rest deduplicated onto it.
    const same = results.slice(40, 64);
    expect(same.filter((r) => r.status === 201)).toHaveLength(1);
    expect(new Set(same.map((r) => r.body.id)).size).toBe(1);
    expect(
      (
        await one<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${s}.engrams WHERE doc->>'statement' = 'Always take the lock before reading the head'`,
        )
      ).n,
    ).toBe(1);
    expect(
      (await one<{ n: number }>(`SELECT (doc->>'reference_count')::int AS n FROM ${s}.engrams WHERE id = '${same[0]!.body.id}'`)).n,
    ).toBeGreaterThanOrEqual(24);
    // Every feedback counted: read-modify-write under the lock.
    expect((await call(0, 'GET', `/engrams/${target.id}`)).body.feedback_signals.positive).toBe(24);
    // Distinct ids, all stored.
    const ids = new Set(results.filter((r) => r.status === 201).map((r) => r.body.id));
    expect(ids.size).toBe(40 + 1 + 8);

    // The scope statistics BM25 reads add up to the engrams; every engram has its postings.
    const stats = (
      await t.db.query<{ scope: string; n_rows: number; n_tokens: number }>(
        `SELECT scope, n_rows, n_tokens FROM ${s}.fts_scope_stats ORDER BY scope`,
      )
    ).rows;
    const truth = (
      await t.db.query<{ scope: string; n_rows: number; n_tokens: number }>(
        `SELECT scope, count(*)::int AS n_rows, sum(ntok)::int AS n_tokens FROM ${s}.engrams GROUP BY scope ORDER BY scope`,
      )
    ).rows;
    expect(stats.map((r) => ({ ...r, n_rows: Number(r.n_rows), n_tokens: Number(r.n_tokens) }))).toEqual(truth);
    expect(
      (
        await one<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${s}.engrams e WHERE NOT EXISTS (SELECT 1 FROM ${s}.engram_terms t WHERE t.engram_id = e.id)`,
        )
      ).n,
    ).toBe(0);
    expect(
      (
        await one<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${s}.engram_terms t JOIN ${s}.engrams e ON e.id = t.engram_id WHERE t.seq <> e.seq OR t.scope <> e.scope`,
        )
      ).n,
    ).toBe(0);
    // No posting without its engram (no foreign key says so: the writer does).
    expect(
      (
        await one<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${s}.engram_terms t WHERE NOT EXISTS (SELECT 1 FROM ${s}.engrams e WHERE e.id = t.engram_id)`,
        )
      ).n,
    ).toBe(0);

    // One signed, linked audit row per write, whichever process took it, each in its write's
    // transaction (none fell back to the queue after a clash on the chain's head).
    expect(logged.join('').match(/.*queued instead.*/g) ?? []).toEqual([]);
    const v = await verifyAudit(t.db, made.org, AUDIT_KEY);
    expect(v.ok).toBe(true);
    expect((await one<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.audit_log WHERE action LIKE 'POST /api/v1/engrams%'`)).n).toBe(
      results.length + 1,
    );
    // Every change event and one created event per new engram.
    expect(
      (await one<{ n: number }>(`SELECT count(DISTINCT engram_id)::int AS n FROM ${s}.engram_events WHERE action = 'created'`)).n,
    ).toBe(ids.size + 1);

    // Both processes rank the same.
    const recall = async (i: number) =>
      (await call(i, 'POST', '/recall/bm25', { query: 'racing rule locks', limit: 10 })).body.results.map(
        (r: { id: string; score: number }) => [r.id, r.score],
      );
    expect(await recall(1)).toEqual(await recall(0));
  }, 120_000);

  it('runs mixed writes of one organization through both processes at once: none deadlocks, fails or is answered twice', async () => {
    // Each process groups the writes that arrive together into one transaction (write-groups.ts),
    // so one transaction may take the locks of several kinds of write: creates, people's roles,
    // groups, keys, and a retried create with one Idempotency-Key on both processes.
    const s = ident(made.org.schema);
    const bob = (await call(0, 'POST', '/admin/users', { name: 'bob-mixed', role: 'viewer' })).body;
    const key = async (i: number) => {
      const res = await fetch(`${hubs[i % 2]!.url}/api/v1/engrams`, {
        method: 'POST',
        headers: { authorization: `Bearer ${made.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 'mixed-retry-1' },
        body: JSON.stringify({ statement: 'A retried create is answered once', scope: 'org:racers' }),
      });
      return { status: res.status, body: (await res.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    const jobs: Array<() => Promise<{ status: number; body: any }>> = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 30; i++) jobs.push(() => call(i, 'POST', '/engrams', { statement: `Mixed racing rule ${i}`, scope: 'org:racers' }));
    for (let i = 0; i < 6; i++) jobs.push(() => call(i, 'POST', '/admin/groups', { path: `mixed-${i}` }));
    for (let i = 0; i < 6; i++) jobs.push(() => call(i, 'POST', '/admin/api-keys', { user_id: made.userId, name: `mixed ${i}` }));
    for (let i = 0; i < 6; i++) jobs.push(() => call(i, 'PATCH', `/admin/users/${bob.id}`, { role: i % 2 ? 'viewer' : 'editor' }));
    for (let i = 0; i < 6; i++) jobs.push(() => key(i));
    const results = await Promise.all(jobs.map((job) => job()));
    expect(results.filter((r) => r.status >= 300).map((r) => `${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
    const retried = results.slice(48);
    expect(new Set(retried.map((r) => r.body.id)).size).toBe(1);
    expect(
      (
        await one<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${s}.engrams WHERE doc->>'statement' = 'A retried create is answered once'`,
        )
      ).n,
    ).toBe(1);
    expect((await one<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.groups WHERE path LIKE 'mixed-%'`)).n).toBe(6);
    expect((await verifyAudit(t.db, made.org, AUDIT_KEY)).ok).toBe(true);
  }, 120_000);
});
