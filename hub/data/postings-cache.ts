import type { Database } from '../contracts.js';
import { ident } from './sql.js';
import { FreshRead } from './fresh-read.js';
import type { GroupedPostings, RankedDoc, RankInput } from '../../engine/search/bm25-rank.js';
import { SortedPostings } from '../../engine/search/sorted-postings.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';

// BM25 postings of each organization, and its engrams (as JSON text until first answered), held
// in memory by a hub process, so that ranking a query reads no postings from the database
// (common terms have thousands) and answering it reads no documents. PostgreSQL stays the source
// of truth: each use first reads the organization's highest engram revision (engrams.rev, one
// index lookup, shared by the uses that come together: fresh-read.ts); when it moved, the
// engrams written since are read again and their postings replaced, so every process answers as
// the database stands once a write is acknowledged.
//
// Only committed data feeds the cache: it is enabled for a process's database handle, never for
// a request's transaction, whose searches keep reading postings from the database.
//
// Memory is bounded by a number of engrams over all organizations: the least recently used
// organization is dropped first, and one larger than the bound is never held (its queries read
// postings from the database).

interface CachedDoc extends RankedDoc {
  terms: string[];
  /**
   * The engram: as stored (jsonb as text) until it is first an answer, then parsed, deep-frozen
   * and kept in place of the text, since answers share it (a caller that tried to change it
   * would throw, not change every later answer). Parsed takes less memory than the text here
   * (768 against 1,048 bytes of heap per engram of the bench's corpus), so holding it costs nothing.
   */
  doc: string | EngramDoc;
}

/** One organization's postings as of revision `rev`. */
class OrgPostings {
  rev = 0;
  private readonly docs = new Map<string, CachedDoc>();
  /** The documents by ordinal: the array postings read them from (so never replaced). */
  private readonly byOrd: Array<CachedDoc | undefined> = [];
  /** term -> scope number -> ordinals and column-weighted counts (typed arrays: walked without hashing). */
  private readonly byTerm = new Map<string, Map<number, SortedPostings>>();
  /** Scopes by number (documents hold the number), and their rows and tokens. */
  private readonly scopeIds = new Map<string, number>();
  private readonly scopeNames: string[] = [];
  private readonly scopeRows: number[] = [];
  private readonly scopeTokens: number[] = [];

  get size(): number {
    return this.docs.size;
  }

  /** What ranking needs for a caller who may read `readable` (null: everything). */
  rankInput(terms: readonly string[], readable: readonly string[] | null): RankInput {
    const allowed = readable ? new Set(readable) : null;
    const ok = this.scopeNames.map((name) => !allowed || allowed.has(name));
    const lists = new Map<string, GroupedPostings>();
    for (const t of terms) {
      const all = this.byTerm.get(t);
      if (!all) continue;
      const mine: GroupedPostings = allowed ? new Map([...all].filter(([scope]) => ok[scope])) : all;
      if (mine.size > 0) lists.set(t, mine);
    }
    let rows = 0;
    let tokens = 0;
    ok.forEach((yes, i) => {
      if (!yes) return;
      rows += this.scopeRows[i]!;
      tokens += this.scopeTokens[i]!;
    });
    return { lists, rows, tokens, size: this.docs.size };
  }

  /** The engram as stored, when held (parsed the first time it is an answer, then kept parsed). */
  doc(id: string): EngramDoc | undefined {
    const held = this.docs.get(id);
    if (!held) return undefined;
    if (typeof held.doc === 'string') held.doc = deepFreeze(JSON.parse(held.doc) as EngramDoc);
    return held.doc;
  }

