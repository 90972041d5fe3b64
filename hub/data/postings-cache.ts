import type { Database } from '../contracts.js';
import { ident } from './migrate.js';

// BM25 postings of each organization, held in memory by a hub process, so that ranking a query
// reads no postings from the database (common terms have thousands). PostgreSQL stays the source
// of truth: each use first reads the organization's highest engram revision (engrams.rev, one
// index lookup); when it moved, the engrams written since are read again and their postings
// replaced, so every process answers as the database stands once a write is acknowledged.
//
// Only committed data feeds the cache: it is enabled for a process's database handle, never for
// a request's transaction, whose searches keep reading postings from the database.
//
// Memory is bounded by a number of engrams over all organizations: the least recently used
// organization is dropped first, and one larger than the bound is never held (its queries read
// postings from the database).

/** One engram as ranking sees it. Retired engrams are kept (BM25 counts them in N and in document frequency). */
export interface RankedDoc {
  id: string;
  /** Tokens in the full-text columns: BM25's document length. */
  ntok: number;
  live: boolean;
  /** Insertion order: ties rank as FTS5's rowid order does. */
  seq: number;
}

interface CachedDoc extends RankedDoc {
  scope: string;
  terms: string[];
}

/** term -> document -> column-weighted count. */
export type TermLists = Map<string, Map<RankedDoc, number>>;

/** One organization's postings as of revision `rev`. */
export class OrgPostings {
  rev = 0;
  private readonly docs = new Map<string, CachedDoc>();
  private readonly byTerm = new Map<string, Map<RankedDoc, number>>();
  private readonly scopes = new Map<string, { rows: number; tokens: number }>();

  get size(): number {
    return this.docs.size;
  }

  /** The lists of these terms (shared, not copied: read them, never change them). */
  lists(terms: readonly string[]): TermLists {
    const out: TermLists = new Map();
    for (const t of terms) {
      const l = this.byTerm.get(t);
      if (l) out.set(t, l);
    }
    return out;
  }

  /** Rows and tokens over the scopes the caller may read (null: all): BM25's N and average length. */
  totals(readable: ReadonlySet<string> | null): { rows: number; tokens: number } {
    let rows = 0;
    let tokens = 0;
    for (const [scope, s] of this.scopes) {
      if (readable && !readable.has(scope)) continue;
      rows += s.rows;
      tokens += s.tokens;
    }
    return { rows, tokens };
  }

  scopeOf(doc: RankedDoc): string {
    return (doc as CachedDoc).scope;
  }

  /** Replaces an engram's postings with those of its latest revision. */
  put(row: RevisionRow): void {
    const old = this.docs.get(row.id);
    if (old) {
      for (const t of old.terms) {
        const l = this.byTerm.get(t)!;
        l.delete(old);
        if (l.size === 0) this.byTerm.delete(t);
      }
      this.count(old.scope, -1, -old.ntok);
    }
    const doc: CachedDoc = { id: row.id, ntok: Number(row.ntok), live: row.live, seq: Number(row.seq), scope: row.scope, terms: row.terms };
    this.docs.set(row.id, doc);
    row.terms.forEach((t, i) => {
      let l = this.byTerm.get(t);
      if (!l) this.byTerm.set(t, (l = new Map()));
      l.set(doc, Number(row.wtfs[i]));
    });
    this.count(doc.scope, 1, doc.ntok);
    this.rev = Math.max(this.rev, Number(row.rev));
  }

  private count(scope: string, rows: number, tokens: number): void {
    const s = this.scopes.get(scope) ?? { rows: 0, tokens: 0 };
    s.rows += rows;
    s.tokens += tokens;
    if (s.rows === 0) this.scopes.delete(scope);
    else this.scopes.set(scope, s);
  }
}

interface RevisionRow {
  id: string;
  rev: string | number;
  ntok: number;
  live: boolean;
  seq: string | number;
  scope: string;
  terms: string[];
  wtfs: number[];
}

/** The organizations' postings one database handle serves, within a bound on engrams held. */
class PostingsCache {
  /** Least recently used first. */
  private readonly orgs = new Map<string, OrgPostings>();
  private readonly catchingUp = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Database,
    private readonly maxEngrams: number,
  ) {}

  /** The organization's postings as of the database's latest revision, or null when it is too large to hold. */
  async current(schema: string): Promise<OrgPostings | null> {
    const s = ident(schema);
    const head = (await this.db.query<{ rev: string | null; rows: string | null }>(
      `SELECT (SELECT max(rev) FROM ${s}.engrams) AS rev, (SELECT sum(n_rows) FROM ${s}.fts_scope_stats) AS rows`,
    )).rows[0]!;
    if (Number(head.rows ?? 0) > this.maxEngrams) {
      this.orgs.delete(schema);
      return null;
    }
    let org = this.orgs.get(schema);
    if (org) this.orgs.delete(schema);
    else org = new OrgPostings();
    this.orgs.set(schema, org);
    // A catch-up already running may have read before the head moved: then one more.
    for (let i = 0; i < 2 && org.rev < Number(head.rev ?? 0); i++) await this.catchUp(schema, org);
    this.evict(schema);
    return org;
  }

  /** Reads the engrams written since the postings' revision; one reader at a time per organization. */
  private catchUp(schema: string, org: OrgPostings): Promise<void> {
    let running = this.catchingUp.get(schema);
    if (!running) {
      const s = ident(schema);
      running = this.db
        .query<RevisionRow>(
          `SELECT e.id, e.rev, e.ntok, e.status <> 'retired' AS live, e.seq, e.scope,
                  coalesce(t.terms, '{}') AS terms, coalesce(t.wtfs, '{}') AS wtfs
             FROM ${s}.engrams e
             LEFT JOIN LATERAL (SELECT array_agg(term) AS terms, array_agg(wtf) AS wtfs FROM ${s}.engram_terms WHERE engram_id = e.id) t ON true
            WHERE e.rev > $1 ORDER BY e.rev`,
          [org.rev],
        )
        .then((r) => {
          for (const row of r.rows) org.put(row);
        })
        .finally(() => this.catchingUp.delete(schema));
      this.catchingUp.set(schema, running);
    }
    return running;
  }

  /** Drops the least recently used organizations (never `keep`) while the bound is exceeded. */
  private evict(keep: string): void {
    let held = 0;
    for (const o of this.orgs.values()) held += o.size;
    for (const [schema, o] of this.orgs) {
      if (held <= this.maxEngrams) break;
      if (schema === keep) continue;
      this.orgs.delete(schema);
      held -= o.size;
    }
  }

  /** Organizations held now, least recently used first (for tests and diagnostics). */
  held(): string[] {
    return [...this.orgs.keys()];
  }
}

const caches = new WeakMap<Database, PostingsCache>();

/** Serves the BM25 postings of queries made through `db` from memory, up to `maxEngrams` engrams (0: never). */
export function enablePostingsCache(db: Database, maxEngrams: number): void {
  if (maxEngrams > 0) caches.set(db, new PostingsCache(db, maxEngrams));
  else caches.delete(db);
}

/** The cache serving `db`, when one is enabled for it. */
export function postingsCacheOf(db: Database): PostingsCache | undefined {
  return caches.get(db);
}
