import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FULL, PARTIAL, RERANK_QUERY, RERANKER, installInvertedReranker } from '../../engine/test/support/rerank-fixture.js';
import { startModelHubStub, type ModelHubStub } from '../../engine/test/support/model-hub-stub.js';
import { localEmbedderProvider } from '../../engine/mcp/embedder-provider.js';

describe.each(DATABASES)('recall, inject, episodes and sessions (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let erin: { id: string; key: string };
  let sam: { id: string; key: string };

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
    erin = await acme.user('erin', 'editor', [{ path: 'eng' }]);
    sam = await acme.user('sam', 'editor', [{ path: 'sales' }]);
    const learn = (token: string, statement: string, scope: string) =>
      hub.request('POST', '/engrams', { token, body: { statement, scope } });
    await learn(erin.key, 'Run database migrations with sqitch before deploying', 'group:eng');
    await learn(erin.key, 'Never deploy on Fridays', 'group:eng');
    await learn(erin.key, 'Deploy previews live for seven days', 'user:erin');
    await learn(sam.key, 'Deploy the pricing page only after legal review', 'group:sales');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('recalls only what the caller may read, BM25 or hybrid, and says which legs ran', async () => {
    const r = await hub.request('POST', '/recall', { token: erin.key, body: { query: 'deploy' }, template: '/recall' });
    expect(r.status).toBe(200);
    expect(r.body.legs).toMatchObject({ bm25: 'ran', vector: 'unavailable' });
    const statements = r.body.results.map((x: { statement: string }) => x.statement);
    expect(statements).toEqual(expect.arrayContaining(['Never deploy on Fridays', 'Deploy previews live for seven days']));
    expect(statements).not.toContain('Deploy the pricing page only after legal review');
    const b = await hub.request('POST', '/recall/bm25', { token: sam.key, body: { query: 'deploy', limit: 5 }, template: '/recall/bm25' });
    expect(b.body.results.map((x: { statement: string }) => x.statement)).toEqual(['Deploy the pricing page only after legal review']);
    expect(b.body.legs.vector).toBe('skipped');
    for (const body of [{}, { query: '   ' }, { query: 'x', limit: 0 }, { query: 'x', limit: 'ten' }, { query: ['x'] }]) {
      const bad = await hub.request('POST', '/recall', { token: erin.key, body, template: '/recall' });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('injects within the budget, narrowed to one scope, at most max_engrams', async () => {
    const all = await hub.request('POST', '/inject', {
      token: erin.key,
      body: { task: 'deploy the migrations', budget: 400 },
      template: '/inject',
    });
    expect(all.status).toBe(200);
    expect(all.body.tokens).toBeLessThanOrEqual(400);
    expect(all.body.text).toContain('sqitch');
    const one = await hub.request('POST', '/inject', {
      token: erin.key,
      body: { task: 'deploy', scope: 'user:erin', protocol: false },
      template: '/inject',
    });
    const ids = [...one.body.blocks.directives, ...one.body.blocks.constraints, ...one.body.blocks.also_consider].map(
      (x: { statement: string }) => x.statement,
    );
    expect(ids).toEqual(['Deploy previews live for seven days']);
    const capped = await hub.request('POST', '/inject', {
      token: erin.key,
      body: { task: 'deploy migrations fridays previews', max_engrams: 1 },
      template: '/inject',
    });
    const n = ['directives', 'constraints', 'also_consider'].reduce((k, b) => k + capped.body.blocks[b].length, 0);
    expect(n).toBe(1);
    expect(capped.body.omitted).toBeGreaterThan(0);
    expect(
      (await hub.request('POST', '/inject', { token: erin.key, body: { task: 'x', scope: 'group:sales' }, template: '/inject' })).status,
    ).toBe(403);
  });

  it('captures episodes and filters the timeline', async () => {
    const e = await hub.request('POST', '/episodes', {
      token: erin.key,
      body: { summary: 'Moved CI to the new runners', channel: 'ci' },
      template: '/episodes',
    });
    expect(e.status).toBe(201);
    expect(e.body).toMatchObject({ summary: 'Moved CI to the new runners', agent: 'erin', channel: 'ci' });
    await hub.request('POST', '/episodes', { token: erin.key, body: { summary: 'Reviewed the pricing copy', agent: 'claude' } });
    const t = await hub.request('GET', '/episodes?q=runners', { token: erin.key, template: '/episodes' });
    expect(t.body.items.map((x: { id: string }) => x.id)).toEqual([e.body.id]);
    expect((await hub.request('GET', '/episodes?agent=claude', { token: erin.key, template: '/episodes' })).body.items).toHaveLength(1);
    expect((await hub.request('GET', '/episodes?from=2999-01-01', { token: erin.key, template: '/episodes' })).body.items).toHaveLength(0);
    expect((await hub.request('GET', '/episodes?from=yesterday', { token: erin.key, template: '/episodes' })).status).toBe(400);
    expect((await hub.request('GET', `/episodes/${e.body.id}`, { token: erin.key, template: '/episodes/{id}' })).body.id).toBe(e.body.id);
    expect((await hub.request('GET', '/episodes/EP-NOPE', { token: erin.key, template: '/episodes/{id}' })).status).toBe(404);
    expect((await hub.request('POST', '/episodes', { token: erin.key, body: { summary: '' }, template: '/episodes' })).status).toBe(400);
  });

  it('starts a session with its injection and ends it with learnings', async () => {
    const s = await hub.request('POST', '/sessions', {
      token: erin.key,
      body: { task: 'deploy on friday?', scope: 'group:eng' },
      template: '/sessions',
    });
    expect(s.status).toBe(201);
    expect(s.body.session).toMatchObject({ status: 'open', scope: 'group:eng' });
    expect(s.body.injection.text).toContain('Never deploy on Fridays');
    const id = s.body.session.id;
    const end = await hub.request('POST', `/sessions/${id}/end`, {
      token: erin.key,
      body: { summary: 'Postponed the deploy', learnings: [{ statement: 'Check the freeze calendar before deploying' }] },
      template: '/sessions/{id}/end',
    });
    expect(end.status).toBe(200);
    expect(end.body.session.status).toBe('ended');
    expect(end.body.learned[0]).toMatchObject({ statement: 'Check the freeze calendar before deploying', scope: 'group:eng' });
    expect((await hub.request('GET', `/sessions/${id}`, { token: erin.key, template: '/sessions/{id}' })).body.engram_ids).toContain(
      end.body.learned[0].id,
    );
    const denied = await hub.request('POST', `/sessions/${id}/end`, {
      token: erin.key,
      body: { learnings: [{ statement: 'x', scope: 'group:sales' }] },
      template: '/sessions/{id}/end',
    });
    expect(denied.status).toBe(403);
    expect(
      (await hub.request('POST', '/sessions/SES-NOPE/end', { token: erin.key, body: {}, template: '/sessions/{id}/end' })).status,
    ).toBe(404);
  });
});

describe.each(DATABASES)('recall and inject rerank where the deployment enables it (%s)', (kind) => {
  let hub: TestHub;
  let key: string;

  beforeAll(async () => {
    const models = mkdtempSync(join(tmpdir(), 'svc-hub-rerank-'));
    installInvertedReranker(models);
    hub = await startTestHub(kind, { reranker: { name: RERANKER, root: models } });
    const org = await hub.newOrg('rr');
    key = (await org.user('ria', 'editor', [{ path: 'eng' }])).key;
    for (const statement of [FULL, PARTIAL])
      expect((await hub.request('POST', '/engrams', { token: key, body: { statement, scope: 'group:eng' } })).status).toBe(201);
  }, 60_000);
  afterAll(async () => hub?.close());

  it('reorders the head with the cross-encoder and says so; the BM25 route does not', async () => {
    const r = await hub.request('POST', '/recall', { token: key, body: { query: RERANK_QUERY }, template: '/recall' });
    expect(r.body.reranker).toMatchObject({ state: 'ran', model: RERANKER });
    expect(r.body.results.map((x: { statement: string }) => x.statement)).toEqual([PARTIAL, FULL]);
    const b = await hub.request('POST', '/recall/bm25', { token: key, body: { query: RERANK_QUERY }, template: '/recall/bm25' });
    expect(b.body.reranker).toBeUndefined();
    expect(b.body.results.map((x: { statement: string }) => x.statement)).toEqual([FULL, PARTIAL]);
    const i = await hub.request('POST', '/inject', { token: key, body: { task: RERANK_QUERY, protocol: false }, template: '/inject' });
    expect(i.body.reranker).toMatchObject({ state: 'ran' });
    expect(i.body.text.indexOf(PARTIAL)).toBeLessThan(i.body.text.indexOf(FULL));
  });
});

describe.each(DATABASES)('the hub embeds on the server, with the same model supply (%s)', (kind) => {
  let hub: TestHub;
  let models: ModelHubStub;
  let key: string;

  beforeAll(async () => {
    models = await startModelHubStub();
    const data = mkdtempSync(join(tmpdir(), 'svc-hub-models-'));
    const env = {
      ...process.env,
      HF_ENDPOINT: models.url,
      SVC_MODEL_ARCHIVE_URL: `${models.url}/archives`,
      SVC_MODEL_BASE_URL: '',
      SVC_EMBED: '',
      SVC_EMBED_MODEL: '',
    };
    hub = await startTestHub(kind, { embedder: localEmbedderProvider(data, { env }) });
    const org = await hub.newOrg('emb');
    key = (await org.user('eva', 'editor', [{ path: 'eng' }])).key;
    expect(
      (await hub.request('POST', '/engrams', { token: key, body: { statement: 'The car must be quick', scope: 'group:eng' } })).status,
    ).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    await models?.close();
  });

  it('pulls the model into its data folder on the first recall and reports the legs as the CLI does', async () => {
    const r = await hub.request('POST', '/recall', { token: key, body: { query: 'car' }, template: '/recall' });
    expect(r.status).toBe(200);
    expect(r.body.legs).toEqual({ bm25: 'ran', vector: 'ran', model: 'bge-small-en-v1.5' });
    expect(models.requests.some((q) => q.path.includes('/resolve/'))).toBe(true);
  });
});
