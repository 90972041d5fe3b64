import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../contracts.js';
import { createOrgWithAdmin } from '../admin/provision.js';
import { startHub } from '../start.js';
import { ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub } from './support/hub-fixture.js';

// Liveness and readiness over HTTP: /health answers while the process runs; /ready answers 503
// with its reasons while the hub starts, while an organization lacks a migration, while the
// database does not answer within the bound, once the audit writer stopped, and from the moment
// the hub starts to stop while it still serves; 200 otherwise. /metrics without a token set is a 404.

interface Ready {
  status: number;
  body: { status?: string; reasons?: string[]; detail?: string; type?: string };
  type: string | null;
}

async function ready(url: string): Promise<Ready> {
  const res = await fetch(`${url}/ready`);
  return { status: res.status, body: (await res.json()) as Ready['body'], type: res.headers.get('content-type') };
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe.each(DATABASES)('readiness (%s)', (kind) => {
  let hub: TestHub;
  let stopped = false;

  beforeAll(async () => {
    hub = await startTestHub(kind, { env: { SVC_HUB_UNREADY_SECONDS: '1' } });
  }, 60_000);
  afterAll(async () => {
    if (stopped) await hub?.database.close();
    else await hub?.close();
  });

  it('answers /health cheaply and /ready with 200 when everything is in place; /metrics is 404 without a token', async () => {
    const health = await fetch(`${hub.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    const r = await ready(hub.url);
    expect(r).toMatchObject({ status: 200, body: { status: 'ready' } });
    const metrics = await fetch(`${hub.url}/metrics`, { headers: { authorization: 'Bearer anything-at-all-000000' } });
    expect(metrics.status).toBe(404);
    expect(metrics.headers.get('content-type')).toMatch(/application\/problem\+json/);
  });

  it('is not ready while an organization lacks a migration, and is again once it has it', async () => {
    const made = await createOrgWithAdmin(hub.db, 'behind', 'admin');
    const s = ident(made.org.schema);
    const last = (
      await hub.db.query<{ version: number; name: string }>(
        `SELECT version, name FROM ${s}.schema_migrations ORDER BY version DESC LIMIT 1`,
      )
    ).rows[0]!;
    await hub.db.query(`DELETE FROM ${s}.schema_migrations WHERE version = $1`, [last.version]);
    const r = await ready(hub.url);
    expect(r.status).toBe(503);
    expect(r.type).toMatch(/application\/problem\+json/);
    expect(r.body.type).toMatch(/\/errors\/not-ready$/);
    expect(r.body.reasons).toEqual(['organization behind lacks 1 migration']);
    await hub.db.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [last.version, last.name]);
    expect((await ready(hub.url)).status).toBe(200);
  });

  it('is not ready while the database does not answer within the bound', async () => {
    const tx = await hub.db.begin();
    try {
      await tx.query('LOCK TABLE svc_hub.schema_migrations IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const r = await ready(hub.url);
      expect(r.status).toBe(503);
      expect(r.body.reasons).toContain('the database did not answer within 2000 ms');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await tx.rollback();
    }
    await expect.poll(async () => (await ready(hub.url)).status, { timeout: 10_000 }).toBe(200);
  });

  it('answers 503 at once while the hub is being built, then 200', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held: Database = { ...hub.db, query: async (sql, params) => (await gate, hub.db.query(sql, params)) };
    const port = await freePort();
    const starting = startHub({ db: held, port, log: () => undefined });
    const url = `http://127.0.0.1:${port}`;
    await expect.poll(async () => (await ready(url).catch(() => ({ status: 0 }) as Ready)).status, { timeout: 10_000 }).toBe(503);
    const r = await ready(url);
    expect(r.body.reasons).toEqual(['the hub is starting']);
    release();
    const second = await starting;
    try {
      expect((await ready(url)).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('answers 503 from the moment it starts to stop, while it still serves, then closes the port', async () => {
    const org = await hub.newOrg('draining');
    const closing = hub.running.close();
    stopped = true;
    const r = await ready(hub.url);
    expect(r.status).toBe(503);
    expect(r.body.reasons).toContain('the hub is stopping');
    // Still serving what the balancer sent before it noticed.
    expect((await fetch(`${hub.url}/health`)).status).toBe(200);
    expect((await hub.request('GET', '/engrams?limit=1', { token: org.adminKey })).status).toBe(200);
    await closing;
    await expect(fetch(`${hub.url}/ready`)).rejects.toThrow();
    // The audit writer stopped with the hub: a readiness check in process says so too.
    expect(await hub.running.hub.readiness.reasons()).toEqual(
      expect.arrayContaining(['the hub is stopping', 'the audit writer has stopped']),
    );
  });
});
