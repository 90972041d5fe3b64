import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn, type LearnInput } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { systemContext } from '../ops/context.js';

// BM25 ranking quality through a real store: engrams learned through the engine, ranked by the
// store's full-text search (the BM25 leg of recall) and by recall itself.

let root: string;
let store: LocalStore;
const ids: Record<string, string> = {};

async function add(key: string, input: LearnInput): Promise<void> {
  ids[key] = (await learn(store, input, systemContext)).engram.id;
}

/** Keys of the engrams the BM25 leg returns, best first. */
async function bm25(query: string, mode: 'any' | 'all' = 'any'): Promise<string[]> {
  const byId = new Map(Object.entries(ids).map(([k, v]) => [v, k]));
  return (await store.searchText(query, 50, mode)).map((h) => byId.get(h.engram.id) ?? h.engram.id);
}

beforeAll(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-bm25-')), 'store');
  store = await LocalStore.open(root);

  // Field weights: "kafka" in a different field of each, every engram the same length.
  await add('in-statement', { statement: 'kafka alpha bravo', tags: ['charlie'], domain: 'delta', rationale: 'echo foxtrot' });
  await add('in-tags', { statement: 'golf hotel india', tags: ['kafka'], domain: 'juliet', rationale: 'kilo lima' });
  await add('in-domain', { statement: 'mike november oscar', tags: ['papa'], domain: 'kafka', rationale: 'quebec romeo' });
  await add('in-rationale', { statement: 'sierra tango uniform', tags: ['victor'], domain: 'whiskey', rationale: 'kafka xray' });

  // Stemming.
  await add('deploy', { statement: 'Deployments run on Fridays after the freeze' });
  await add('tests', { statement: 'Tests run in CI on every push' });

  // Question words: one engram made of them, one that answers.
  await add('chatter', { statement: 'What did you do? Where is it? How is it going, and why?' });
  await add('answer', { statement: 'Caroline researched adoption agencies in the spring' });

  // Rare names: many engrams about the team meeting, one about Zoltan.
  for (let i = 0; i < 12; i++)
    await add(`meeting-${i}`, { statement: `The team meeting number ${i} covered the roadmap and meeting notes` });
  await add('zoltan', { statement: 'Zoltan prefers short meetings with a written agenda' });

  // Scripts.
  await add('zh', { statement: '我们使用数据库存储用户数据' });
  await add('ja', { statement: 'データベースを使ってユーザー情報を保存する' });
  await add('ko', { statement: '우리는 데이터베이스를 사용합니다' });
  await add('th', { statement: 'เราใช้ฐานข้อมูลเก็บข้อมูลผู้ใช้' });
  await add('ru', { statement: 'Мы храним пользователей в базе данных PostgreSQL' });
  await add('ru-yo', { statement: 'Ёлка стоит в холле до января' });
  await add('el', { statement: 'Η βάση δεδομένων τρέχει στον διακομιστή' });
  await add('fr', { statement: 'La crème brûlée du café est excellente' });
  await add('de', { statement: 'Die Straße vor dem Büro ist gesperrt' });
});

afterAll(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

describe('BM25 through the store', () => {
  it('finds engrams by porter-stemmed words', async () => {
    expect(await bm25('deployment')).toEqual(['deploy']);
    expect(await bm25('friday deploying')).toEqual(['deploy']);
    expect(await bm25('running')).toEqual(expect.arrayContaining(['deploy', 'tests']));
  });

  it('weighs the statement above tags and domain, and those above the rationale', async () => {
    const ranked = await bm25('kafka');
    expect(ranked).toHaveLength(4);
    expect(ranked[0]).toBe('in-statement');
    expect(ranked.slice(1, 3).sort()).toEqual(['in-domain', 'in-tags']);
    expect(ranked[3]).toBe('in-rationale');
  });

  it('ignores question words: a question finds its answer, not other questions', async () => {
    const ranked = await bm25('What did Caroline research?');
    expect(ranked[0]).toBe('answer');
    expect(ranked).not.toContain('chatter');
    const r = await recall(store, 'Where did Caroline do her research?', { limit: 10 });
    expect(r.hits[0]?.engram.id).toBe(ids.answer);
  });

  it('ranks the engram naming a rare name first', async () => {
    expect((await bm25('What does Zoltan think about the team meeting?'))[0]).toBe('zoltan');
    expect((await bm25('meeting zoltan'))[0]).toBe('zoltan');
    const r = await recall(store, 'what did zoltan say about meetings', { limit: 5 });
    expect(r.hits[0]?.engram.id).toBe(ids.zoltan);
  });

  it('finds Chinese, Japanese, Korean and Thai words inside unspaced text', async () => {
    expect(await bm25('数据库')).toEqual(['zh']);
    expect(await bm25('用户数据', 'all')).toEqual(['zh']);
    expect(await bm25('データベース')).toEqual(['ja']);
    expect(await bm25('ユーザー情報')).toEqual(['ja']);
    expect(await bm25('데이터베이스')).toEqual(['ko']);
    expect(await bm25('ฐานข้อมูล')).toEqual(['th']);
    const r = await recall(store, '数据库', { limit: 10 });
    expect(r.hits.map((h) => h.engram.id)).toEqual([ids.zh]);
  });

  it('finds Cyrillic, Greek and accented Latin words, with or without their accents', async () => {
    expect(await bm25('базе данных')).toEqual(['ru']);
    expect(await bm25('postgresql')).toEqual(['ru']);
    expect(await bm25('ёлка')).toEqual(['ru-yo']);
    expect(await bm25('елка')).toEqual(['ru-yo']);
    expect(await bm25('βάση δεδομένων')).toEqual(['el']);
    expect(await bm25('βαση')).toEqual(['el']);
    expect(await bm25('ΔΙΑΚΟΜΙΣΤΗ')).toEqual(['el']);
    expect(await bm25('crème brûlée')).toEqual(['fr']);
    expect(await bm25('creme brulee cafe')).toEqual(['fr']);
    expect(await bm25('strasse')).toEqual(['de']);
    expect(await bm25('büro')).toEqual(['de']);
    expect(await bm25('buro')).toEqual(['de']);
  });

  it('matches forget-by-text on every word', async () => {
    expect(await bm25('Caroline adoption', 'all')).toEqual(['answer']);
    expect(await bm25('Caroline zebra', 'all')).toEqual([]);
  });
});
