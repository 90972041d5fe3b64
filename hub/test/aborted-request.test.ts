import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { startTestHub, type TestHub } from './support/hub-fixture.js';

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
