import type Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import type { EngramDoc } from '../model/engram-types.js';
import type { EngramEvent, Episode, EventFilter, TimelineFilter } from '../model/records.js';
import { contentHash } from '../model/content-hash.js';
import { anyQuery, ftsQuery, quote, weightedPhrases } from '../search/fts-query.js';
import { BM25_COLUMN_WEIGHTS, FTS5_TOKENIZE, ftsIndexText } from '../search/fts-text.js';
import { ALL_ROWS, CHANGES_KEPT, RankMemory, type RankedRow } from './rank-memory.js';
import { sleepSync } from '../sleep-sync.js';
import { openSqlite } from './sqlite-open.js';
import type { ListFilter, SearchHit, TextSearchOptions, VectorHit } from '../backend.js';

// The derived index: one row per engram file with the engram as JSON (so reads never parse
// YAML), an FTS5 table for BM25, a sqlite-vec table for 384-d vectors, and the per-day id
// counters. Everything here can be rebuilt from the YAML files.

export const INDEX_SCHEMA_VERSION = '5';
export const VECTOR_DIMENSIONS = 384;
const BUSY_TIMEOUT_MS = 60_000;

const BM25_WEIGHTS = BM25_COLUMN_WEIGHTS.join(', ');

export interface FileStamp {
  mtime: number;
  size: number;
}

export interface IndexedFile extends FileStamp {
  id: string;
  file: string;
}

export interface PendingEmbedding {
  rowid: number;
  statement: string;
  content_hash: string;
}

