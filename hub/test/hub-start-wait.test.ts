import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';
import { startHubProcess, type HubProcess } from './support/hub-process.js';
import { svc } from '../../engine/test/support/run-svc.js';
import { freePort } from '../../engine/test/support/free-port.js';

// A hub started before its PostgreSQL (an orchestrator's start order) waits for it with backoff,
// for SVC_HUB_DATABASE_WAIT seconds, and then serves; past the bound it exits 1 with one line.
// The database "comes up" when a TCP relay in front of the real server starts listening.

describe.runIf(DATABASES.includes('postgres'))('svc hub started before its database', () => {
  let t: TestDatabase;
  const sockets = new Set<Socket>();
  let relay: Server | undefined;
  beforeAll(async () => {
    t = await freshDatabase('postgres');
  }, 60_000);
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    relay?.close();
    await t?.close();
  });

  it('waits for the database with backoff, saying so, and serves once it answers', async () => {
    const port = await freePort();
    const target = new URL(t.url!);
    const viaRelay = new URL(t.url!);
    viaRelay.port = String(port);
    const starting = startHubProcess({ DATABASE_URL: viaRelay.toString(), SVC_HUB_DATABASE_WAIT: '60' });
    // The database comes up two seconds later.
    await new Promise((done) => setTimeout(done, 2_000));
    relay = createServer((client) => {
      const server = connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, server]) {
        sockets.add(s);
        s.on('error', () => undefined);
      }
      client.pipe(server).pipe(client);
    });
    await new Promise<void>((done) => relay!.listen(port, '127.0.0.1', done));
    let hub: HubProcess | undefined;
    try {
      hub = await starting;
      expect((await fetch(`${hub.url}/health`)).status).toBe(200);
    } finally {
      await hub?.stop();
    }
  }, 60_000);

  it('gives up after SVC_HUB_DATABASE_WAIT seconds with one line and exit 1', async () => {
    const port = await freePort();
    const nowhere = new URL(t.url!);
    nowhere.port = String(port);
    const r = await svc(['hub', '--port', '0', '--no-json'], { env: { DATABASE_URL: nowhere.toString(), SVC_HUB_DATABASE_WAIT: '1' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/waiting for the PostgreSQL server at DATABASE_URL/);
    expect(r.stderr.trim().split('\n').pop()).toMatch(
      /^svc: cannot open the PostgreSQL server at DATABASE_URL: .*ECONNREFUSED.* \(waited 1 s for it; SVC_HUB_DATABASE_WAIT sets how long\)$/,
    );
  }, 30_000);
});
