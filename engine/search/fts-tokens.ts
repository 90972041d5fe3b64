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

interface Tokenizer {
  begin: Database.Statement;
  rollback: Database.Statement;
  insert: Database.Statement;
  /** Every instance as [term, column]. */
  instances: Database.Statement;
  /** The first column's terms in order. */
  inOrder: Database.Statement;
}

let memo: Tokenizer | undefined;

function tokenizer(): Tokenizer {
  if (!memo) {
    const db = openSqlite(':memory:');
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(c0, c1, c2, c3, ${FTS5_TOKENIZE});
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');`);
    memo = {
      begin: db.prepare('BEGIN'),
      rollback: db.prepare('ROLLBACK'),
      insert: db.prepare('INSERT INTO t (rowid, c0, c1, c2, c3) VALUES (1, ?, ?, ?, ?)'),
      instances: db.prepare('SELECT term, col FROM v').raw(),
      inOrder: db.prepare('SELECT term FROM v ORDER BY offset').pluck(),
    };
  }
  return memo;
}

/**
 * `read`'s rows for a one-row table holding `cols`. The row is inserted in a transaction that is
 * rolled back, not deleted: an FTS5 delete is a write of its own (a third of a call's time).
 */
function tokenized<R>(cols: [string, string, string, string], read: Database.Statement): R[] {
  const t = tokenizer();
  t.begin.run();
  try {
    t.insert.run(...cols);
    return read.all() as R[];
  } finally {
    t.rollback.run();
  }
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
  const rows = tokenized<[string, string]>(cols, tokenizer().instances);
  const terms = new Map<string, number>();
  for (const [term, col] of rows) terms.set(term, (terms.get(term) ?? 0) + COLUMN_WEIGHT[col]!);
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
  // Queries share their words: a word is tokenized once (a round of SQLite statements, 20 us here).
  let tokens = phraseMemo.get(text);
  if (tokens === undefined) {
    tokens = tokenized<string>([text, '', '', ''], tokenizer().inOrder);
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
