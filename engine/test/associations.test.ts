import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { feedback } from '../ops/feedback.js';
import { forget } from '../ops/forget.js';
import { recall } from '../ops/recall.js';
import { endSession, startSession } from '../ops/sessions.js';
import { recallHitJson } from '../ops/result-json.js';
import { MAX_ASSOCIATIONS } from '../ops/associations.js';
import type { OpContext } from '../ops/context.js';
import type { EngramDoc } from '../model/engram-types.js';

let root: string;
let store: LocalStore;
const T0 = Date.parse('2026-06-01T12:00:00Z');
const ctx: OpContext = { now: () => new Date(T0) };

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-assoc-')), 'store');
  store = await LocalStore.open(root);
});
afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

const add = async (statement: string, c: OpContext = ctx): Promise<string> => (await learn(store, { statement }, c)).engram.id;

/** Learns the statements one after another inside one svc session; returns their ids. */
async function inSession(...statements: string[]): Promise<string[]> {
  const { session } = await startSession(store, { fast: true }, ctx);
  const c = { ...ctx, sessionId: session.id };
  const ids: string[] = [];
  for (const s of statements) ids.push(await add(s, c));
  await endSession(store, session.id, {}, ctx);
  return ids;
}

async function links(id: string): Promise<Array<[string, string, number]>> {
  const e = (await store.get(id)) as EngramDoc;
  return (e.associations ?? []).map((a) => [a.target, a.type, a.strength] as [string, string, number]).sort();
}

/** Unrelated engrams, so that BM25's IDF sees the test's words as rare, as in a real store. */
async function filler(n = 60): Promise<void> {
  for (let i = 0; i < n; i++) await add(`Office fact ${i}: meeting room ${i} seats ${i % 9} people on floor ${i % 5}`);
}

describe('associations form on writes', () => {
  it('links what one session learns one after another, strongest between neighbours', async () => {
    const [a, b, c, d] = await inSession(
      'The billing service runs on port 8080',
      'Its health check lives at /healthz',
      'Restarts go through the ops channel',
      'Deploys happen on Tuesdays',
    );
    expect(await links(a!)).toEqual([
      [b!, 'temporal', 0.5],
      [c!, 'temporal', 0.25],
    ]);
    expect(await links(c!)).toEqual(
      [
        [a!, 'temporal', 0.25],
        [b!, 'temporal', 0.5],
        [d!, 'temporal', 0.5],
      ].sort(),
    );
    const e = (await store.get(a!)) as EngramDoc;
    expect(e.associations![0]!.target_type).toBe('engram');
    expect(e.associations![0]!.updated_at).toBe(new Date(T0).toISOString());
  });

  it('forms the links when the session ends, not while it runs', async () => {
    const { session } = await startSession(store, { fast: true }, ctx);
    const c = { ...ctx, sessionId: session.id };
    const a = await add('The billing service runs on port 8080', c);
    const b = await add('Its health check lives at /healthz', c);
    expect(await links(a)).toEqual([]);
    await endSession(store, session.id, { learnings: [{ statement: 'Restarts go through the ops channel' }] }, ctx);
    expect(await links(a)).toHaveLength(2);
    expect((await links(b)).map(([, type, strength]) => [type, strength])).toEqual([
      ['temporal', 0.5],
      ['temporal', 0.5],
    ]);
  });

  it('never links across sessions or outside one', async () => {
    const [a] = await inSession('The billing service runs on port 8080');
    const [b] = await inSession('The search service runs on port 9200');
    const c = await add('The mail service runs on port 25');
    const d = await add('The chat service runs on port 5222');
    for (const id of [a, b, c, d]) expect(await links(id!)).toEqual([]);
  });

  it('a learning that deduplicates into an existing engram links it too', async () => {
    const old = await add('Builds use Node 20');
    const [x, same] = await inSession('CI runs on GitHub Actions', 'Builds use Node 20');
    expect(same).toBe(old);
    expect(await links(old)).toEqual([[x!, 'temporal', 0.5]]);
  });

  it('co-access: positive feedback given together links, and each confirmation strengthens', async () => {
    const a = await add('The billing service runs on port 8080');
    const b = await add('Its health check lives at /healthz');
    const c = await add('Deploys happen on Tuesdays');
    await feedback(
      store,
      [
        { id: a, signal: 'positive' },
        { id: b, signal: 'positive' },
        { id: c, signal: 'negative' },
      ],
      ctx,
    );
    expect(await links(a)).toEqual([[b, 'co_accessed', 0.15]]);
    expect(await links(b)).toEqual([[a, 'co_accessed', 0.15]]);
    expect(await links(c)).toEqual([]);
    await feedback(
      store,
      [
        { id: b, signal: 'positive' },
        { id: a, signal: 'positive' },
      ],
      ctx,
    );
    expect(await links(a)).toEqual([[b, 'co_accessed', 0.3]]);
  });

  it('keeps at most MAX_ASSOCIATIONS links per engram, the strongest', async () => {
    const hub = await add('The hub engram');
    const ids: string[] = [];
    for (let i = 0; i < MAX_ASSOCIATIONS + 3; i++) ids.push(await add(`Satellite engram number ${i}`));
    await feedback(
      store,
      [
        { id: hub, signal: 'positive' },
        { id: ids[0]!, signal: 'positive' },
      ],
      ctx,
    );
    await feedback(
      store,
      [
        { id: hub, signal: 'positive' },
        { id: ids[0]!, signal: 'positive' },
      ],
      ctx,
    );
    for (const id of ids.slice(1))
      await feedback(
        store,
        [
          { id: hub, signal: 'positive' },
          { id, signal: 'positive' },
        ],
        ctx,
      );
    const kept = await links(hub);
    expect(kept).toHaveLength(MAX_ASSOCIATIONS);
    expect(kept).toContainEqual([ids[0]!, 'co_accessed', 0.3]);
  });
});

