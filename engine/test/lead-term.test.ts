import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { systemContext } from '../ops/context.js';
import { leadTermMatcher, leadWord } from '../search/lead-term.js';
import { textPatterns } from '../search/fts-text.js';

// A statement that opens with a query term is about it: recall lifts it over statements that
// only mention the term (search/lead-term.ts).

describe('lead word', () => {
  it('is the first word that is no stop word, lowercased, without a plural s', () => {
    expect(leadWord('Caroline: I went to a support group')).toBe('caroline');
    expect(leadWord('The deployments run on Fridays')).toBe('deployment');
    expect(leadWord('  "Ёлка" стоит в холле')).toBe('елка');
    expect(leadWord('what is it?')).toBeUndefined();
    expect(leadWord('')).toBeUndefined();
    expect(leadWord(`${'and the '.repeat(30)}pnpm`)).toBeUndefined(); // looked for in the first words only
  });

  it('leaves the shared word patterns as it found them', () => {
    leadWord('The deployments run on Fridays');
    leadWord('Ёлка стоит в холле');
    expect(textPatterns('ascii').word.lastIndex).toBe(0);
    expect(textPatterns('ё').word.lastIndex).toBe(0);
  });

  it('matches a statement that opens with a query term, not one that mentions it later', () => {
    const opens = leadTermMatcher('What did Caroline research?');
    expect(opens('Caroline: Researching adoption agencies')).toBe(true);
    expect(opens('Melanie: Thanks, Caroline, doing research makes sense')).toBe(false);
    expect(leadTermMatcher('the and of')('The and of it')).toBe(false);
    expect(leadTermMatcher('deployments')('Deployment runs on Fridays')).toBe(true);
  });
});

describe('recall lifts a statement that opens with a query term', () => {
  let root: string;
  let store: LocalStore;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    root = join(mkdtempSync(join(tmpdir(), 'svc-lead-')), 'store');
    store = await LocalStore.open(root);
    const add = async (key: string, statement: string) => (ids[key] = (await learn(store, { statement }, systemContext)).engram.id);
    // Two people talking: each name is in half the turns or more, so BM25 gives it an IDF of ~0.
    for (let i = 0; i < 6; i++) {
      await add(`c${i}`, `Caroline: I painted landscape number ${i} this week`);
      await add(`m${i}`, `Melanie: Caroline, your landscape number ${i} is lovely`);
    }
    await add('melanie-research', 'Melanie: Thanks for the tip, Caroline. Research makes sense.');
    await add('caroline-research', 'Caroline: Researching adoption agencies, it has been a dream to have a family.');
  });

  afterAll(() => {
    store.close();
    rmSync(join(root, '..'), { recursive: true, force: true });
  });

  it('ranks the named person’s own statement above another’s that names them', async () => {
    // BM25 alone prefers the shorter statement that mentions both words.
    const bm25 = await store.searchText('What did Caroline research?', 5);
    expect(bm25[0]?.engram.id).toBe(ids['melanie-research']);
    const r = await recall(store, 'What did Caroline research?', { limit: 5, fast: true });
    expect(r.hits[0]?.engram.id).toBe(ids['caroline-research']);
    expect(r.hits[1]?.engram.id).toBe(ids['melanie-research']);
  });

  it('leaves the order alone when no statement opens with a query term', async () => {
    const r = await recall(store, 'adoption agencies family', { limit: 3, fast: true });
    expect(r.hits[0]?.engram.id).toBe(ids['caroline-research']);
    const other = await recall(store, 'tip makes sense', { limit: 3, fast: true });
    expect(other.hits[0]?.engram.id).toBe(ids['melanie-research']);
  });
});
