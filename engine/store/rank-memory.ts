import type Database from 'better-sqlite3';
import { rankBm25, type GroupedPostings, type RankedDoc } from '../search/bm25-rank.js';
import { columnTerms, parseQuery, phraseTokens } from '../search/fts-tokens.js';
import { BM25_COLUMN_WEIGHTS } from '../search/fts-text.js';
import { SortedPostings } from '../search/sorted-postings.js';

// Recall's BM25 ranked from postings held in memory, for a process that searches the same store
// again and again (svc mcp, the terminal UI, a command that searches once per engram). FTS5's
// bm25() scores every row that holds any query term: with common words at 100,000 engrams that
// is tens of thousands of rows, 5-20 ms a query. In memory, search/bm25-rank.ts (the hub's
// ranker: FTS5's formula, top-k pruning of common terms) needs a fraction of that.
//
// The index stays the truth, and the answers are FTS5's: same order, same scores.
// - Documents (length, retired or not) are read once from FTS5's docsize table; a term's
//   postings when a query first has it, from fts5vocab and FTS5 (weighByColumns), into two
//   typed arrays (sorted-postings.ts).
// - Every write of an engram row, by any process, logs the row (engram_changes: sqlite-index.ts).
//   Before each ranking, in the same read transaction, the rows changed since the last one are
//   read again and their postings replaced; a reader further behind than the log reaches, with
//   many changes to apply, or after the index was cleared, starts over. (A process of a version
//   before the log would write unseen: until its restart, this one would rank from what it saw.)
// - Queries with a phrase of several tokens (text written without spaces, as Chinese) return
//   null: FTS5 checks that the tokens are adjacent, these postings do not hold positions.

/** engram_fts's columns, in order: BM25_COLUMN_WEIGHTS follows it. */
const COLUMNS = ['statement', 'tags', 'domain', 'rationale'] as const;
const COLUMN_WEIGHT = Object.fromEntries(COLUMNS.map((c, i) => [c, BM25_COLUMN_WEIGHTS[i]!])) as Record<string, number>;
/** How many changes engram_changes keeps (sqlite-index.ts writes it). */
export const CHANGES_KEPT = 4096;
/** The row of a change that touched every row (the index was cleared). */
export const ALL_ROWS = 0;
/** More changed rows than this at once (a rebuild, a pull): start over rather than replay them. */
const REPLAY_AT_MOST = 512;
const GROUP = 0;

export interface RankedRow {
  rowid: number;
  score: number;
}

