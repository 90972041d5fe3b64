import type Database from 'better-sqlite3';
import { openSqlite } from '../store/sqlite-open.js';
import { ftsIndexText, BM25_COLUMN_WEIGHTS, FTS5_TOKENIZE } from './fts-text.js';
import { ftsQuery } from './fts-query.js';
import type { EngramDoc } from '../model/engram-types.js';

// Ranking outside FTS5 (the hub, and a local process that keeps postings in memory:
// store/rank-memory.ts) needs the very same terms as the local index (porter stemming, unicode61
// folding, diacritics), so SQLite tokenizes: an in-memory FTS5 table with the local index's
// tokenizer, read back through fts5vocab. Documents become column-weighted term counts (FTS5's
// bm25 adds each instance's column weight); queries become the phrases of the MATCH expression
// the local index would run.

let memo: { db: Database.Database; insert: Database.Statement; read: Database.Statement; clear: Database.Statement } | undefined;

function tokenizer() {
  if (!memo) {
    const db = openSqlite(':memory:');
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(c0, c1, c2, c3, ${FTS5_TOKENIZE});
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');`);
    memo = {
      db,
      insert: db.prepare('INSERT INTO t (rowid, c0, c1, c2, c3) VALUES (1, ?, ?, ?, ?)'),
      read: db.prepare('SELECT term, col, offset FROM v ORDER BY col, offset'),
      clear: db.prepare('DELETE FROM t'),
    };
  }
  return memo;
}

function instances(cols: [string, string, string, string]): Array<{ term: string; col: string; offset: number }> {
  const t = tokenizer();
  t.insert.run(...cols);
  const rows = t.read.all() as Array<{ term: string; col: string; offset: number }>;
  t.clear.run();
  return rows;
}

const COLUMN_WEIGHT: Record<string, number> = {
  c0: BM25_COLUMN_WEIGHTS[0],
  c1: BM25_COLUMN_WEIGHTS[1],
  c2: BM25_COLUMN_WEIGHTS[2],
  c3: BM25_COLUMN_WEIGHTS[3],
};

export interface DocumentTerms {
  /** term -> column-weighted count */
  terms: Map<string, number>;
  /** All tokens in all columns: the document length FTS5's bm25 uses. */
  ntok: number;
}

/** An engram's terms exactly as the local FTS5 index holds them. */
export function documentTerms(e: EngramDoc): DocumentTerms {
  return columnTerms([
    ftsIndexText(e.statement),
    ftsIndexText((e.tags ?? []).join(' ')),
    ftsIndexText(e.domain ?? ''),
    ftsIndexText(e.rationale ?? ''),
  ]);
}

/** The terms of a full-text row as stored (statement, tags, domain, rationale: already index text). */
export function columnTerms(cols: [string, string, string, string]): DocumentTerms {
  const rows = instances(cols);
  const terms = new Map<string, number>();
  for (const r of rows) terms.set(r.term, (terms.get(r.term) ?? 0) + COLUMN_WEIGHT[r.col]!);
  return { terms, ntok: rows.length };
}

/** A phrase of the query: its tokens in order (one for most words, one per character for CJK). */
export type Phrase = string[];

export interface ParsedQuery {
  /** Every phrase of the expression, repeats kept (FTS5 scores each occurrence). */
  phrases: Phrase[];
  /** mode 'all': each group needs one of its phrases (indexes into `phrases`). */
  groups?: number[][];
}

/** The tokens FTS5 makes of a text, in order. */
export function phraseTokens(text: string): Phrase {
  // Queries share their words: a word is tokenized once (26 us a statement round here).
  let tokens = phraseMemo.get(text);
  if (tokens === undefined) {
    tokens = instances([text, '', '', '']).map((r) => r.term);
    if (phraseMemo.size >= PHRASE_MEMO) phraseMemo.clear();
    phraseMemo.set(text, tokens);
  }
  return [...tokens];
}

const PHRASE_MEMO = 8192;
const phraseMemo = new Map<string, Phrase>();

/**
 * The query the local index would run for `text`, as phrases of tokens. Parses the MATCH
 * expression ftsQuery builds (quoted phrases joined by OR, or AND of OR-groups), so the two
 * backends can never drift apart on query rules.
 */
export function parseQuery(text: string, mode: 'any' | 'all'): ParsedQuery | null {
  // Agents repeat their queries; tokenizing costs a few SQLite statements each time.
  const key = `${mode}\u0000${text}`;
  const cached = parsedQueries.get(key);
  if (cached !== undefined) {
    parsedQueries.delete(key);
    parsedQueries.set(key, cached);
    return cached;
  }
  const parsed = parseUncached(text, mode);
  if (parsedQueries.size >= PARSED_QUERY_CACHE) parsedQueries.delete(parsedQueries.keys().next().value!);
  parsedQueries.set(key, parsed);
  return parsed;
}

const PARSED_QUERY_CACHE = 2000;
const parsedQueries = new Map<string, ParsedQuery | null>();

function parseUncached(text: string, mode: 'any' | 'all'): ParsedQuery | null {
  const expr = ftsQuery(text, mode);
  if (!expr) return null;
  const phrases: Phrase[] = [];
  const groups: number[][] = [[]];
  const re = /"((?:[^"]|"")*)"|\bAND\b/g;
  for (let m = re.exec(expr); m; m = re.exec(expr)) {
    if (m[1] === undefined) {
      groups.push([]);
      continue;
    }
    const tokens = phraseTokens(m[1].replace(/""/g, '"'));
    if (tokens.length === 0) continue;
    groups[groups.length - 1]!.push(phrases.length);
    phrases.push(tokens);
  }
  if (phrases.length === 0) return null;
  return mode === 'all' ? { phrases, groups: groups.filter((g) => g.length > 0) } : { phrases };
}
