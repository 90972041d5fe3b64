import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { SqliteIndex } from '../store/sqlite-index.js';
import { learn } from '../ops/learn.js';
import { systemContext } from '../ops/context.js';
import { suggestScope } from '../ops/suggest-scope.js';
import type { SearchHit, TextSearchOptions } from '../backend.js';
import { syntheticEngrams, syntheticQueries } from '../../scripts/support/synthetic-engrams.js';

// A scope suggestion looks for a statement's neighbours by its rarest words only
// (TextSearchOptions.rarestTermRows): as many as match the budget's rows in all, at least two.

const view = (hits: SearchHit[]) => hits.map((h) => ({ id: h.engram.id, score: h.score }));

describe('searching by the rarest terms of a query', () => {
  let store: LocalStore;
  let index: SqliteIndex;

  beforeAll(async () => {
    const root = join(mkdtempSync(join(tmpdir(), 'svc-rarest-')), 'store');
    store = await LocalStore.open(root);
    for (const input of syntheticEngrams(300, 5)) await learn(store, input, systemContext);
    for (let i = 0; i < 40; i++)
      await learn(store, { statement: `The gateway ${i} answers health checks`, scope: 'project:web' }, systemContext);
    for (const s of ['Kestrel gateway logs rotate daily', 'Kestrel nests are counted in spring', 'The kestrel survey uses drones']) {
      await learn(store, { statement: s, scope: 'project:birds' }, systemContext);
    }
    for (const s of ['Wombat burrows need a permit', 'The wombat gateway closes at dusk']) {
      await learn(store, { statement: s, scope: 'project:zoo' }, systemContext);
    }
    index = new SqliteIndex(join(root, 'index.db'), { rankInMemoryAfter: Infinity });
  }, 120_000);

  afterAll(() => {
    index?.close();
    store?.close();
  });

  it('answers as the whole query does when every term fits the budget', () => {
    for (const q of [...syntheticQueries(40, 9), 'kestrel gateway wombat']) {
      expect(view(index.searchText(q, 50, 'any', { rarestTermRows: 100_000 })), q).toEqual(view(index.searchText(q, 50)));
    }
  });

  it('leaves out the common terms past the budget, and keeps the two rarest whatever they match', () => {
    const statements = (hits: SearchHit[]) => hits.map((h) => h.engram.statement).sort();
    const all = index.searchText('kestrel gateway wombat', 50);
    expect(all.some((h) => /^The gateway \d+/.test(h.engram.statement))).toBe(true);
    const rare = ['Kestrel gateway logs rotate daily', 'Kestrel nests are counted in spring', 'The kestrel survey uses drones'];
    const rarer = ['The wombat gateway closes at dusk', 'Wombat burrows need a permit'];
    expect(statements(index.searchText('kestrel gateway wombat', 50, 'any', { rarestTermRows: 10 }))).toEqual([...rare, ...rarer].sort());
    // Over budget already with the two rarest: they are searched all the same.
    expect(statements(index.searchText('kestrel gateway wombat', 50, 'any', { rarestTermRows: 1 }))).toEqual([...rare, ...rarer].sort());
    // Two terms or fewer: searched as they are.
    expect(view(index.searchText('gateway wombat', 50, 'any', { rarestTermRows: 1 }))).toEqual(
      view(index.searchText('gateway wombat', 50)),
    );
  });

  it('is how a scope suggestion searches, in the CLI and in a long-lived process alike', async () => {
    const seen: Array<TextSearchOptions | undefined> = [];
    const watched = Object.create(store) as LocalStore;
    watched.searchText = (query, limit, mode, opts) => {
      seen.push(opts);
      return store.searchText(query, limit, mode, opts);
    };
    const s = await suggestScope(watched, 'Kestrel nests need a survey permit');
    expect(seen).toEqual([{ rarestTermRows: 5_000 }]);
    expect(s).toMatchObject({ scope: 'project:birds', confident: true });
    // A process that has switched to ranking in memory still searches the rarest terms with FTS5.
    const memory = new SqliteIndex(join(store.root, 'index.db'), { rankInMemoryAfter: 0, rankInMemoryFrom: 0 });
    try {
      const q = 'kestrel gateway wombat';
      expect(view(memory.searchText(q, 50, 'any', { rarestTermRows: 10 }))).toEqual(
        view(index.searchText(q, 50, 'any', { rarestTermRows: 10 })),
      );
    } finally {
      memory.close();
    }
  });
});
