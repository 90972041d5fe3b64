import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migratedDataFolder, startHubProcess } from './support/hub-process.js';
import { svc } from '../../engine/test/support/run-svc.js';
import { DATABASES, freshDatabase } from './support/databases.js';
import { startTestHub, type TestHub } from './support/hub-fixture.js';
import { AuditWriter } from '../audit/audit-log.js';
import { ident } from '../data/sql.js';

// Starting and stopping `svc hub` as an operator sees it (real child processes): a busy port is
// the one line said, before any database opens; a hub that served a request stops as soon as nothing is left to write,
// not when its audit drain window runs out; when rows do wait, stderr says what it waits for.

/** A port something else listens on. */
async function busyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('svc hub start and stop', () => {
  it.each(DATABASES)(
    'on a busy port says only that the port is in use (%s)',
    async (kind) => {
      const { port, server } = await busyPort();
      const db = kind === 'postgres' ? await freshDatabase('postgres') : undefined;
      try {
        const data = join(mkdtempSync(join(tmpdir(), 'svc-hub-busy-')), 'hub');
        const env = { DATABASE_URL: db?.url ?? '', SVC_PATH: join(data, '..', 'store') };
        const r = await svc(['hub', '--port', String(port), '--data', data, '--no-json'], { env });
        expect(r.stderr).toBe(`svc: port ${port} is in use; pick another with --port\n`);
        expect(r.stdout).toBe('');
        expect(r.code).toBe(1);
        // Said before the database opens: nothing created (a first PGlite start takes seconds).
        expect(existsSync(data)).toBe(false);
      } finally {
        server.close();
        await db?.close();
      }
    },
    120_000,
  );

  it('stops at once after serving requests, far inside its drain window, with the audit chain closed cleanly', async () => {
    const data = migratedDataFolder('hub-stop');
    // A drain window of 120 s: a stop that waited it out would time the test out.
    const env = { DATABASE_URL: '', SVC_PATH: join(data, '..', 'store'), SVC_HUB_DRAIN_SECONDS: '120' };
    const made = await svc(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json'], { env });
    expect(made.code, made.stderr).toBe(0);
    const { api_key } = JSON.parse(made.stdout) as { api_key: string };
    const hub = await startHubProcess(env, ['--data', data]);
    let stderr = '';
    hub.child.stderr!.on('data', (d) => (stderr += d));
    const me = await fetch(`${hub.url}/api/v1/me`, { headers: { authorization: `Bearer ${api_key}` } });
    expect(me.status).toBe(200);
    // The read's audit row is queued after the answer: once it is in the database, nothing waits.
    const verify = async () =>
      JSON.parse((await svc(['hub', 'audit', 'verify', '--org', 'acme', '--data', data, '--json'], { env })).stdout);
    const t0 = Date.now();
    expect(await hub.stop()).toBe(0);
    const took = Date.now() - t0;
    expect(took, `stopping took ${took} ms`).toBeLessThan(60_000); // generous: the window is 120 s, idle takes well under 1 s
    expect(stderr).not.toMatch(/unwritten|stopping: writing/);
    expect(await verify()).toMatchObject({ ok: true, gaps: [], unfinished: [] });
  }, 180_000);
});

describe.each(DATABASES)('the audit writer closing (%s)', (kind) => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub(kind);
  }, 60_000);
  afterAll(async () => hub?.close());

  it('returns at once when idle and says what it waits for when rows are queued', async () => {
    const logged: string[] = [];
    const idle = new AuditWriter(hub.db, hub.running.hub.config.auditKey, { log: (m) => logged.push(m) });
    expect(await idle.close(0)).toEqual({ drained: true, unwritten: 0 });
    expect(logged).toEqual([]);

    // Rows the database will not take (their table is away): close says what it waits for, then gives up.
    const org = await hub.newOrg('waiting');
    const s = ident(org.org.schema);
    const writer = new AuditWriter(hub.db, hub.running.hub.config.auditKey, { log: (m) => logged.push(m) });
    await hub.db.query(`ALTER TABLE ${s}.audit_log RENAME TO audit_log_away`);
    try {
      for (const action of ['GET /api/v1/me', 'GET /api/v1/engrams']) {
        writer.record(org.org, {
          at: new Date().toISOString(),
          actor: 'admin',
          token_id: null,
          action,
          resource: null,
          outcome: 200,
          details: {},
        });
      }
      expect(await writer.close(500)).toEqual({ drained: false, unwritten: 2 });
    } finally {
      await hub.db.query(`ALTER TABLE ${s}.audit_log_away RENAME TO audit_log`);
    }
    expect(logged[0]).toBe('stopping: writing 2 queued audit rows first (at most 0.5 s)');
    expect(logged.at(-1)).toMatch(/closed with 2 rows unwritten/);
  });
});
