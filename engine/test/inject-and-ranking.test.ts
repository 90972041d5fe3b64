import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from 'vitest';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn, type LearnInput } from '../ops/learn.js';
import { feedback } from '../ops/feedback.js';
import { forget } from '../ops/forget.js';
import { pin } from '../ops/pin.js';
import { recall } from '../ops/recall.js';
import { batchDecay } from '../ops/decay.js';
import { estimateTokens, inject, LEARNING_PROTOCOL } from '../ops/inject.js';
import { detectPolarity } from '../model/polarity.js';
import type { OpContext } from '../ops/context.js';

let root: string;
let store: LocalStore;
const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T12:00:00Z');
const at = (ms: number): OpContext => ({ now: () => new Date(ms) });

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-inject-')), 'store');
  store = await LocalStore.open(root);
});
afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

const add = async (statement: string, extra: Partial<LearnInput> = {}, ms = T0): Promise<string> =>
  (await learn(store, { statement, ...extra }, at(ms))).engram.id;

describe('polarity', () => {
  it.each([
    ['Never force-push to main', 'dont'],
    ["Don't commit generated files", 'dont'],
    ['Do not log personal data', 'dont'],
    ['Avoid global state in services', 'dont'],
    ['Secrets must not be committed', 'dont'],
    ['Always run the tests before pushing', 'do'],
    ['Use pnpm for installs', 'do'],
    ['The staging cluster lives in eu-west-1', null],
  ])('%s -> %s', (statement, expected) => {
    expect(detectPolarity(statement)).toBe(expected);
  });
});

