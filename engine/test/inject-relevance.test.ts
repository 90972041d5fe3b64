import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { feedback } from '../ops/feedback.js';
import { pin } from '../ops/pin.js';
import { recall, type RecallHit, type TeamSource } from '../ops/recall.js';
import { inject } from '../ops/inject.js';
import { systemContext } from '../ops/context.js';

// Scores are bounded as the README says (the best is 1), injection ignores matches that rest on
// words every prompt has, and each block lists its engrams best first.

let root: string;
let store: LocalStore;
const add = async (statement: string): Promise<string> => (await learn(store, { statement }, systemContext)).engram.id;

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-relevance-')), 'store');
  store = await LocalStore.open(root);
  for (let i = 0; i < 30; i++) await add(`Office fact ${i}: meeting room ${i} seats ${i % 9} people on floor ${i % 5}`);
});
afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

describe('scores', () => {
  it('never exceed 1, with pinning and positive feedback lifting the best match; the best scores 1', async () => {
    const pnpm = await add('Use pnpm to install packages, never npm');
    await add('Packages are published from the release branch');
    await pin(store, pnpm, true);
    await feedback(
      store,
      [1, 2, 3, 4].map(() => ({ id: pnpm, signal: 'positive' as const })),
      systemContext,
    );
    const { hits } = await recall(store, 'install packages', { fast: true });
    expect(hits[0]!.engram.id).toBe(pnpm);
    expect(hits[0]!.score).toBe(1);
    for (const h of hits) expect(h.score).toBeLessThanOrEqual(1);
    expect(hits[1]!.score).toBeLessThan(1);
  });
});

describe('inject', () => {
  it('does not pull in an engram that shares only a stop word ("use") with the task', async () => {
    await add('Use pnpm, never npm');
    const knex = await add('Database migrations run with knex migrate:latest');
    const r = await inject(store, 'Write a database migration for the orders table; use a transaction', { fast: true });
    const all = [...r.blocks.directives, ...r.blocks.constraints, ...r.blocks.also_consider];
    expect(all.map((e) => e.id)).toEqual([knex]);
  });

  it('injects nothing but pinned engrams for a task made of stop words only', async () => {
    await add('Use pnpm, never npm');
    await add('What we do here is kept in the wiki');
    const r = await inject(store, 'use it, do that now', { fast: true });
    expect(r.text).not.toMatch(/pnpm|wiki/);
    expect(r.blocks).toEqual({ directives: [], constraints: [], also_consider: [] });
  });

  it('lists each block by score, best first, when rankings are merged with a hub', async () => {
    const local = await add('Run the database migrations before each deploy');
    await add('Deploy logs are kept for thirty days');
    await add('The deploy migrations are reviewed by two people');
    const shape = (await store.get(local))!;
    // The hub's hits look like local ones: another id, another statement.
    const hubHit = (n: number, statement: string, score: number): RecallHit => ({
      engram: { ...shape, id: `ENG-HUB-2026-0101-00${n}`, statement, content_hash: `hub-${n}` },
      score,
      found_by: ['bm25'],
      bm25: { rank: n, score },
      candidate: false,
    });
    const team: TeamSource = {
      url: 'http://hub.invalid',
      search: async () => ({
        state: 'ok',
        hits: [
          hubHit(1, 'Deploy windows are announced in the team channel', 0.22),
          hubHit(2, 'Deploy from the release pipeline, with its migrations', 0.45),
          hubHit(3, 'Deploy migrations need a rollback script', 0.3),
        ],
      }),
    };
    const r = await inject(store, 'deploy the migrations', { fast: true, team });
    expect(r.blocks.also_consider.length, JSON.stringify(r.blocks)).toBeGreaterThan(1);
    for (const block of Object.values(r.blocks)) {
      const scores = block.map((e) => e.score ?? Infinity);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    }
  });
});