describe('recall spreads activation along associations', () => {
  beforeEach(() => filler());

  it('brings in an associate no ranking found, says via which hit, and ranks it below that hit', async () => {
    const [source, associate] = await inSession('The staging database is rebuilt from backups every night', 'Ask Dana before touching it');
    const r = await recall(store, 'staging database', { fast: true });
    const ids = r.hits.map((h) => h.engram.id);
    expect(ids[0]).toBe(source);
    const brought = r.hits.find((h) => h.engram.id === associate)!;
    expect(brought.found_by).toEqual(['association']);
    expect(brought.via).toEqual({ id: source, type: 'temporal', strength: 0.5 });
    expect(brought.score).toBeLessThanOrEqual(r.hits[0]!.score * brought.via!.strength);
    expect(recallHitJson(brought)).toMatchObject({ found_by: ['association'], via: { id: source, type: 'temporal', strength: 0.5 } });
    expect(recallHitJson(r.hits[0]!)).not.toHaveProperty('via');
  });

  it('never lifts an associate over a strong direct match', async () => {
    await inSession('The staging database is rebuilt from backups every night', 'Ask Dana before touching it');
    const direct = await add('Staging database credentials rotate monthly on the staging database host');
    const r = await recall(store, 'staging database credentials', { fast: true });
    const order = r.hits.map((h) => h.found_by.join('+'));
    expect(r.hits[0]!.engram.id).toBe(direct);
    expect(order.indexOf('association')).toBeGreaterThan(order.lastIndexOf('bm25'));
  });

  it('adds to a hit the rankings found too: of two equal matches, the one learned with the best hit rises', async () => {
    const other = await add('Said the lake painting took two weeks');
    const [a, b] = await inSession('Melanie painted a sunrise over the lake', 'She said the lake painting took two weeks');
    const r = await recall(store, 'lake painting sunrise', { fast: true });
    expect(r.hits.slice(0, 3).map((h) => h.engram.id)).toEqual([a, b, other]);
    const pushed = r.hits[1]!;
    expect(pushed.found_by).toEqual(['bm25']);
    expect(pushed.via).toEqual({ id: a, type: 'temporal', strength: 0.5 });
    expect(pushed.score).toBeGreaterThan(r.hits[2]!.score);
  });

  it('never brings back a retired associate', async () => {
    const [, associate] = await inSession('The staging database is rebuilt from backups every night', 'Ask Dana before touching it');
    await forget(store, { target: associate! }, ctx);
    const r = await recall(store, 'staging database', { fast: true });
    expect(r.hits.map((h) => h.engram.id)).not.toContain(associate);
  });

  it('recall writes nothing', async () => {
    await inSession('The staging database is rebuilt from backups every night', 'Ask Dana before touching it');
    const dir = join(root, 'engrams');
    const before = readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8'));
    const events = (await store.listEvents({})).length;
    await recall(store, 'staging database', { fast: true });
    expect(readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8'))).toEqual(before);
    expect((await store.listEvents({})).length).toBe(events);
  });
});