describe('inject', () => {
  // 215 engrams written one durable write at a time cost seconds: seed them once into a template
  // store, and give each test its own copy (timestamps kept, so the copy opens without a reconcile).
  let template: string;
  beforeAll(async () => {
    template = join(mkdtempSync(join(tmpdir(), 'svc-inject-template-')), 'store');
    const seeding = store;
    store = await LocalStore.open(template);
    try {
      await add('Never force-push to the main branch of the deploy repository');
      await add('Use pnpm to install packages in the deploy repository');
      await add('Deploy repository releases are tagged with semantic versions');
      await add('Run the database migrations before each deploy');
      for (let i = 0; i < 60; i++)
        await add(`Deploy note ${i}: the deploy pipeline step ${i} writes logs to bucket number ${i} in region ${i % 7}`);
      // Unrelated engrams, so that BM25's IDF sees the deploy words as rare, as in a real store.
      for (let i = 0; i < 150; i++) await add(`Office fact ${i}: meeting room ${i} seats ${i % 9} people on floor ${i % 5}`);
      await add('The office coffee machine is descaled on Mondays');
    } finally {
      store.close();
      store = seeding;
    }
  });
  afterAll(() => rmSync(join(template, '..'), { recursive: true, force: true }));
  beforeEach(async () => {
    store.close();
    rmSync(root, { recursive: true, force: true });
    cpSync(template, root, { recursive: true, preserveTimestamps: true });
    store = await LocalStore.open(root);
  });

  it('formats directives, constraints and also-consider, then the learning protocol', async () => {
    const r = await inject(store, 'push a release of the deploy repository', { fast: true });
    expect(r.blocks.constraints.map((e) => e.statement)).toContain('Never force-push to the main branch of the deploy repository');
    expect(r.text).toMatch(/^## DIRECTIVES\n- /);
    expect(r.text).toContain('## CONSTRAINTS\n- Never force-push to the main branch of the deploy repository (ENG-');
    expect(r.text.endsWith(LEARNING_PROTOCOL)).toBe(true);
    expect(r.text).not.toContain('coffee');
    expect(LEARNING_PROTOCOL).toMatch(/supersedes/);
    const order = ['## DIRECTIVES', '## CONSTRAINTS', '## LEARNING PROTOCOL'].map((h) => r.text.indexOf(h));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const bare = await inject(store, 'push a release of the deploy repository', { fast: true, withProtocol: false });
    expect(bare.text).not.toContain('LEARNING PROTOCOL');
  });

  it('estimates tokens as four ASCII characters or one other character each, a character beyond the BMP as one', () => {
    const byCharacter = (text: string): number => {
      let ascii = 0;
      let other = 0;
      for (const ch of text) {
        if (ch.charCodeAt(0) < 128) ascii++;
        else other++;
      }
      return Math.ceil(ascii / 4) + other;
    };
    const texts = [
      '',
      'a',
      'abcd',
      'abcde',
      'naïve café',
      '日本語のテキスト',
      'emoji 🚀🚀 ok',
      'lone \ud800 high',
      'lone \udc00 low',
      '\ud800a\udc00',
      'x'.repeat(9999) + 'é',
    ];
    for (const text of texts) expect(estimateTokens(text), JSON.stringify(text)).toBe(byCharacter(text));
  });

  it.each([50, 80, 120, 200, 500, 1000, 2000, 4000, 8000])('never exceeds a budget of %i tokens', async (budget) => {
    const r = await inject(store, 'deploy pipeline logs bucket region release repository', { fast: true, budget });
    expect(r.tokens).toBeLessThanOrEqual(budget);
    expect(estimateTokens(r.text)).toBe(r.tokens);
    const shown = r.blocks.directives.length + r.blocks.constraints.length + r.blocks.also_consider.length;
    if (budget >= 500) expect(shown).toBeGreaterThan(3);
    if (budget <= 120) expect(r.omitted).toBeGreaterThan(0);
  });

  it('pinned engrams bypass the relevance gate', async () => {
    const coffee = (await store.list({})).find((e) => e.statement.includes('coffee'))!;
    await pin(store, coffee.id, true);
    const r = await inject(store, 'push a release of the deploy repository', { fast: true });
    expect(r.blocks.directives.map((e) => e.id)).toContain(coffee.id);
    expect(r.blocks.directives.find((e) => e.id === coffee.id)!.pinned).toBe(true);
  });

  it('superseded engrams step aside for what supersedes them; expired ones are skipped', async () => {
    const old = (await store.list({})).find((e) => e.statement.startsWith('Use pnpm'))!;
    const successor = await add('Use bun to install packages in the deploy repository', { supersedes: [old.id] });
    const r = await inject(store, 'install packages in the deploy repository', { fast: true });
    const ids = Object.values(r.blocks)
      .flat()
      .map((e) => e.id);
    expect(ids).toContain(successor);
    expect(ids).not.toContain(old.id);

    const doc = (await store.get(successor))!;
    await store.write(async (tx) => tx.put({ ...doc, temporal: { ...doc.temporal!, valid_until: '2020-01-01T00:00:00Z' } }));
    const later = await inject(store, 'install packages in the deploy repository', { fast: true });
    expect(
      Object.values(later.blocks)
        .flat()
        .map((e) => e.id),
    ).not.toContain(successor);
  });

  it('leaves out retired and candidate engrams', async () => {
    const c = await add('Deploy repository pushes need two reviewers', { status: 'candidate' });
    const gone = (await store.list({})).find((e) => e.statement.startsWith('Never force-push'))!;
    await forget(store, { target: gone.id }, at(T0));
    const r = await inject(store, 'push to the deploy repository with reviewers', { fast: true });
    const ids = Object.values(r.blocks)
      .flat()
      .map((e) => e.id);
    expect(ids).not.toContain(c);
    expect(ids).not.toContain(gone.id);
  });
});

describe('feedback, decay and pinning shape the order', () => {
  it('positive feedback lifts and negative feedback lowers an equally relevant engram', async () => {
    const a = await add('Cache invalidation uses versioned keys in service alpha');
    const b = await add('Cache invalidation uses versioned keys in service omega');
    const first = async () =>
      (await recall(store, 'cache invalidation versioned keys', { fast: true, now: new Date(T0) })).hits[0]!.engram.id;
    const initial = await first();
    const other = initial === a ? b : a;
    await feedback(store, [{ id: other, signal: 'positive' }], at(T0));
    expect(await first()).toBe(other);
    await feedback(
      store,
      [
        { id: other, signal: 'negative' },
        { id: other, signal: 'negative' },
        { id: other, signal: 'negative' },
      ],
      at(T0),
    );
    expect(await first()).toBe(initial);
  });

  it('decay lowers an unused engram below a fresh one; pinned, it is still injected', async () => {
    const old = await add('Feature flags are removed after two releases', {}, T0);
    const fresh = await add('Feature flags are removed after two sprints', {}, T0 + 200 * DAY);
    const now = T0 + 200 * DAY;
    const ranked = async () =>
      (await recall(store, 'feature flags removed', { fast: true, now: new Date(now) })).hits.map((h) => h.engram.id);
    expect((await ranked())[0]).toBe(fresh);
    const report = await batchDecay(store, {}, at(now));
    expect(report.processed).toBe(2);
    expect(report.decayed).toBe(1);
    expect(report.skipped).toBe(1);
    expect((await store.get(old))!.activation!.retrieval_strength).toBeLessThan(0.7);
    const before = await ranked();
    expect(before.indexOf(old)).toBeGreaterThan(before.indexOf(fresh));
    await pin(store, old, true);
    const r = await inject(store, 'an unrelated task about printers', { fast: true, now: new Date(now) });
    expect(r.blocks.directives.map((e) => e.id)).toEqual([old]);
  });

  it('batch decay turns long-unused engrams dormant, spares the context scope, and does not decay twice', async () => {
    const gone = await add('Legacy build uses grunt', { scope: 'project:legacy' }, T0);
    const kept = await add('Current build uses vite', { scope: 'project:app' }, T0);
    const now = T0 + 3 * 365 * DAY;
    const first = await batchDecay(store, { contextScope: 'project:app' }, at(now));
    expect(first.transitions).toEqual([expect.objectContaining({ id: gone, from: 'active', to: 'dormant' })]);
    expect((await store.get(gone))!.status).toBe('dormant');
    expect((await store.get(kept))!.activation!.retrieval_strength).toBe(0.7);
    const strength = (await store.get(gone))!.activation!.retrieval_strength;
    const again = await batchDecay(store, { contextScope: 'project:app' }, at(now + 1000));
    expect(again.decayed).toBe(0);
    expect((await store.get(gone))!.activation!.retrieval_strength).toBe(strength);
  });
});
