import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { SqliteIndex } from '../store/sqlite-index.js';
import { learn } from '../ops/learn.js';
import { systemContext } from '../ops/context.js';
import type { SearchHit } from '../backend.js';
import { syntheticEngrams, syntheticQueries, variedQueries } from '../../scripts/support/synthetic-engrams.js';
import { svc } from './support/run-svc.js';
import { SortedPostings } from '../search/sorted-postings.js';
import type { RankedDoc } from '../search/bm25-rank.js';
import { seededRandom } from '../seeded-random.js';

// A process that searches on (svc mcp, the TUI, scans) ranks from postings in memory
// (store/rank-memory.ts). Its answers must be FTS5's, query after query, while other processes
// write: the same engrams in the same order with the same scores.

const EXTRA = [
  { statement: 'Ne jamais déployer le vendredi après-midi', domain: 'deploy', tags: ['français'] },
  { statement: 'Use the e-mail queue for notifications, never send inline', tags: ['email', 'queue'] },
  { statement: 'Κανόνας: τρέξε τα τεστ πριν το merge', domain: 'ci' },
  { statement: 'COVID-19 rota: on-call swaps go through the bot', rationale: 'fairness, fairness and fairness' },
  { statement: '我们使用数据库迁移工具 before every release', domain: 'db' },
  // Over 127 tokens in one column: its length is a varint of two bytes in FTS5's docsize record.
  {
    statement: 'Long incident notes for the ledger migration',
    rationale: Array.from({ length: 300 }, (_, i) => `step${i % 40} ledger`).join(' '),
  },
];

const QUERIES = [
  ...syntheticQueries(120, 3),
  ...variedQueries(60),
  'déployer vendredi',
  'email queue',
  'COVID rota fairness',
  '数据库',
  'zzzz',
];

const view = (hits: SearchHit[]) => hits.map((h) => ({ id: h.engram.id, score: h.score }));

/** Same ids in the same order, scores equal to 1e-9 relative. */
function expectSame(memory: SearchHit[], fts: SearchHit[], query: string): void {
  expect(
    view(memory).map((h) => h.id),
    query,
  ).toEqual(view(fts).map((h) => h.id));
  memory.forEach((h, i) => expect(Math.abs(h.score - fts[i]!.score), query).toBeLessThanOrEqual(1e-9 * Math.max(1, fts[i]!.score)));
}

