import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createOrgWithAdmin } from '../admin/provision.js';
import { ident } from '../data/sql.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';
import { startHubProcess, type HubProcess } from './support/hub-process.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

// Webhooks with real hub processes: one killed with SIGKILL while a delivery is in flight (the
// change committed, its event not delivered) delivers it after a restart; two processes on one
// PostgreSQL deliver every event once between them.

const ENV = {
  SVC_HUB_ALLOW_PRIVATE_URLS: '1',
  SVC_HUB_WEBHOOK_TIMEOUT: '1',
  SVC_HUB_WEBHOOK_RETRY_BASE: '1',
  SVC_HUB_RATE_LIMIT: '100000',
  SVC_HUB_WRITE_RATE_LIMIT: '100000',
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(hub: HubProcess, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(`${hub.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

describe.each(DATABASES)('webhooks across a kill -9 (%s)', (kind) => {
  let t: TestDatabase | undefined;
  let receiver: Receiver | undefined;
  let hub: HubProcess | undefined;
  afterEach(async () => {
    await hub?.stop();
    await receiver?.close();
    await t?.close().catch(() => undefined);
  });

  it('delivers after a restart the event whose delivery was in flight when the hub died', async () => {
    t = await freshDatabase(kind);
    const made = await createOrgWithAdmin(t.db, 'crash', 'admin');
    // PGlite is one process: hand its folder to the hub.
    if (kind === 'pglite') await t.db.close();
    const where = kind === 'pglite' ? { args: ['--data', t.dataDir!], env: {} } : { args: [], env: { DATABASE_URL: t.url! } };
    const start = () => startHubProcess({ ...ENV, ...where.env }, where.args);
    receiver = await startReceiver();
    receiver.answer = () => 'hang';
    hub = await start();
    const hook = await call(hub, made.apiKey, 'POST', '/admin/webhooks', { url: receiver.url, events: ['engram.created'] });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret;
    const engram = await call(hub, made.apiKey, 'POST', '/engrams', { statement: 'Survives the crash of its hub', scope: 'org:crash' });
    expect(engram.status).toBe(201);
    await receiver.until((all) => all.length === 1);
    hub.child.kill('SIGKILL');
    await hub.stop();

    receiver.answer = () => 200;
    hub = await start();
    await receiver.until(() => receiver!.accepted().length === 1, 20_000);
    const [first, again] = receiver.received;
    expect(again!.id).toBe(first!.id);
    expect(again!.data).toMatchObject({ id: engram.body.id, statement: 'Survives the crash of its hub' });
    const read = await call(hub, made.apiKey, 'GET', `/admin/webhooks/${hook.body.id}`);
    expect(read.body.deliveries).toEqual([expect.objectContaining({ state: 'delivered', attempts: 2, status: 200 })]);
  }, 60_000);
});

describe.runIf(DATABASES.includes('postgres'))('webhooks with two hub processes', () => {
  let t: TestDatabase;
  let a: HubProcess;
  let b: HubProcess;
  let receiver: Receiver;
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await receiver?.close();
    await t?.close();
  });

  it('delivers each event once between them', async () => {
    t = await freshDatabase('postgres');
    const made = await createOrgWithAdmin(t.db, 'pair', 'admin');
    // A send that outlives its deadline is sent again (at least once): give a busy machine's
    // receiver ample time, so that a second copy here can only mean two processes sent it.
    const env = { ...ENV, SVC_HUB_WEBHOOK_TIMEOUT: '15', DATABASE_URL: t.url! };
    [a, b] = await Promise.all([startHubProcess(env), startHubProcess(env)]);
    receiver = await startReceiver();
    const hook = await call(a, made.apiKey, 'POST', '/admin/webhooks', { url: receiver.url, events: ['engram.created'] });
    receiver.secret = hook.body.secret;
    const ids = await Promise.all(
      Array.from(
        { length: 60 },
        async (_, i) =>
          (await call(i % 2 ? a : b, made.apiKey, 'POST', '/engrams', { statement: `Pair statement number ${i}`, scope: 'org:pair' })).body
            .id as string,
      ),
    );
    await receiver.until(() => receiver.accepted().length >= 60, 20_000);
    await new Promise((d) => setTimeout(d, 500));
    expect(receiver.received.every((x) => x.verified)).toBe(true);
    expect(receiver.received.map((x) => x.data.id).sort()).toEqual([...ids].sort());
    const s = ident(made.org.schema);
    const left = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.webhook_deliveries WHERE delivered_at IS NULL`);
    expect(Number(left.rows[0]!.n)).toBe(0);
  }, 60_000);
});