// Schema objects added after version 5 shipped, created on open when an index lacks them.
// engrams_retired, engrams_pinned: read by every prompt's hook in a fresh process, whose page
// cache is cold: BM25 ranks over the full-text index alone (retired rows excluded through this
// small index, documents fetched for the top rows only), and pinned engrams are found without
// reading the table. engrams_file_stamp: reconciling changed files (a pull, a clone, an index
// left behind) looks each one up by file, and a hot path's scan slice (store-reconcile.ts) reads
// up to 1,000 stamps in file order; the stamp columns in the index spare both the table's rows (a
// slice of 1,000 at 100,000 engrams read 5-9 ms of them, then 2-3 ms). It replaces engrams_file (file alone).
// engram_changes: which engram rows each write changed (upsert, removeFile; 0: all of them,
// after clear), so a process that keeps postings in memory (rank-memory.ts) replaces just those.
// It keeps the last CHANGES_KEPT entries; a reader further behind starts over. Written by the
// code, not by triggers: a trigger on engrams made every write of an engram row 60 us slower
// (+1.2 s to index 20,000 engrams).
const ADDED_SCHEMA: Record<string, string> = {
  engrams_retired: `CREATE INDEX IF NOT EXISTS engrams_retired ON engrams (rowid) WHERE status = 'retired'`,
  engrams_pinned: 'CREATE INDEX IF NOT EXISTS engrams_pinned ON engrams (learned_at) WHERE pinned = 1',
  engrams_file_stamp: 'DROP INDEX IF EXISTS engrams_file; CREATE INDEX IF NOT EXISTS engrams_file_stamp ON engrams (file, mtime, size, id)',
  engram_changes: 'CREATE TABLE IF NOT EXISTS engram_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, row INTEGER NOT NULL)',
};
const ADDED_SCHEMA_SQL = Object.values(ADDED_SCHEMA)
  .map((sql) => `${sql};`)
  .join('\n');

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS engrams (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  file TEXT NOT NULL,
  mtime REAL NOT NULL,
  size INTEGER NOT NULL,
  status TEXT NOT NULL,
  type TEXT NOT NULL,
  scope TEXT NOT NULL,
  domain TEXT,
  content_hash TEXT NOT NULL,
  pinned INTEGER NOT NULL,
  learned_at TEXT NOT NULL,
  doc TEXT NOT NULL,
  -- Which model embedded which content: a vector is stale when either differs.
  vec_model TEXT,
  vec_hash TEXT
);
CREATE INDEX IF NOT EXISTS engrams_hash ON engrams (content_hash);
CREATE INDEX IF NOT EXISTS engrams_scope ON engrams (scope, status);
CREATE INDEX IF NOT EXISTS engrams_learned ON engrams (learned_at);
-- Engrams whose vector is missing or stale: hybrid recall asks on every call, so keep it cheap.
CREATE INDEX IF NOT EXISTS engrams_unembedded ON engrams (rowid) WHERE vec_hash IS NOT content_hash;
${ADDED_SCHEMA_SQL}
CREATE VIRTUAL TABLE IF NOT EXISTS engram_fts USING fts5(
  statement, tags, domain, rationale,
  ${FTS5_TOKENIZE}
);
CREATE TABLE IF NOT EXISTS id_counters (stem TEXT PRIMARY KEY, last INTEGER NOT NULL);
-- How many bytes of each append-only log file the tables below hold.
CREATE TABLE IF NOT EXISTS log_files (file TEXT PRIMARY KEY, indexed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
  rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, file TEXT NOT NULL, at TEXT NOT NULL,
  agent TEXT NOT NULL, channel TEXT, session TEXT, doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS episodes_at ON episodes (at);
CREATE VIRTUAL TABLE IF NOT EXISTS episode_fts USING fts5(summary, ${FTS5_TOKENIZE});
CREATE TABLE IF NOT EXISTS events (
  rowid INTEGER PRIMARY KEY, file TEXT NOT NULL, at TEXT NOT NULL, action TEXT NOT NULL,
  engram_id TEXT, session TEXT, doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_engram ON events (engram_id, at);
CREATE INDEX IF NOT EXISTS events_action ON events (action, at);
CREATE VIRTUAL TABLE IF NOT EXISTS engram_vec USING vec0(embedding float[${VECTOR_DIMENSIONS}] distance_metric=cosine);
`;

function loadVectorExtension(db: Database.Database): void {
  // sqlite-vec is CommonJS; load it only when a vector table is touched.
  const require = createRequire(import.meta.url);
  const vec = require('sqlite-vec') as { load(db: Database.Database): void };
  vec.load(db);
}

export interface IndexOptions {
  /**
   * Full-text searches this process runs through FTS5 before it keeps postings in memory
   * (rank-memory.ts): a process that searches this often will search again. Infinity: never.
   */
  rankInMemoryAfter?: number;
  /** The fewest engram rows (by the highest rowid) for which it does. */
  rankInMemoryFrom?: number;
}

/** A one-shot command searches once or twice; svc mcp, the TUI and scans search on. */
const RANK_IN_MEMORY_AFTER = 3;
/**
 * Below this, FTS5 ranks a query as fast as memory does the first time it sees the query's
 * words (0.5-0.8 ms at 2,000-5,000 engrams, 1.2 against 0.9 ms at 10,000): memory would cost
 * RAM for nothing.
 */
const RANK_IN_MEMORY_FROM = 5000;

export class SqliteIndex {
  readonly db: Database.Database;
  private vecLoaded = false;
  private readonly stmts = new Map<string, Database.Statement>();
  private readonly rankInMemoryAfter: number;
  private readonly rankInMemoryFrom: number;
  private searches = 0;
  private memory: RankMemory | null | undefined;
  /** Cleared in this transaction: it logged that every row changed, so rows need no entry each. */
  private clearedInTransaction = false;

  /** `:memory:` for a store that cannot be written (a read-only mount): rebuilt from the YAML on open. */
  constructor(path: string, options: IndexOptions = {}) {
    this.rankInMemoryAfter = options.rankInMemoryAfter ?? RANK_IN_MEMORY_AFTER;
    this.rankInMemoryFrom = options.rankInMemoryFrom ?? RANK_IN_MEMORY_FROM;
    this.db = openSqlite(path, { timeout: BUSY_TIMEOUT_MS });
    if (path !== ':memory:') enterWal(this.db);
    this.db.pragma('synchronous = NORMAL');
  }

  close(): void {
    this.db.close();
  }

  private stmt(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  /** The vector table needs sqlite-vec loaded before any statement touches it. */
  useVectors(): void {
    if (this.vecLoaded) return;
    loadVectorExtension(this.db);
    this.vecLoaded = true;
  }

  begin(): void {
    this.db.exec('BEGIN IMMEDIATE');
    this.clearedInTransaction = false;
  }

  /** Whether this connection has a transaction open. */
  inTransaction(): boolean {
    return this.db.inTransaction;
  }

  /** BEGIN IMMEDIATE without waiting: false when another process holds the write lock. */
  tryBegin(): boolean {
    this.db.pragma('busy_timeout = 0');
    try {
      this.db.exec('BEGIN IMMEDIATE');
      this.clearedInTransaction = false;
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return false;
      throw err;
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  commit(): void {
    this.db.exec('COMMIT');
    this.clearedInTransaction = false;
  }

  rollback(): void {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
    this.clearedInTransaction = false;
  }

  hasSchema(): boolean {
    const row = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
    return row !== undefined && this.getMeta('schema_version') === INDEX_SCHEMA_VERSION;
  }

  /** Whether the schema objects added after version 5 are there (an index made before them lacks them). */
  hasAddedSchema(): boolean {
    const names = Object.keys(ADDED_SCHEMA);
    const found = this.db
      .prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name IN (${names.map(() => '?').join(', ')})`)
      .get(...names) as { n: number };
    return found.n === names.length;
  }

  /** Adds them. Call under the write lock. */
  createAddedSchema(): void {
    this.db.exec(ADDED_SCHEMA_SQL);
  }

  /** Creates the schema, dropping an index of another version (it is derived data). Call under the write lock. */
  createSchema(): void {
    this.useVectors();
    const hasMeta = this.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'meta'").get();
    if (hasMeta && this.getMeta('schema_version') !== INDEX_SCHEMA_VERSION) {
      for (const t of [
        'engram_vec',
        'engram_fts',
        'engrams',
        'engram_changes',
        'id_counters',
        'log_files',
        'episodes',
        'episode_fts',
        'events',
        'meta',
      ]) {
        this.db.exec(`DROP TABLE IF EXISTS ${t}`);
      }
    }
    this.db.exec(SCHEMA);
    this.setMeta('schema_version', INDEX_SCHEMA_VERSION);
  }

  getMeta(key: string): string | undefined {
    const row = this.stmt('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  setMeta(key: string, value: string): void {
    this.stmt('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  indexedFiles(): Map<string, IndexedFile> {
    const rows = this.stmt('SELECT id, file, mtime, size FROM engrams').all() as IndexedFile[];
    return new Map(rows.map((r) => [r.file, r]));
  }

  /** Up to `limit` indexed files after `file` in file order (the hot paths' scan, store-reconcile.ts), read as the caller iterates: it may stop early. */
  indexedFilesAfter(file: string, limit: number): IterableIterator<IndexedFile> {
    return this.stmt('SELECT id, file, mtime, size FROM engrams WHERE file > ? ORDER BY file LIMIT ?').iterate(
      file,
      limit,
    ) as IterableIterator<IndexedFile>;
  }

  stampOf(file: string): FileStamp | undefined {
    return this.stmt('SELECT mtime, size FROM engrams WHERE file = ?').get(file) as FileStamp | undefined;
  }

  /** Inserts or replaces the row of one engram and its full-text entry (`hash`: its statement's, when just computed). */
  upsert(engram: EngramDoc, file: string, stamp: FileStamp, hash: string = contentHash(engram.statement)): void {
    const existing = this.stmt('SELECT rowid, content_hash FROM engrams WHERE id = ?').get(engram.id) as
      { rowid: number; content_hash: string } | undefined;
    const values = [
      file,
      stamp.mtime,
      stamp.size,
      engram.status,
      engram.type,
      engram.scope,
      engram.domain ?? null,
      hash,
      engram.pinned ? 1 : 0,
      engram.temporal?.learned_at ?? '',
      JSON.stringify(engram),
    ];
    let rowid: number;
    if (existing) {
      rowid = existing.rowid;
      this.stmt(
        `UPDATE engrams SET file = ?, mtime = ?, size = ?, status = ?, type = ?, scope = ?, domain = ?,
           content_hash = ?, pinned = ?, learned_at = ?, doc = ? WHERE rowid = ?`,
      ).run(...values, rowid);
      this.stmt('DELETE FROM engram_fts WHERE rowid = ?').run(rowid);
      // A changed statement invalidates its vector; the embedder fills it in again.
      if (existing.content_hash !== hash) {
        this.deleteVector(rowid);
        this.stmt('UPDATE engrams SET vec_model = NULL, vec_hash = NULL WHERE rowid = ?').run(rowid);
      }
    } else {
      const info = this.stmt(
        `INSERT INTO engrams (file, mtime, size, status, type, scope, domain, content_hash, pinned, learned_at, doc, id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...values, engram.id);
      rowid = Number(info.lastInsertRowid);
    }
    this.logChange(rowid);
    this.stmt('INSERT INTO engram_fts (rowid, statement, tags, domain, rationale) VALUES (?, ?, ?, ?, ?)').run(
      rowid,
      ftsIndexText(engram.statement),
      ftsIndexText((engram.tags ?? []).join(' ')),
      ftsIndexText(engram.domain ?? ''),
      ftsIndexText(engram.rationale ?? ''),
    );
  }

  removeFile(file: string): void {
    const row = this.stmt('SELECT rowid FROM engrams WHERE file = ?').get(file) as { rowid: number } | undefined;
    if (!row) return;
    this.stmt('DELETE FROM engram_fts WHERE rowid = ?').run(row.rowid);
    this.deleteVector(row.rowid);
    this.stmt('DELETE FROM engrams WHERE rowid = ?').run(row.rowid);
    this.logChange(row.rowid);
  }

  private logChange(rowid: number): void {
    if (this.clearedInTransaction) return;
    const seq = Number(this.stmt('INSERT INTO engram_changes (row) VALUES (?)').run(rowid).lastInsertRowid);
    this.stmt('DELETE FROM engram_changes WHERE seq <= ?').run(seq - CHANGES_KEPT);
  }

  private deleteVector(rowid: number): void {
    this.useVectors();
    this.stmt('DELETE FROM engram_vec WHERE rowid = ?').run(BigInt(rowid));
  }

  /** Live engrams with no vector for their current content (vectors are all of one model: see useModel). */
  pendingEmbeddings(limit: number): PendingEmbedding[] {
    const rows = this.stmt(
      `SELECT rowid, doc, content_hash FROM engrams
        WHERE vec_hash IS NOT content_hash AND status != 'retired' ORDER BY rowid LIMIT ?`,
    ).all(limit) as { rowid: number; doc: string; content_hash: string }[];
    return rows.map((r) => ({ rowid: r.rowid, statement: (JSON.parse(r.doc) as EngramDoc).statement, content_hash: r.content_hash }));
  }

  countPendingEmbeddings(): number {
    const row = this.stmt(`SELECT count(*) AS n FROM engrams WHERE vec_hash IS NOT content_hash AND status != 'retired'`).get() as {
      n: number;
    };
    return row.n;
  }

  /** The model the stored vectors came from. */
  vectorModel(): string | undefined {
    return this.getMeta('vec_model');
  }

  /** Switches the index to another model's vectors: the old ones cannot be compared, so they go. Under the write lock. */
  useModel(model: string): void {
    if (this.getMeta('vec_model') === model) return;
    this.useVectors();
    this.db.exec('DELETE FROM engram_vec; UPDATE engrams SET vec_model = NULL, vec_hash = NULL;');
    this.setMeta('vec_model', model);
  }

  /** Stores a vector if the engram still has the content it was computed from. */
  putVector(item: PendingEmbedding, vector: Float32Array, model: string): void {
    this.useVectors();
    const current = this.stmt('SELECT content_hash FROM engrams WHERE rowid = ?').get(item.rowid) as { content_hash: string } | undefined;
    if (!current || current.content_hash !== item.content_hash) return;
    this.deleteVector(item.rowid);
    this.stmt('INSERT INTO engram_vec (rowid, embedding) VALUES (?, ?)').run(BigInt(item.rowid), vector);
    this.stmt('UPDATE engrams SET vec_model = ?, vec_hash = ? WHERE rowid = ?').run(model, item.content_hash, item.rowid);
  }

  /** Nearest live engrams to a unit vector, by cosine. Vectors of another model are ignored. */
  searchVector(vector: Float32Array, limit: number, model: string): VectorHit[] {
    this.useVectors();
    // KNN over all vectors, then drop retired and stale ones: ask for extra to keep `limit`.
    const k = Math.min(4096, limit * 2 + 16);
    const rows = this.stmt(
      `SELECT e.doc AS doc, v.distance AS distance
         FROM (SELECT rowid, distance FROM engram_vec WHERE embedding MATCH ? AND k = ?) v
         JOIN engrams e ON e.rowid = v.rowid
        WHERE e.status != 'retired' AND e.vec_model = ? AND e.vec_hash = e.content_hash
        ORDER BY v.distance LIMIT ?`,
    ).all(vector, k, model, limit) as { doc: string; distance: number }[];
    return rows.map((r) => ({ engram: JSON.parse(r.doc) as EngramDoc, cosine: 1 - r.distance }));
  }

  countVectors(): number {
    return (this.stmt('SELECT count(*) AS n FROM engrams WHERE vec_hash IS NOT NULL').get() as { n: number }).n;
  }

  clear(): void {
    this.useVectors();
    // The virtual tables are dropped and made again: deleting from them goes row by row (about
    // a second at 50,000 engrams), dropping them does not.
    this.db.exec(
      'DROP TABLE engram_fts; DROP TABLE engram_vec; DROP TABLE episode_fts; DELETE FROM engrams; DELETE FROM id_counters; ' +
        'DELETE FROM log_files; DELETE FROM episodes; DELETE FROM events;',
    );
    this.db.exec(SCHEMA);
    this.logChange(ALL_ROWS);
    this.clearedInTransaction = this.db.inTransaction;
  }

  get(id: string): EngramDoc | null {
    const row = this.stmt('SELECT doc FROM engrams WHERE id = ?').get(id) as { doc: string } | undefined;
    return row ? (JSON.parse(row.doc) as EngramDoc) : null;
  }

  findByHash(hash: string): EngramDoc[] {
    const rows = this.stmt('SELECT doc FROM engrams WHERE content_hash = ? ORDER BY id').all(hash) as { doc: string }[];
    return rows.map((r) => JSON.parse(r.doc) as EngramDoc);
  }

  /** The highest sequence number handed out for an id stem, from the counter or the rows. */
  lastSeq(stem: string): number {
    const row = this.stmt('SELECT last FROM id_counters WHERE stem = ?').get(stem) as { last: number } | undefined;
    if (row) return row.last;
    const max = this.stmt(`SELECT max(CAST(substr(id, ?) AS INTEGER)) AS last FROM engrams WHERE id >= ? AND id < ?`).get(
      stem.length + 1,
      stem,
      stem + '\uffff',
    ) as { last: number | null };
    return max.last ?? 0;
  }

  setLastSeq(stem: string, seq: number): void {
    this.stmt('INSERT INTO id_counters (stem, last) VALUES (?, ?) ON CONFLICT (stem) DO UPDATE SET last = max(last, excluded.last)').run(
      stem,
      seq,
    );
  }

  /** BM25 over statement, tags, domain and rationale; retired engrams never come back. */
  searchText(query: string, limit: number, mode: 'any' | 'all' = 'any', opts: TextSearchOptions = {}): SearchHit[] {
    if (opts.rarestTermRows !== undefined && mode === 'any') return this.searchRarest(query, limit, opts.rarestTermRows);
    this.searches += 1;
    if (mode === 'any' && this.searches > this.rankInMemoryAfter && !this.db.inTransaction && this.largeEnough()) {
      // One read transaction: the changes replayed, the postings read and the documents fetched are of one state.
      const hits = this.db.transaction(() => this.searchInMemory(query, limit))();
      if (hits) return hits;
    }
    return this.rankWithFts(ftsQuery(query, mode), limit);
  }

  /**
   * searchText with the query's rarest phrases only, as many as match `rows` rows in all (at
   * least two). How many rows a phrase matches is counted only so far (`rows`, or 1,000 when
   * fewer), so the counts cost less than the search they save. Always FTS5: a process ranking
   * in memory gives the same answer as a one-shot command.
   */
  private searchRarest(query: string, limit: number, rows: number): SearchHit[] {
    const phrases = weightedPhrases(query);
    if (phrases.size <= 2) return this.rankWithFts(anyQuery(phrases), limit);
    // Counted far enough to tell the two rarest apart under a small budget too.
    const cap = Math.max(rows, 1_000) + 1;
    const count = this.stmt('SELECT count(*) FROM (SELECT 1 FROM engram_fts WHERE engram_fts MATCH ? LIMIT ?)').pluck();
    const counted = [...phrases].map(([phrase, weight]) => ({ phrase, weight, n: count.get(quote(phrase), cap) as number }));
    const keep = new Set<string>();
    let total = 0;
    for (const c of [...counted].sort((a, b) => a.n - b.n)) {
      if (keep.size >= 2 && total + c.n > rows) break;
      keep.add(c.phrase);
      total += c.n;
    }
    // In the query's order: bm25() sums the phrases' scores in the order given.
    return this.rankWithFts(anyQuery(new Map(counted.filter((c) => keep.has(c.phrase)).map((c) => [c.phrase, c.weight]))), limit);
  }

  /** FTS5's ranking of a MATCH query, ties in rowid order; documents for the top rows only. */
  private rankWithFts(match: string | null, limit: number): SearchHit[] {
    if (!match) return [];
    const rows = this.stmt(
      `SELECT e.doc AS doc, r.rank AS rank
         FROM (SELECT rowid, bm25(engram_fts, ${BM25_WEIGHTS}) AS rank FROM engram_fts
                WHERE engram_fts MATCH ? AND rowid NOT IN (SELECT rowid FROM engrams WHERE status = 'retired')
                ORDER BY rank, rowid LIMIT ?) r
         JOIN engrams e ON e.rowid = r.rowid
        ORDER BY r.rank, r.rowid`,
    ).all(match, limit) as { doc: string; rank: number }[];
    return rows.map((r) => ({ engram: JSON.parse(r.doc) as EngramDoc, score: -r.rank }));
  }

  /** Whether the index holds enough engrams to rank in memory (and can); once decided, it stays so. */
  private largeEnough(): boolean {
    if (this.memory !== undefined) return this.memory !== null;
    const last = this.stmt('SELECT max(rowid) FROM engrams').pluck().get() as number | null;
    return (last ?? 0) >= this.rankInMemoryFrom;
  }

  /** null: this query or this index needs FTS5. */
  private searchInMemory(query: string, limit: number): SearchHit[] | null {
    if (this.memory === undefined) this.memory = this.openRankMemory();
    const ranked: RankedRow[] | null = this.memory?.rank(query, limit) ?? null;
    if (!ranked) return null;
    const docs = new Map(
      this.stmt('SELECT rowid, doc FROM engrams WHERE rowid IN (SELECT value FROM json_each(?))')
        .raw()
        .all(JSON.stringify(ranked.map((r) => r.rowid))) as Array<[number, string]>,
    );
    return ranked.flatMap((r) => {
      const doc = docs.get(r.rowid);
      return doc === undefined ? [] : [{ engram: JSON.parse(doc) as EngramDoc, score: r.score }];
    });
  }

  /** The postings-in-memory ranker, when this index logs its changes (one made before the log, opened without LocalStore's upgrade, does not). */
  private openRankMemory(): RankMemory | null {
    if (!this.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'engram_changes'").get()) return null;
    return new RankMemory(this.db);
  }

  list(filter: ListFilter): EngramDoc[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (filter.scope) {
      where.push('scope = ?');
      args.push(filter.scope);
    }
    if (filter.domain) {
      where.push("(domain = ? OR domain LIKE ? ESCAPE '\\')");
      args.push(filter.domain, filter.domain.replace(/[\\%_]/g, '\\$&') + '.%');
    }
    if (filter.type) {
      where.push('type = ?');
      args.push(filter.type);
    }
    if (filter.status) {
      where.push('status = ?');
      args.push(filter.status);
    } else if (!filter.includeRetired) {
      where.push("status != 'retired'");
    }
    // A literal, so that the partial index of pinned engrams serves `pinned = 1`.
    if (filter.pinned !== undefined) where.push(filter.pinned ? 'pinned = 1' : 'pinned = 0');
    if (filter.idPrefix) {
      where.push('id >= ? AND id < ?');
      args.push(filter.idPrefix, filter.idPrefix + '\uffff');
    }
    const sql = `SELECT doc FROM engrams ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
      ORDER BY learned_at DESC, id DESC ${filter.limit ? 'LIMIT ?' : ''}`;
    if (filter.limit) args.push(filter.limit);
    const rows = this.db.prepare(sql).all(...args) as { doc: string }[];
    return rows.map((r) => JSON.parse(r.doc) as EngramDoc);
  }

  // ---------------------------------------------------------------- append-only logs

  logIndexed(file: string): number {
    const row = this.stmt('SELECT indexed FROM log_files WHERE file = ?').get(file) as { indexed: number } | undefined;
    return row?.indexed ?? 0;
  }

  setLogIndexed(file: string, bytes: number): void {
    this.stmt('INSERT INTO log_files (file, indexed) VALUES (?, ?) ON CONFLICT (file) DO UPDATE SET indexed = excluded.indexed').run(
      file,
      bytes,
    );
  }

  /** Drops what was indexed from a log file (it shrank or was replaced, e.g. by a git checkout). */
  forgetLog(file: string): void {
    const rows = this.stmt('SELECT rowid FROM episodes WHERE file = ?').all(file) as { rowid: number }[];
    for (const r of rows) this.stmt('DELETE FROM episode_fts WHERE rowid = ?').run(r.rowid);
    this.stmt('DELETE FROM episodes WHERE file = ?').run(file);
    this.stmt('DELETE FROM events WHERE file = ?').run(file);
    this.stmt('DELETE FROM log_files WHERE file = ?').run(file);
  }

  addEpisode(e: Episode, file: string): void {
    const info = this.stmt('INSERT OR IGNORE INTO episodes (id, file, at, agent, channel, session, doc) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
      e.id,
      file,
      e.at,
      e.agent,
      e.channel ?? null,
      e.session ?? null,
      JSON.stringify(e),
    );
    if (info.changes)
      this.stmt('INSERT INTO episode_fts (rowid, summary) VALUES (?, ?)').run(info.lastInsertRowid, ftsIndexText(e.summary));
  }

  getEpisode(id: string): Episode | null {
    const row = this.stmt('SELECT doc FROM episodes WHERE id = ?').get(id) as { doc: string } | undefined;
    return row ? (JSON.parse(row.doc) as Episode) : null;
  }

  queryEpisodes(f: TimelineFilter): Episode[] {
    const where: string[] = [];
    const args: unknown[] = [];
    let from = 'episodes e';
    const match = f.query ? ftsQuery(f.query, 'any') : null;
    if (f.query && !match) return [];
    if (match) {
      from = 'episode_fts JOIN episodes e ON e.rowid = episode_fts.rowid';
      where.push('episode_fts MATCH ?');
      args.push(match);
    }
    for (const [col, value] of [
      ['agent', f.agent],
      ['channel', f.channel],
      ['session', f.session],
    ] as const) {
      if (value !== undefined) {
        where.push(`e.${col} = ?`);
        args.push(value);
      }
    }
    if (f.from) {
      where.push('e.at >= ?');
      args.push(f.from);
    }
    if (f.to) {
      where.push('e.at <= ?');
      args.push(f.to);
    }
    const sql = `SELECT e.doc AS doc FROM ${from} ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
      ORDER BY ${match ? 'bm25(episode_fts), ' : ''}e.at DESC, e.rowid DESC LIMIT ?`;
    args.push(f.limit ?? 20);
    return (this.db.prepare(sql).all(...args) as { doc: string }[]).map((r) => JSON.parse(r.doc) as Episode);
  }

  countEpisodes(): number {
    return (this.stmt('SELECT count(*) AS n FROM episodes').get() as { n: number }).n;
  }

  addEvent(e: EngramEvent, file: string): void {
    this.stmt('INSERT INTO events (file, at, action, engram_id, session, doc) VALUES (?, ?, ?, ?, ?, ?)').run(
      file,
      e.at,
      e.action,
      e.engram_id ?? null,
      e.session ?? null,
      JSON.stringify(e),
    );
  }

  listEvents(f: EventFilter): EngramEvent[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (f.engram_id) {
      // Injections name their engrams inside the document.
      where.push("(engram_id = ? OR (action = 'injected' AND doc LIKE ?))");
      args.push(f.engram_id, `%"${f.engram_id}"%`);
    }
    if (f.session) {
      where.push('session = ?');
      args.push(f.session);
    }
    if (f.action) {
      where.push('action = ?');
      args.push(f.action);
    }
    const limit = f.limit ? `LIMIT ${Math.floor(f.limit)}` : '';
    const sql = `SELECT doc FROM (SELECT doc, at, rowid FROM events ${where.length ? 'WHERE ' + where.join(' AND ') : ''}
      ORDER BY at DESC, rowid DESC ${limit}) ORDER BY at, rowid`;
    return (this.db.prepare(sql).all(...args) as { doc: string }[]).map((r) => JSON.parse(r.doc) as EngramEvent);
  }

  countEvents(action: string): number {
    return (this.stmt('SELECT count(*) AS n FROM events WHERE action = ?').get(action) as { n: number }).n;
  }

  countByStatus(): Record<string, number> {
    const rows = this.stmt('SELECT status, count(*) AS n FROM engrams GROUP BY status').all() as {
      status: string;
      n: number;
    }[];
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }
}

/**
 * Puts the index in WAL mode. Processes opening a new index at once all convert it, and SQLite
 * answers SQLITE_BUSY at once, without its busy timeout, to one that would deadlock waiting (it
 * holds a read lock that another's commit waits for): that one waits here and tries again.
 */
function enterWal(db: Database.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
      sleepSync(pause);
    }
  }
}
