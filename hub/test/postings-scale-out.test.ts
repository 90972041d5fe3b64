import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub } from './support/hub-fixture.js';
import { startHubProcess, type HubProcess } from './support/hub-process.js';

// Each hub process holds BM25 postings in memory (hub/data/postings-cache.ts). Two processes on
// one PostgreSQL, as behind a load balancer: right after a write acknowledged by one, the other
// answers as the database stands (new engrams found, retired and rescoped ones gone, scores equal).

describe.runIf(DATABASES.includes('postgres'))('recall across two hub processes holding postings in memory', () => {
  let hub: TestHub;
  let child: HubProcess;
  let writer: string;
  let reader: string;

  beforeAll(async () => {
    hub = await startTestHub('postgres');
    child = await startHubProcess({ DATABASE_URL: hub.database.url! });
    const org = await hub.newOrg('twins');
    writer = (await org.user('wes', 'editor', [{ path: 'eng' }, { path: 'ops' }])).key;
    reader = (await org.user('rae', 'editor', [{ path: 'eng' }])).key;
  }, 60_000);
  afterAll(async () => {
    await child?.stop();
    await hub?.close();
  });

  const call = async (base: string, method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return json;
  };
  const recall = async (base: string, token: string, query: string): Promise<Array<{ id: string; score: number }>> =>
    (await call(base, 'POST', '/recall/bm25', token, { query, limit: 20 })).results.map((r: { id: string; score: number }) => ({
      id: r.id,
      score: r.score,
    }));

  it('finds a write made through the other process at once, with the same scores', async () => {
    const bases = () => [hub.url, child.url];
    // Other engrams, so that a word in one engram of many weighs (BM25's idf).
    for (const topic of ['lunch menus', 'parking spots', 'office plants', 'printer toner', 'meeting rooms', 'coffee beans']) {
      await call(hub.url, 'POST', '/engrams', writer, { statement: `Ask facilities about ${topic}`, scope: 'group:eng' });
    }
    // Both processes load their postings before the writes below.
    for (const base of bases()) expect(await recall(base, reader, 'deploy canary')).toEqual([]);
    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliett', 'kilo', 'lima'];
    for (const [i, word] of words.entries()) {
      const [writeTo, readFrom] = i % 2 === 0 ? bases() : bases().reverse();
      const made = await call(writeTo!, 'POST', '/engrams', writer, {
        statement: `Deploy the ${word} canary before the fleet, then watch errors`,
        scope: 'group:eng',
      });
      const found = await recall(readFrom!, reader, `deploy ${word} canary`);
      expect(found[0]?.id).toBe(made.id);
      expect(found).toHaveLength(i + 1);
      expect(await recall(writeTo!, reader, `deploy ${word} canary`)).toEqual(found);
    }
  });

  it('drops an engram retired or moved out of sight through the other process', async () => {
    const gone = await call(hub.url, 'POST', '/engrams', writer, {
      statement: 'Rotate the signing keys every quarter',
      scope: 'group:eng',
    });
    const moved = await call(hub.url, 'POST', '/engrams', writer, { statement: 'Rotate the backup tapes every month', scope: 'group:eng' });
    expect((await recall(child.url, reader, 'rotate every')).map((r) => r.id).sort()).toEqual([gone.id, moved.id].sort());
    await call(hub.url, 'DELETE', `/engrams/${gone.id}`, writer);
    await call(hub.url, 'PATCH', `/engrams/${moved.id}`, writer, { scope: 'group:ops' });
    expect(await recall(child.url, reader, 'rotate every')).toEqual([]);
    // The writer still reads group:ops: the moved engram, scored over what the writer may read.
    const forWriter = await recall(child.url, writer, 'rotate every');
    expect(forWriter.map((r) => r.id)).toEqual([moved.id]);
    expect(await recall(hub.url, writer, 'rotate every')).toEqual(forWriter);
  });
});