  /** Replaces an engram's postings with those of its latest revision. */
  put(row: RevisionRow): void {
    const old = this.docs.get(row.id);
    if (old) {
      for (const t of old.terms) {
        const all = this.byTerm.get(t)!;
        const group = all.get(old.group)!;
        group.delete(old.ord);
        if (group.size === 0) all.delete(old.group);
        if (all.size === 0) this.byTerm.delete(t);
      }
      this.count(old.group, -1, -old.ntok);
    }
    const group = this.scopeNumber(row.scope);
    const doc: CachedDoc = {
      id: row.id,
      ord: old?.ord ?? this.docs.size,
      group,
      ntok: Number(row.ntok),
      live: row.live,
      seq: Number(row.seq),
      terms: row.terms,
      doc: row.doc,
    };
    this.docs.set(row.id, doc);
    this.byOrd[doc.ord] = doc;
    row.terms.forEach((t, i) => {
      let all = this.byTerm.get(t);
      if (!all) this.byTerm.set(t, (all = new Map()));
      let postings = all.get(group);
      if (!postings) all.set(group, (postings = new SortedPostings(this.byOrd)));
      postings.set(doc.ord, Number(row.wtfs[i]));
    });
    this.count(group, 1, doc.ntok);
    this.rev = Math.max(this.rev, Number(row.rev));
  }

  private scopeNumber(name: string): number {
    let n = this.scopeIds.get(name);
    if (n === undefined) {
      this.scopeIds.set(name, (n = this.scopeNames.length));
      this.scopeNames.push(name);
      this.scopeRows.push(0);
      this.scopeTokens.push(0);
    }
    return n;
  }

  private count(scope: number, rows: number, tokens: number): void {
    this.scopeRows[scope]! += rows;
    this.scopeTokens[scope]! += tokens;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
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
  doc: string;
}

/** An organization's highest engram revision and its row count (bigints, as text). */
type Head = { rev: string | null; rows: string | null };

/** The organizations' postings one database handle serves, within a bound on engrams held. */
class PostingsCache {
  /** Least recently used first. */
  private readonly orgs = new Map<string, OrgPostings>();
  private readonly catchingUp = new Map<string, Promise<void>>();
  /** Uses since start: answered from memory as held, after reading what changed, or from the database (too large). */
  private counts = { hits: 0, misses: 0, bypassed: 0 };

  /** The organization's highest revision and row count, read after each use began (requests that come together share one read). */
  private readonly heads: FreshRead<Head>;

  constructor(
    private readonly db: Database,
    private readonly maxEngrams: number,
  ) {
    this.heads = new FreshRead(async (schema) => {
      const s = ident(schema);
      const r = await db.query<Head>(
        `SELECT (SELECT max(rev) FROM ${s}.engrams) AS rev, (SELECT sum(n_rows) FROM ${s}.fts_scope_stats) AS rows`,
      );
      return r.rows[0]!;
    });
  }

  /** The organization's postings as of the database's latest revision, or null when it is too large to hold. */
  async current(schema: string): Promise<OrgPostings | null> {
    const head = await this.heads.get(schema);
    if (Number(head.rows ?? 0) > this.maxEngrams) {
      this.orgs.delete(schema);
      this.counts.bypassed++;
      return null;
    }
    let org = this.orgs.get(schema);
    if (org) this.orgs.delete(schema);
    else org = new OrgPostings();
    this.orgs.set(schema, org);
    if (org.rev < Number(head.rev ?? 0)) this.counts.misses++;
    else this.counts.hits++;
    // A catch-up already running may have read before the head moved: then one more.
    for (let i = 0; i < 2 && org.rev < Number(head.rev ?? 0); i++) await this.catchUp(schema, org);
    // Rows are never deleted but by erasing a person's data (access/erase-personal.ts), which no
    // revision announces: holding more engrams than the statistics count means some are gone, so
    // the postings are read again. Only when nothing newer came in meanwhile: then the counts agree.
    if (org.rev === Number(head.rev ?? 0) && org.size > Number(head.rows ?? 0)) {
      await this.catchingUp.get(schema);
      org = new OrgPostings();
      this.orgs.set(schema, org);
      await this.catchUp(schema, org);
    }
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
          `SELECT e.id, e.rev, e.ntok, e.status <> 'retired' AS live, e.seq, e.scope, e.doc::text AS doc,
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

  /** What the metrics read: engrams and organizations held, the bound, and the uses since start. */
  stats(): { engrams: number; orgs: number; maxEngrams: number; hits: number; misses: number; bypassed: number } {
    let engrams = 0;
    for (const o of this.orgs.values()) engrams += o.size;
    return { engrams, orgs: this.orgs.size, maxEngrams: this.maxEngrams, ...this.counts };
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
