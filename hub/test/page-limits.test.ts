import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// The pages read a posted body only after the caller's role for the path is settled, and only
// the one upload form takes multipart (issue 25, item 12: any signed-in person could make the
// gate read 4 x 20 MB into memory on any page path). Raw sockets: the headers announce a large
// body, a little of it is sent, and the answer must come without the rest.

describe('page bodies', () => {
  let hub: TestHub;
  let acme: TestOrg;
  beforeAll(async () => {
    hub = await startTestHub('pglite');
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  /** The status line the hub answers with after the headers and 1 KB of a 20 MB multipart body. */
  const partialPost = (path: string, key: string) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(hub.url);
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=zz\r\nContent-Length: 20000000\r\n\r\n` +
            `--zz\r\nContent-Disposition: form-data; name="pack"; filename="p.json"\r\n\r\n${'x'.repeat(1024)}`,
        );
      });
      let got = '';
      socket.on('data', (d) => {
        got += d.toString();
        if (got.includes('\r\n')) {
          socket.destroy();
          resolve(got.split('\r\n')[0]!);
        }
      });
      socket.on('error', reject);
    });

  it('refuses a viewer on an admin path before reading the upload', async () => {
    const viewer = await acme.user('vi', 'viewer');
    expect(await partialPost('/admin/packs', viewer.key)).toBe('HTTP/1.1 403 Forbidden');
  });

  it('refuses an upload on a path whose form takes no file, before reading it', async () => {
    const editor = await acme.user('ed', 'editor');
    expect(await partialPost('/me/api-keys', editor.key)).toBe('HTTP/1.1 415 Unsupported Media Type');
    expect(await partialPost('/admin/users', acme.adminKey)).toBe('HTTP/1.1 415 Unsupported Media Type');
  });

  it('still takes the pack upload of an admin', async () => {
    await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Uploads still work', scope: 'org:acme', visibility: 'public', tags: ['up'] },
    });
    const ex = await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'up', scope: 'org:acme', tags: ['up'] } });
    const form = new FormData();
    form.append('allow_untrusted', 'true');
    form.append('pack', new Blob([JSON.stringify({ files: ex.body.files })]), 'up.json');
    const res = await fetch(`${hub.url}/admin/packs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.adminKey}` },
      body: form,
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain('Pack up installed');
  });
});