export class RankMemory {
  /** By rowid (an array: looked up once per posting read, faster than a Map); the postings read it, so it is never replaced. */
  private readonly docs: Array<RankedDoc | undefined> = [];
  /** term -> its postings; empty: no document has it. */
  private readonly lists = new Map<string, SortedPostings>();
  private rows = 0;
  private tokens = 0;
  private size = 1;
  /** The last change applied; -1: nothing loaded. */
  private seen = -1;
  private readonly stmts: Record<'latest' | 'oldest' | 'changed' | 'row' | 'instances' | 'postings' | 'match' | 'any', Database.Statement>;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_fts_instances USING fts5vocab(main, engram_fts, 'instance')`);
    this.stmts = {
      latest: db.prepare('SELECT max(seq) FROM engram_changes').pluck(),
      oldest: db.prepare('SELECT min(seq) FROM engram_changes').pluck(),
      changed: db.prepare('SELECT DISTINCT row FROM engram_changes WHERE seq > ? ORDER BY row').pluck(),
      row: db.prepare(
        `SELECT f.statement, f.tags, f.domain, f.rationale, e.status
           FROM engram_fts f JOIN engrams e ON e.rowid = f.rowid WHERE f.rowid = ?`,
      ),
      // Lists come back as one JSON array: a row per instance cost more in the binding than in SQLite.
      instances: db.prepare('SELECT json_group_array(doc) FROM temp.engram_fts_instances WHERE term = ?').pluck(),
      postings: db.prepare('SELECT doc, col FROM temp.engram_fts_instances WHERE term = ?').raw(),
      match: db
        .prepare('SELECT json_group_array(rowid) FROM (SELECT rowid FROM engram_fts WHERE engram_fts MATCH ? ORDER BY rowid)')
        .pluck(),
      any: db.prepare('SELECT 1 FROM engram_fts WHERE engram_fts MATCH ? LIMIT 1').pluck(),
    };
  }

  /** The best `limit` live rows for an `any` query, as FTS5 would rank them; null when FTS5 must. Call inside a read transaction. */
  rank(query: string, limit: number): RankedRow[] | null {
    const parsed = parseQuery(query, 'any');
    if (!parsed) return [];
    if (parsed.phrases.some((p) => p.length > 1)) return null;
    this.catchUp();
    // One group: a local store has no visibility groups.
    const lists = new Map<string, GroupedPostings>();
    for (const [term] of parsed.phrases as Array<[string]>) {
      const postings = this.lists.get(term) ?? this.load(term);
      if (postings.size > 0) lists.set(term, new Map([[GROUP, postings]]));
    }
    const ranked = rankBm25(parsed, { lists, rows: this.rows, tokens: this.tokens, size: this.size }, limit);
    return ranked.map((r) => ({ rowid: Number(r.id), score: r.score }));
  }

  private catchUp(): void {
    const latest = (this.stmts.latest.get() as number | null) ?? 0;
    if (this.seen >= 0 && latest === this.seen) return;
    const oldest = (this.stmts.oldest.get() as number | null) ?? 0;
    const changed = this.seen < 0 || oldest > this.seen + 1 || latest < this.seen ? null : (this.stmts.changed.all(this.seen) as number[]);
    if (!changed || changed.length > REPLAY_AT_MOST || changed[0] === ALL_ROWS) this.loadDocuments();
    else for (const rowid of changed) this.replace(rowid);
    this.seen = latest;
  }

  /** Starts over: every document's length and state, no postings (they load as queries need them). */
  private loadDocuments(): void {
    this.docs.length = 0;
    this.lists.clear();
    this.rows = 0;
    this.tokens = 0;
    this.size = 1;
    const retired = new Set(this.db.prepare(`SELECT rowid FROM engrams WHERE status = 'retired'`).pluck().all() as number[]);
    // As three values, not a row each: at 100,000 engrams 50 ms against 300 (a Buffer per row).
    const [ids, sizes, hex] = this.db
      .prepare("SELECT json_group_array(id), json_group_array(length(sz)), group_concat(hex(sz), '') FROM engram_fts_docsize")
      .raw()
      .get() as [string, string, string | null];
    const totals = columnTotals(JSON.parse(sizes) as number[], hex ?? '');
    (JSON.parse(ids) as number[]).forEach((rowid, i) => this.add(rowid, totals[i]!, !retired.has(rowid)));
  }

  private add(rowid: number, ntok: number, live: boolean): RankedDoc {
    const doc: RankedDoc = { id: String(rowid), ord: rowid, group: GROUP, ntok, live, seq: rowid };
    this.docs[rowid] = doc;
    this.rows += 1;
    this.tokens += ntok;
    if (rowid >= this.size) this.size = rowid + 1;
    return doc;
  }

  /** One changed row: its old postings out, its current ones in (for the terms held). */
  private replace(rowid: number): void {
    const old = this.docs[rowid];
    if (old) {
      for (const postings of this.lists.values()) postings.delete(rowid);
      this.docs[rowid] = undefined;
      this.rows -= 1;
      this.tokens -= old.ntok;
    }
    const row = this.readRow(rowid);
    if (!row) return;
    const doc = this.add(rowid, row.ntok, row.live);
    for (const [term, weight] of row.terms) this.lists.get(term)?.set(doc.ord, weight);
  }

  private load(term: string): SortedPostings {
    const postings = (phraseTokens(term).join(' ') === term ? this.weighByColumns(term) : this.weighByInstances(term)).fit();
    this.lists.set(term, postings);
    return postings;
  }

  /**
   * A term's column-weighted count per document. fts5vocab names each instance's column, but at
   * about 1 us an instance (it decodes positions): most of a first query's time at 100,000
   * engrams. Instead, in document order: its instances (without the column: 5x faster; as one
   * JSON array, a third less again than a row each), merged with one MATCH per column, which says
   * which columns hold it. That settles the count when one column holds it, or each holding
   * column once; otherwise (the term repeated in one column and present in another) the row is
   * tokenized. Most terms are in no column but the statement (261 of the bench's 281 query
   * terms): one MATCH of the other columns shows it, and each instance then weighs the
   * statement's weight. A MATCH stems its text again, so the term must be its own token; else
   * weighByInstances reads it.
   */
  private weighByColumns(term: string): SortedPostings {
    const instances = JSON.parse(this.stmts.instances.get(term) as string) as number[];
    const postings = new SortedPostings(this.docs);
    if (this.stmts.any.get(`{${COLUMNS.slice(1).join(' ')}} : "${term}"`) === undefined) {
      for (let i = 0; i < instances.length;) {
        const rowid = instances[i]!;
        let n = 0;
        for (; instances[i] === rowid; i++) n++;
        if (this.docs[rowid]) postings.push(rowid, n * BM25_COLUMN_WEIGHTS[0]!);
      }
      return postings;
    }
    const holders = COLUMNS.map((col) => JSON.parse(this.stmts.match.get(`${col} : "${term}"`) as string) as number[]);
    const at = holders.map(() => 0);
    for (let i = 0; i < instances.length;) {
      const rowid = instances[i]!;
      let n = 0;
      for (; instances[i] === rowid; i++) n++;
      let held = 0;
      let weight = 0;
      for (let c = 0; c < holders.length; c++) {
        const rows = holders[c]!;
        let j = at[c]!;
        while (j < rows.length && rows[j]! < rowid) j++;
        at[c] = j;
        if (rows[j] !== rowid) continue;
        held += 1;
        weight += BM25_COLUMN_WEIGHTS[c]!;
      }
      if (!this.docs[rowid]) continue;
      if (held === 1) weight *= n;
      else if (held !== n) weight = this.readRow(rowid)?.terms.get(term) ?? 0;
      postings.push(rowid, weight);
    }
    return postings;
  }

  /** The same, from each instance's column (in document order). */
  private weighByInstances(term: string): SortedPostings {
    const postings = new SortedPostings(this.docs);
    let rowid = -1;
    let weight = 0;
    const flush = () => {
      if (this.docs[rowid]) postings.push(rowid, weight);
    };
    for (const [row, col] of this.stmts.postings.iterate(term) as Iterable<[number, string]>) {
      if (row !== rowid) {
        if (rowid >= 0) flush();
        rowid = row;
        weight = 0;
      }
      weight += COLUMN_WEIGHT[col]!;
    }
    if (rowid >= 0) flush();
    return postings;
  }

  /** A row as the index holds it now: its terms (tokenized as FTS5 does), length and state; undefined when gone. */
  private readRow(rowid: number): { terms: Map<string, number>; ntok: number; live: boolean } | undefined {
    const row = this.stmts.row.get(rowid) as
      { statement: string; tags: string; domain: string; rationale: string; status: string } | undefined;
    if (!row) return undefined;
    return { ...columnTerms([row.statement, row.tags, row.domain, row.rationale]), live: row.status !== 'retired' };
  }
}

/**
 * BM25's document lengths from docsize records given as one hex string (each record `sizes[i]`
 * bytes): per record, the sum of its column sizes, SQLite varints.
 */
function columnTotals(sizes: number[], hex: string): Int32Array {
  const nibble = (at: number) => {
    const c = hex.charCodeAt(at);
    return c <= 57 ? c - 48 : c - 55;
  };
  const totals = new Int32Array(sizes.length);
  let at = 0;
  sizes.forEach((bytes, i) => {
    let total = 0;
    let value = 0;
    for (const end = at + 2 * bytes; at < end; at += 2) {
      const byte = (nibble(at) << 4) | nibble(at + 1);
      value = value * 128 + (byte & 0x7f);
      if (byte < 0x80) {
        total += value;
        value = 0;
      }
    }
    totals[i] = total;
  });
  return totals;
}
