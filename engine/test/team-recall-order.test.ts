import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { recall, type TeamAnswer, type TeamSource } from '../ops/recall.js';
import { systemContext } from '../ops/context.js';

// Recall with a hub: local ranking holds the thread, so the question must be on its way to the
// hub before it starts, or the hub's time adds to ours (recall.ts). A hub that never takes the
// question must not hold local ranking up for long either.

let root: string;
let store: LocalStore;
const steps: string[] = [];

beforeAll(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-team-order-')), 'store');
  store = await LocalStore.open(root);
  await learn(store, { statement: 'Deploys wait for the migrations to finish' }, systemContext);
  const searchText = store.searchText.bind(store);
  store.searchText = (...args: Parameters<LocalStore['searchText']>) => {
    steps.push('local ranking');
    return searchText(...args);
  };
});
afterAll(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

const answerAfter = (ms: number): Promise<TeamAnswer> =>
  new Promise((resolve) =>
    setTimeout(() => {
      steps.push('hub answer');
      resolve({ state: 'ok', hits: [] });
    }, ms),
  );

describe('recall with a hub', () => {
  it('sends the question before it ranks locally, and ranks while the hub works', async () => {
    steps.length = 0;
    const team: TeamSource = {
      url: 'http://hub.invalid',
      search: (_query, _limit, onSent) => {
        // As a socket does: written on a later turn of the event loop.
        setImmediate(() => {
          steps.push('question sent');
          onSent?.();
        });
        return answerAfter(30);
      },
    };
    const r = await recall(store, 'deploy migrations', { fast: true, team });
    expect(r.hits[0]!.engram.statement).toBe('Deploys wait for the migrations to finish');
    expect(steps).toEqual(['question sent', 'local ranking', 'hub answer']);
  });

  it('ranks locally without waiting for a hub that never takes the question', async () => {
    steps.length = 0;
    const team: TeamSource = { url: 'http://hub.invalid', search: () => answerAfter(1_000) };
    const r = await recall(store, 'deploy migrations', { fast: true, team });
    expect(steps).toEqual(['local ranking', 'hub answer']);
    expect(r.sources?.hub.state).toBe('ok');
  });
});
