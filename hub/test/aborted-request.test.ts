import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// A client that goes away in the middle of sending its body is not the hub's failure: nothing
// is logged as an internal error (operators watch that log for real 500s), and the hub serves on.

describe('a request whose client goes away mid-body', () => {
  let hub: TestHub;
  const logged: string[] = [];
  beforeAll(async () => {
    hub = await startTestHub('pglite', { log: (m) => logged.push(m) });
  }, 60_000);
  afterAll(async () => hub?.close());

  it('is not logged as an internal error', async () => {
    const { adminKey } = await hub.newOrg('gone');
    const url = new URL(hub.url);
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((done) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          socket.write(
            `POST /api/v1/recall/bm25 HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${adminKey}\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{"query": "half a bo`,
          );
          setTimeout(() => {
            socket.destroy();
            done();
          }, 100);
        });
      });
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(logged.filter((m) => m.includes('internal error'))).toEqual([]);
    const after = await hub.request('POST', '/recall/bm25', { token: adminKey, body: { query: 'still here', limit: 5 } });
    expect(after.status).toBe(200);
  });
});

// An upload whose client leaves mid-body (issue 25, item 2): the pack route read its multipart
// body inside the write transaction its Idempotency-Key claim had opened, and waited for the
// rest forever; ten of them held every pooled connection "idle in transaction", and on PGlite
// one froze the hub. The body is read first now, and an abandoned read settles.
describe.each(DATABASES)('pack uploads whose client leaves mid-body (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  const tmp = mkdtempSync(join(tmpdir(), 'svc-abort-tmp-'));
  const before = process.env.TMPDIR;
  beforeAll(async () => {
    // The upload's temporary folders go to a folder of this test only, to be counted.
    process.env.TMPDIR = tmp;
    hub = await startTestHub(kind, { log: () => undefined });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Sends the headers and part of a multipart body, then destroys the connection once the hub has read that much. */
  const abandon = (key: string, n: number) =>
    new Promise<void>((done) => {
      const url = new URL(hub.url);
      const socket = connect(Number(url.port), url.hostname, () => {
        const part = `--xx\r\nContent-Disposition: form-data; name="pack.yaml"; filename="pack.yaml"\r\nContent-Type: application/yaml\r\n\r\nname: half\nversion: 1.0.0\n`;
        socket.write(
          `POST /api/v1/packs?allow_untrusted=true HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: abandoned-${n}\r\n` +
            `Content-Type: multipart/form-data; boundary=xx\r\nContent-Length: 100000\r\n\r\n${part}`,
        );
        setTimeout(() => {
          socket.destroy();
          done();
        }, 150);
      });
      socket.on('error', () => undefined);
    });

  // A transaction left waiting: idle in it for over a second (the hub's own transactions are idle
  // in them only for a moment between two statements, which a sample may catch).
  const leftInTransaction = async (): Promise<number> =>
    kind === 'postgres'
      ? (
          await hub.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND now() - state_change > interval '1 second'`,
          )
        ).rows[0]!.n
      : 0;
  const packFolders = () => readdirSync(tmp).filter((n) => n.startsWith('svc-hub-pack-'));

  it('holds no transaction, leaves no temporary folder, and the hub serves on', async () => {
    for (let i = 0; i < 10; i++) await abandon(acme.adminKey, i);
    // What the hub does with a request it was sent is asynchronous: wait until it has settled them.
    for (let i = 0; i < 200 && ((await leftInTransaction()) > 0 || packFolders().length > 0); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await leftInTransaction()).toBe(0);
    expect(packFolders()).toEqual([]);
    const res = await fetch(`${hub.url}/api/v1/engrams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.adminKey}`, 'content-type': 'application/json', 'idempotency-key': 'after-the-abandoned' },
      body: JSON.stringify({ statement: 'The hub still takes writes', scope: 'org:acme' }),
      signal: AbortSignal.timeout(15_000),
    });
    expect(res.status).toBe(201);
  }, 60_000);

  it('a whole upload with an Idempotency-Key is replayed only for the same files', async () => {
    await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Packs travel as files', scope: 'org:acme', visibility: 'public', tags: ['p'] },
    });
    const ex = await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'tiny', scope: 'org:acme', tags: ['p'] } });
    expect(ex.status).toBe(200);
    const send = (files: Array<{ path: string; content: string }>) => {
      const form = new FormData();
      for (const f of files) form.append(f.path, new Blob([f.content]), f.path.split('/').pop());
      return fetch(`${hub.url}/api/v1/packs?allow_untrusted=true`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acme.adminKey}`, 'idempotency-key': 'one-pack' },
        body: form,
      });
    };
    const first = await send(ex.body.files);
    expect(first.status).toBe(201);
    const again = await send(ex.body.files);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await send(
      ex.body.files.map((f: { path: string; content: string }) =>
        f.path === 'pack.yaml' ? { ...f, content: f.content.replace('tiny', 'other') } : f,
      ),
    );
    expect(other.status).toBe(422);
    expect(packFolders()).toEqual([]);
  });
});