describe('ranking from postings in memory', () => {
  let root: string;
  let store: LocalStore;
  let fts: SqliteIndex;
  let memory: SqliteIndex;

  const compareAll = (queries: string[]) => {
    for (const q of queries) expectSame(memory.searchText(q, 50), fts.searchText(q, 50), q);
  };

  beforeAll(async () => {
    root = join(mkdtempSync(join(tmpdir(), 'svc-rank-memory-')), 'store');
    store = await LocalStore.open(root);
    for (const input of [...syntheticEngrams(500, 11), ...EXTRA]) await learn(store, input, systemContext);
    const some = await store.list({ limit: 500 });
    await store.write(async (tx) => {
      for (const e of some.filter((_, i) => i % 41 === 0)) await tx.put({ ...e, status: 'retired' });
    });
    fts = new SqliteIndex(join(root, 'index.db'), { rankInMemoryAfter: Infinity });
    memory = new SqliteIndex(join(root, 'index.db'), { rankInMemoryAfter: 0, rankInMemoryFrom: 0 });
  }, 120_000);

  afterAll(() => {
    fts?.close();
    memory?.close();
    store?.close();
  });

  it('answers as FTS5 does: same engrams, same order, same scores', () => {
    compareAll(QUERIES);
    // Retired engrams count in BM25's statistics but never come back.
    expect(memory.searchText('COVID rota', 50).some((h) => h.engram.status === 'retired')).toBe(false);
  });

  it('sees what another process learned, edited and retired since its last search', async () => {
    compareAll(QUERIES.slice(0, 20));
    const [victim] = memory.searchText('canary deploys', 1);
    const learned = await svc(['learn', 'Quokka deploys wait for the quokka canary, always', '--json'], { store: root });
    expect(learned.code, learned.stderr).toBe(0);
    const id = (JSON.parse(learned.stdout) as { id: string }).id;
    const forgot = await svc(['forget', victim!.engram.id], { store: root });
    expect(forgot.code, forgot.stderr).toBe(0);
    // An edit by another connection: the statement's words change.
    const other = await LocalStore.open(root);
    const [edited] = fts.searchText('email queue', 1);
    await other.write(async (tx) => tx.put({ ...edited!.engram, statement: 'Use the quokka queue for notifications' }));
    other.close();

    const quokka = memory.searchText('quokka canary', 50);
    expect(quokka.map((h) => h.engram.id)).toContain(id);
    expect(quokka.map((h) => h.engram.id)).toContain(edited!.engram.id);
    expect(memory.searchText('canary deploys', 50).map((h) => h.engram.id)).not.toContain(victim!.engram.id);
    expect(memory.searchText('inline', 50).map((h) => h.engram.id)).not.toContain(edited!.engram.id);
    compareAll([...QUERIES, 'quokka canary', 'canary deploys', 'inline']);
  }, 60_000);

  it('starts over after a rebuild (more changes than it replays)', async () => {
    compareAll(QUERIES.slice(0, 5));
    await store.rebuild();
    await learn(store, { statement: 'After the rebuild, wombat builds run on the wombat runner' }, systemContext);
    compareAll([...QUERIES, 'wombat runner']);
    expect(memory.searchText('wombat runner', 5)[0]!.engram.statement).toMatch(/^After the rebuild/);
  }, 60_000);

  it('ranks through FTS5 in a one-shot process and on a small store; in memory from the fourth search of a large one', () => {
    const instancesTable = (index: SqliteIndex) =>
      index.db.prepare("SELECT 1 FROM temp.sqlite_master WHERE name = 'engram_fts_instances'").get() !== undefined;
    const small = new SqliteIndex(join(root, 'index.db'));
    const large = new SqliteIndex(join(root, 'index.db'), { rankInMemoryFrom: 500 });
    try {
      for (const [i, q] of QUERIES.slice(0, 8).entries()) {
        expectSame(small.searchText(q, 20), fts.searchText(q, 20), q);
        expectSame(large.searchText(q, 20), fts.searchText(q, 20), q);
        expect(instancesTable(large), `after search ${i + 1}`).toBe(i >= 3);
      }
      // 506 engrams: below the default, memory would cost RAM for nothing.
      expect(instancesTable(small)).toBe(false);
    } finally {
      small.close();
      large.close();
    }
  });
});

describe("a word's postings in sorted arrays", () => {
  it('keeps rowid order and the weights a Map would hold, through pushes, sets and deletes', () => {
    const docs: RankedDoc[] = Array.from({ length: 400 }, (_, i) => ({ id: String(i), ord: i, group: 0, ntok: 10, live: true, seq: i }));
    const postings = new SortedPostings(docs);
    const model = new Map<number, number>();
    for (let rowid = 1; rowid < 400; rowid += 3) {
      postings.push(rowid, rowid % 7);
      model.set(rowid, rowid % 7);
    }
    postings.fit();
    const random = seededRandom(5);
    for (let step = 0; step < 2000; step++) {
      const rowid = Math.floor(random() * 400);
      if (random() < 0.5) {
        postings.delete(rowid);
        model.delete(rowid);
      } else {
        postings.set(rowid, step);
        model.set(rowid, step);
      }
    }
    const seen: Array<[number, number]> = [];
    postings.forEach((weight, doc) => seen.push([doc.ord, weight]));
    expect(seen).toEqual([...model].sort((a, b) => a[0] - b[0]));
    expect(postings.size).toBe(model.size);
    for (const doc of docs) expect(postings.get(doc)).toBe(model.get(doc.ord));
    // Walked for marked documents only (ranking's candidates), as forEach would filter them.
    const marks = new Uint8Array(400).map((_, i) => (i % 5 === 0 ? 1 : 0));
    const marked: Array<[number, number]> = [];
    postings.forEachMarked(marks, (weight, doc) => marked.push([doc.ord, weight]));
    expect(marked).toEqual(seen.filter(([ord]) => ord % 5 === 0));
    // Live documents with their lengths, as written with each posting: a retired document's
    // posting, written again (as owners do), is skipped.
    docs.forEach((doc, i) => (docs[i] = { ...doc, ntok: 10 + (i % 4), live: i % 3 !== 0 }));
    for (const [rowid, weight] of seen) postings.set(rowid, weight);
    const live: Array<[number, number, number]> = [];
    postings.forEachLive((weight, doc, ord, ntok) => live.push([doc.ord, weight, ntok - (10 + (ord % 4))]));
    expect(live).toEqual(seen.filter(([ord]) => ord % 3 !== 0).map(([ord, weight]) => [ord, weight, 0]));
  });
});
