import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// Idempotency-Key on writes: what the engine's outbox relies on when it retries a write whose
// answer it never saw.

describe.each(DATABASES)('Idempotency-Key (%s)', (kind) => {
  let hub: TestHub;
  let org: TestOrg;
  beforeAll(async () => {
    hub = await startTestHub(kind);
    org = await hub.newOrg('idem');
  }, 60_000);
  afterAll(async () => hub?.close());

  const create = (key: string, statement: string, token = org.adminKey) =>
    hub.request('POST', '/engrams', { token, body: { statement, scope: 'org:idem' }, headers: { 'idempotency-key': key } });
  const count = async (statement: string) =>
    (await hub.request('GET', '/engrams?limit=200', { token: org.adminKey })).body.items.filter(
      (e: { statement: string }) => e.statement === statement,
    ).length;

  it('answers a repeated write with its first answer, writing once, even when the repeats race', async () => {
    const first = await create('k-1', 'Idempotent writes happen once');
    expect(first.status).toBe(201);
    const again = await create('k-1', 'Idempotent writes happen once');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('svc-learn-action')).toBe('created');
    expect(again.body.id).toBe(first.body.id);

    const racing = await Promise.all(Array.from({ length: 6 }, () => create('k-race', 'Racing retries write once')));
    expect(new Set(racing.map((r) => r.status))).toEqual(new Set([201]));
    expect(new Set(racing.map((r) => r.body.id)).size).toBe(1);
    expect(await count('Racing retries write once')).toBe(1);
  });

  it('refuses the key with another request, frees it when the write failed, and keeps users apart', async () => {
    await create('k-2', 'The first request of k-2');
    const other = await create('k-2', 'Another request under k-2');
    expect(other.status).toBe(422);
    expect(other.body.detail).toMatch(/Idempotency-Key "k-2" was used with another request/);
    expect(await count('Another request under k-2')).toBe(0);

    const bad = await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Fails first', scope: 'group:elsewhere' },
      headers: { 'idempotency-key': 'k-3' },
    });
    expect(bad.status).toBe(403);
    expect((await create('k-3', 'Fails first, then succeeds')).status).toBe(201);

    const bea = await org.user('bea', 'editor', [{ path: 'team' }]);
    const hers = await hub.request('POST', '/engrams', {
      token: bea.key,
      body: { statement: 'Her own k-1', scope: 'group:team' },
      headers: { 'idempotency-key': 'k-1' },
    });
    expect(hers.status).toBe(201);
    expect(hers.headers.get('idempotent-replayed')).toBeNull();

    const junk = await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'x', scope: 'org:idem' },
      headers: { 'idempotency-key': 'has space' },
    });
    expect(junk.status).toBe(400);
  });
});
