import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { systemContext } from '../../engine/ops/context.js';
import { exportPack, FilePackKeys } from '../../engine/ops/packs/packs.js';
import { IntegrityHash } from '../../engine/ops/packs/format.js';
import { checkUrl, isPrivateAddress } from '../net/outbound.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type Reply, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { responseErrors } from '../openapi/spec.js';

describe.each(DATABASES)('pack routes (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let beta: TestOrg;

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
    beta = await hub.newOrg('beta');
  }, 60_000);
  afterAll(async () => hub?.close());

  /** A multipart upload, its answer checked against the OpenAPI description like hub.request's. The hub trusts no signer: allowed by default here. */
  const upload = async (
    token: string,
    files: Array<{ path: string; content: string }>,
    query = '?allow_untrusted=true',
  ): Promise<Reply> => {
    const form = new FormData();
    for (const f of files) form.append(f.path, new Blob([f.content], { type: 'application/yaml' }), f.path.split('/').pop());
    const res = await fetch(`${hub.url}/api/v1/packs${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    const text = await res.text();
    const body = JSON.parse(text);
    const errors = await responseErrors('POST', '/packs', res.status, res.headers.get('content-type') ?? '', body);
    if (errors.length) throw new Error(`POST /packs -> ${res.status} does not match the OpenAPI description: ${errors.join('; ')}`);
    return { status: res.status, headers: res.headers, body, text };
  };

  it('exports a scope as files, installs them into another organization, lists and uninstalls', async () => {
    const a = acme.adminKey;
    for (const statement of ['Run the linter before pushing', 'Keep functions under 50 lines', 'Name tests after behaviour'])
      await hub.request('POST', '/engrams', { token: a, body: { statement, scope: 'org:acme', visibility: 'public', tags: ['style'] } });
    await hub.request('POST', '/engrams', { token: a, body: { statement: 'Private style note', scope: 'org:acme', tags: ['style'] } });
    const ex = await hub.request('POST', '/packs/export', {
      token: a,
      body: { name: 'style', scope: 'org:acme', tags: ['style'], description: 'House style' },
      template: '/packs/export',
    });
    expect(ex.status).toBe(200);
    expect(ex.body).toMatchObject({ name: 'style', engram_count: 3, left_out_counts: { private: 1 } });
    expect(ex.body.files.map((f: { path: string }) => f.path)).toEqual(expect.arrayContaining(['pack.yaml']));
    expect(ex.body.files).toHaveLength(4);
    expect(JSON.stringify(ex.body)).not.toMatch(/\/tmp\//);

    const editor = await beta.user('ed', 'editor');
    expect((await upload(editor.key, ex.body.files)).status).toBe(403);
    const inst = await upload(beta.adminKey, ex.body.files);
    expect(inst.status).toBe(201);
    expect(inst.body).toMatchObject({ name: 'style', action: 'installed', signature: { status: 'unsigned', signer: null } });
    expect(inst.body.created).toHaveLength(3);
    expect(Object.values(inst.body.id_map).sort()).toEqual([...inst.body.created].sort());
    const listed = await hub.request('GET', '/packs', { token: editor.key, template: '/packs' });
    expect(listed.body.items.map((p: { name: string }) => p.name)).toEqual(['style']);
    // Everyone in the organization reads an installed pack.
    const found = await hub.request('POST', '/recall/bm25', { token: editor.key, body: { query: 'linter pushing' } });
    expect(found.body.results[0]).toMatchObject({ statement: 'Run the linter before pushing', scope: 'pack:style' });
    expect((await hub.request('GET', '/packs', { token: acme.adminKey })).body.items).toEqual([]);

    const again = await upload(beta.adminKey, ex.body.files);
    expect(again.status).toBe(200);
    expect(again.body.unchanged).toHaveLength(3);
    const un = await hub.request('DELETE', '/packs/style', { token: beta.adminKey, template: '/packs/{name}' });
    expect(un.status).toBe(200);
    expect(un.body.retired).toHaveLength(3);
    expect((await hub.request('DELETE', '/packs/style', { token: beta.adminKey, template: '/packs/{name}' })).status).toBe(404);
  });

  it('refuses a tampered pack with 409, bad uploads with 400 or 415, and a bad export with 400 or 404', async () => {
    await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Review every migration', scope: 'org:acme', visibility: 'public', tags: ['db'] },
    });
    const ex = await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'db', tags: ['db'] } });
    const tampered = ex.body.files.map((f: { path: string; content: string }) =>
      f.path.startsWith('engrams/') ? { ...f, content: f.content.replace('Review every migration', 'Skip migration reviews') } : f,
    );
    const r = await upload(beta.adminKey, tampered);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ status: 409, type: expect.stringMatching(/conflict$/) });
    expect(r.body.detail).toMatch(/failed its integrity check/);
    expect(r.body.detail).not.toMatch(/\/tmp\//);
    expect((await hub.request('GET', '/packs', { token: beta.adminKey })).body.items.map((p: { name: string }) => p.name)).not.toContain(
      'db',
    );
    expect((await upload(beta.adminKey, [{ path: '../etc/passwd', content: 'x' }])).status).toBe(400);
    expect((await upload(beta.adminKey, [{ path: 'engrams/x.yaml', content: 'statement: x' }])).status).toBe(400);
    expect((await hub.request('POST', '/packs', { token: beta.adminKey, body: { files: [] } })).status).toBe(400);
    expect(
      (await hub.request('POST', '/packs', { token: beta.adminKey, raw: 'pack', headers: { 'content-type': 'text/plain' } })).status,
    ).toBe(415);
    expect(
      (await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'Bad Name!' }, template: '/packs/export' })).status,
    ).toBe(400);
    expect(
      (
        await hub.request('POST', '/packs/export', {
          token: acme.adminKey,
          body: { name: 'none', tags: ['nothing-has-this'] },
          template: '/packs/export',
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await hub.request('POST', '/packs/export', {
          token: beta.adminKey,
          body: { name: 'steal', scope: 'org:acme' },
          template: '/packs/export',
        })
      ).status,
    ).toBe(403);
  });

  it('installs an unsigned or untrusted pack only with allow_untrusted=true, and refuses one tampered after signing', async () => {
    await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Tag every release', scope: 'org:acme', visibility: 'public', tags: ['rel'] },
    });
    const ex = await hub.request('POST', '/packs/export', {
      token: acme.adminKey,
      body: { name: 'rel', tags: ['rel'] },
      template: '/packs/export',
    });
    expect(ex.body.signer).toBeNull();
    const refused = await upload(beta.adminKey, ex.body.files, '');
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(
      /^pack "rel" at the uploaded pack is not signed, so nothing says who made it; it was not installed: .*allow_untrusted/,
    );
    expect((await upload(beta.adminKey, ex.body.files, '?allow_untrusted=false')).status).toBe(409);
    expect((await upload(beta.adminKey, ex.body.files, '?allow_untrusted=maybe')).status).toBe(400);
    expect((await hub.request('GET', '/packs', { token: beta.adminKey })).body.items.map((p: { name: string }) => p.name)).not.toContain(
      'rel',
    );

    // A pack signed on someone's machine: it verifies under a key the hub does not trust.
    const files = await signedPackFiles('signed', 'Rotate deploy keys every quarter');
    const signed = await upload(beta.adminKey, files, '');
    expect(signed.status).toBe(409);
    expect(signed.body.detail).toMatch(/is signed by ed25519:\S+…, a key you do not trust/);
    const allowed = await upload(beta.adminKey, files);
    expect(allowed.status).toBe(201);
    expect(allowed.body.signature).toMatchObject({ status: 'untrusted', signer: expect.stringMatching(/^ed25519:/) });

    // Edited after signing and resealed with a fresh integrity hash: refused even when allowed.
    const tampered = reseal(
      files.map((f) => (f.path.startsWith('engrams/') ? { ...f, content: f.content.replace('every quarter', 'never') } : f)),
    );
    const r = await upload(beta.adminKey, tampered);
    expect(r.status).toBe(409);
    expect(r.body.detail).toMatch(/failed its signature check and was not installed/);
  });
});

/** A signed pack's files, exported from a local store with its own creator key. */
async function signedPackFiles(name: string, statement: string): Promise<Array<{ path: string; content: string }>> {
  const tmp = mkdtempSync(join(tmpdir(), 'svc-hub-signed-'));
  const store = await LocalStore.open(join(tmp, 'store'));
  try {
    await learn(store, { statement, visibility: 'public' }, systemContext);
    const dir = (await exportPack(store, { name, output: join(tmp, 'pack') }, systemContext, await new FilePackKeys(store.root).signer()))
      .path;
    return [
      { path: 'pack.yaml', content: readFileSync(join(dir, 'pack.yaml'), 'utf8') },
      ...readdirSync(join(dir, 'engrams')).map((f) => ({ path: `engrams/${f}`, content: readFileSync(join(dir, 'engrams', f), 'utf8') })),
    ];
  } finally {
    store.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Recomputes a pack's integrity hash after its files were edited, signature left as it was. */
function reseal(files: Array<{ path: string; content: string }>): Array<{ path: string; content: string }> {
  const hash = new IntegrityHash();
  for (const f of files.filter((x) => x.path.startsWith('engrams/')).sort((a, b) => a.path.localeCompare(b.path)))
    hash.add(f.path.slice('engrams/'.length), parse(f.content));
  return files.map((f) => (f.path === 'pack.yaml' ? { ...f, content: stringify({ ...parse(f.content), integrity: hash.digest() }) } : f));
}

describe('outbound URLs', () => {
  it('knows private, loopback, link-local and reserved addresses from public ones', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '224.0.0.1',
      '198.18.0.1',
    ])
      expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ['8.8.8.8', '1.1.1.1', '140.82.112.3', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPrivateAddress(a), a).toBe(false);
  });

  it('refuses names that resolve to private addresses', async () => {
    const policy = { allowPrivate: false, timeoutMs: 1000, maxBytes: 1000 };
    await expect(checkUrl('https://localhost/pack.json', policy)).rejects.toThrow(/private, loopback or link-local/);
    await expect(checkUrl('https://[::1]/pack.json', policy)).rejects.toThrow(/private/);
    await expect(checkUrl('https://user:pw@example.com/', policy)).rejects.toThrow(/credentials/);
  });
});

describe.each(DATABASES)('installing a pack from a URL (%s)', (kind) => {
  let open: TestHub;
  let strict: TestHub;
  let server: Server;
  let base: string;
  let exported: unknown;
  beforeAll(async () => {
    open = await startTestHub(kind, { allowPrivateUrls: true, outboundTimeoutMs: 800, outboundMaxBytes: 200_000 });
    strict = await startTestHub(kind);
    const src = await open.newOrg('src');
    for (const statement of ['Pin dependencies to exact versions', 'Audit licences before adding a dependency'])
      await open.request('POST', '/engrams', {
        token: src.adminKey,
        body: { statement, scope: 'org:src', visibility: 'public', tags: ['deps'] },
      });
    exported = (await open.request('POST', '/packs/export', { token: src.adminKey, body: { name: 'deps', tags: ['deps'] } })).body;
    server = createServer((req, res) => {
      if (req.url === '/deps.json') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(exported));
      if (req.url === '/moved') return res.writeHead(302, { location: '/deps.json' }).end();
      if (req.url === '/huge') return res.writeHead(200, { 'content-type': 'application/json' }).end('x'.repeat(300_000));
      if (req.url === '/html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
      if (req.url === '/stall') return; // never answers
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    server?.closeAllConnections();
    server?.close();
    await open?.close();
    await strict?.close();
  });

  it('installs from a URL when the deployment allows its address', async () => {
    const dst = await open.newOrg('dst');
    const unsigned = await open.request('POST', '/packs', { token: dst.adminKey, body: { url: `${base}/deps.json` }, template: '/packs' });
    expect(unsigned.status).toBe(409);
    expect(unsigned.body.detail).toMatch(/is not signed/);
    const r = await open.request('POST', '/packs', {
      token: dst.adminKey,
      body: { url: `${base}/deps.json`, allow_untrusted: true },
      template: '/packs',
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: 'deps', action: 'installed' });
    expect(r.body.created).toHaveLength(2);
    const editor = await dst.user('ed', 'editor');
    expect(
      (await open.request('POST', '/packs', { token: editor.key, body: { url: `${base}/deps.json`, allow_untrusted: true } })).status,
    ).toBe(403);
    for (const [path, status, detail] of [
      ['/moved', 502, /redirects are not followed/],
      ['/missing', 502, /answered 404/],
      ['/huge', 502, /more than 200000 bytes|sends 300000 bytes/],
      ['/html', 502, /did not answer with JSON/],
      ['/stall', 502, /did not answer within 800 ms/],
    ] as const) {
      const bad = await open.request('POST', '/packs', {
        token: dst.adminKey,
        body: { url: `${base}${path}`, allow_untrusted: true },
        template: '/packs',
      });
      expect(bad.status, path).toBe(status);
      expect(bad.body.detail, path).toMatch(detail);
    }
  });

  it('refuses what a hosted service must not fetch: plain http, private, loopback and link-local addresses', async () => {
    const org = await strict.newOrg('strict');
    for (const [url, detail] of [
      [`${base}/deps.json`, /only https URLs/],
      ['https://127.0.0.1/deps.json', /private, loopback or link-local address \(127\.0\.0\.1\)/],
      ['https://169.254.169.254/latest/meta-data', /169\.254\.169\.254/],
      ['https://10.0.0.8/pack.json', /private/],
      ['https://[::1]/pack.json', /private/],
      ['https://localhost/pack.json', /private/],
      ['ftp://example.com/pack.json', /only https URLs/],
      ['not a url', /is not a URL/],
    ] as const) {
      const r = await strict.request('POST', '/packs', { token: org.adminKey, body: { url }, template: '/packs' });
      expect(r.status, url).toBe(400);
      expect(r.body.detail, url).toMatch(detail);
    }
    expect((await strict.request('GET', '/packs', { token: org.adminKey })).body.items).toEqual([]);
  });
});
