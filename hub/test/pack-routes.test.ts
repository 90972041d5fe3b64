import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

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

  const upload = async (token: string, files: Array<{ path: string; content: string }>) => {
    const form = new FormData();
    for (const f of files) form.append(f.path, new Blob([f.content], { type: 'application/yaml' }), f.path.split('/').pop());
    const res = await fetch(`${hub.url}/api/v1/packs`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    return { status: res.status, body: await res.json() };
  };

  it('exports a scope as files, installs them into another organization, lists and uninstalls', async () => {
    const a = acme.adminKey;
    for (const statement of ['Run the linter before pushing', 'Keep functions under 50 lines', 'Name tests after behaviour'])
      await hub.request('POST', '/engrams', { token: a, body: { statement, scope: 'org:acme', visibility: 'public', tags: ['style'] } });
    await hub.request('POST', '/engrams', { token: a, body: { statement: 'Private style note', scope: 'org:acme', tags: ['style'] } });
    const ex = await hub.request('POST', '/packs/export', { token: a, body: { name: 'style', scope: 'org:acme', tags: ['style'], description: 'House style' }, template: '/packs/export' });
    expect(ex.status).toBe(200);
    expect(ex.body).toMatchObject({ name: 'style', engram_count: 3, left_out_counts: { private: 1 } });
    expect(ex.body.files.map((f: { path: string }) => f.path)).toEqual(expect.arrayContaining(['pack.yaml']));
    expect(ex.body.files).toHaveLength(4);
    expect(JSON.stringify(ex.body)).not.toMatch(/\/tmp\//);

    const editor = await beta.user('ed', 'editor');
    expect((await upload(editor.key, ex.body.files)).status).toBe(403);
    const inst = await upload(beta.adminKey, ex.body.files);
    expect(inst.status).toBe(201);
    expect(inst.body).toMatchObject({ name: 'style', action: 'installed' });
    expect(inst.body.created).toHaveLength(3);
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
    await hub.request('POST', '/engrams', { token: acme.adminKey, body: { statement: 'Review every migration', scope: 'org:acme', visibility: 'public', tags: ['db'] } });
    const ex = await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'db', tags: ['db'] } });
    const tampered = ex.body.files.map((f: { path: string; content: string }) => (f.path.startsWith('engrams/') ? { ...f, content: f.content.replace('Review every migration', 'Skip migration reviews') } : f));
    const r = await upload(beta.adminKey, tampered);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ status: 409, type: expect.stringMatching(/conflict$/) });
    expect(r.body.detail).toMatch(/failed its integrity check/);
    expect(r.body.detail).not.toMatch(/\/tmp\//);
    expect((await hub.request('GET', '/packs', { token: beta.adminKey })).body.items.map((p: { name: string }) => p.name)).not.toContain('db');
    expect((await upload(beta.adminKey, [{ path: '../etc/passwd', content: 'x' }])).status).toBe(400);
    expect((await upload(beta.adminKey, [{ path: 'engrams/x.yaml', content: 'statement: x' }])).status).toBe(400);
    expect((await hub.request('POST', '/packs', { token: beta.adminKey, body: { files: [] } })).status).toBe(415);
    expect((await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'Bad Name!' }, template: '/packs/export' })).status).toBe(400);
    expect((await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'none', tags: ['nothing-has-this'] }, template: '/packs/export' })).status).toBe(404);
    expect((await hub.request('POST', '/packs/export', { token: beta.adminKey, body: { name: 'steal', scope: 'org:acme' }, template: '/packs/export' })).status).toBe(403);
  });
});
