import { randomBytes } from 'node:crypto';
import type { EngramBackend, EngramWriter, ListFilter, SearchHit, SecretPolicy, StoreStats, VectorHit } from '../../backend.js';
import type { Embedder } from '../../embed/embedder.js';
import type { EngramDoc } from '../../model/engram-types.js';
import type { EngramEvent, Episode, EventFilter, EventNote, Session, TimelineFilter } from '../../model/records.js';
import { changeEvent } from '../../model/change-event.js';
import { contentHash } from '../../model/content-hash.js';
import { formatId, idDay, idStem, type IdKind } from '../../model/ids.js';
import { validateEngram } from '../../model/validate-engram.js';
import { BM25_COLUMN_WEIGHTS, ftsIndexText } from '../../search/fts-text.js';
import { ftsQuery } from '../../search/fts-query.js';
import { invalid } from '../../errors.js';

// The reference backend: the whole contract (engine/backend.ts) in memory, in one small file, so
// that what the contract asks is readable without SQLite or PostgreSQL in the way, and so that
// the operations' unit tests run without a disk. It passes backend-contract.ts like the others.
// It lives with the tests, not in engine/store: nothing in the product keeps engrams only in
// memory, and a backend the product does not ship should not grow product callers.
//
// Where it is simpler than the real ones, on purpose:
// - BM25 over the same columns, weights and query rules (ftsQuery) as the local index, but words
//   are not stemmed (FTS5's porter tokenizer is): "migration" does not find "migrations".
// - Vectors are compared by brute force.
// - One process: `refresh` has nothing to catch up with, and writes are serialized by a promise.

const K1 = 1.2;
const B = 0.75;
const WORD = /[\p{L}\p{N}]+/gu;

/** The words of a text as the index keeps them: folded as ftsIndexText does, lowercased, without diacritics. */
function words(text: string): string[] {
  const plain = ftsIndexText(text)
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
  return plain.match(WORD) ?? [];
}

interface Indexed {
  /** word -> column-weighted count */
  terms: Map<string, number>;
  /** Words in all columns: BM25's document length. */
  length: number;
}

function indexColumns(columns: string[]): Indexed {
  const terms = new Map<string, number>();
  let length = 0;
  columns.forEach((text, col) => {
    for (const w of words(text)) {
      terms.set(w, (terms.get(w) ?? 0) + (BM25_COLUMN_WEIGHTS[col] ?? 1));
      length += 1;
    }
  });
  return { terms, length };
}

/** The phrases of the MATCH expression the local index would run, grouped for `all` (each group needs one). */
function parseQuery(query: string, mode: 'any' | 'all'): { phrases: string[][]; groups: number[][] } | null {
  const expr = ftsQuery(query, mode);
  if (!expr) return null;
  const phrases: string[][] = [];
  const groups: number[][] = [[]];
  for (const m of expr.matchAll(/"((?:[^"]|"")*)"|\bAND\b/g)) {
    if (m[1] === undefined) {
      groups.push([]);
      continue;
    }
    const tokens = words(m[1].replace(/""/g, '"'));
    if (tokens.length === 0) continue;
    groups.at(-1)!.push(phrases.length);
    phrases.push(tokens);
  }
  return phrases.length ? { phrases, groups: groups.filter((g) => g.length) } : null;
}

/**
 * FTS5's bm25() over `docs` (all of them count in N and in document frequency; `eligible` says
 * which may be returned). A phrase of several words counts where all occur, with the least count.
 */
function rankBm25<T>(
  docs: Array<{ item: T; index: Indexed }>,
  query: string,
  mode: 'any' | 'all',
  eligible: (item: T) => boolean,
): Array<{ item: T; score: number }> {
  const parsed = parseQuery(query, mode);
  if (!parsed || docs.length === 0) return [];
  const avg = docs.reduce((n, d) => n + d.index.length, 0) / docs.length || 1;
  const freq = (phrase: string[], d: Indexed) => Math.min(...phrase.map((w) => d.terms.get(w) ?? 0));
  const idf = parsed.phrases.map((p) => {
    const n = docs.filter((d) => freq(p, d.index) > 0).length;
    const v = Math.log((docs.length - n + 0.5) / (n + 0.5));
    return v > 0 ? v : 1e-6;
  });
  const out: Array<{ item: T; score: number }> = [];
  for (const d of docs) {
    if (!eligible(d.item)) continue;
    const f = parsed.phrases.map((p) => freq(p, d.index));
    const matches = mode === 'all' ? parsed.groups.every((g) => g.some((i) => f[i]! > 0)) : f.some((x) => x > 0);
    if (!matches) continue;
    let score = 0;
    f.forEach((x, i) => {
      if (x > 0) score += (idf[i]! * x * (K1 + 1)) / (x + K1 * (1 - B + (B * d.index.length) / avg));
    });
    out.push({ item: d.item, score });
  }
  // Stable: equal scores keep insertion order, as FTS5's rowid order does.
  return out.sort((a, b) => b.score - a.score);
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

const clone = <T>(value: T): T => structuredClone(value);
const live = (e: EngramDoc) => e.status !== 'retired';

export interface MemoryBackendOptions {
  /** The store prefix of its ids (default MEM). */
  idPrefix?: string;
  /** Default: keep-local, as the local store. */
  secretPolicy?: SecretPolicy;
}

export class MemoryBackend implements EngramBackend {
  readonly secretPolicy?: SecretPolicy;
  private readonly prefix: string;
  /** Insertion order is the "rowid" order ties rank in. */
  private readonly engrams = new Map<string, { doc: EngramDoc; hash: string; index: Indexed }>();
  private readonly vectors = new Map<string, { hash: string; vector: Float32Array }>();
  private vectorModel: string | undefined;
  private readonly counters = new Map<string, number>();
  private readonly episodes: Array<{ episode: Episode; index: Indexed }> = [];
  private readonly sessions = new Map<string, Session>();
  private readonly events: EngramEvent[] = [];
  private lock: Promise<unknown> = Promise.resolve();

  constructor(options: MemoryBackendOptions = {}) {
    this.prefix = options.idPrefix ?? 'MEM';
    if (options.secretPolicy) this.secretPolicy = options.secretPolicy;
  }

  // ---------------------------------------------------------------- EngramStore

  async get(id: string): Promise<EngramDoc | null> {
    const row = this.engrams.get(id);
    return row ? clone(row.doc) : null;
  }

  async findByHash(hash: string): Promise<EngramDoc[]> {
    return [...this.engrams.values()]
      .filter((r) => r.hash === hash)
      .map((r) => clone(r.doc))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  async list(f: ListFilter): Promise<EngramDoc[]> {
    const found = [...this.engrams.values()]
      .map((r) => r.doc)
      .filter(
        (e) =>
          (!f.scope || e.scope === f.scope) &&
          (!f.domain || e.domain === f.domain || (e.domain ?? '').startsWith(f.domain + '.')) &&
          (!f.type || e.type === f.type) &&
          (f.status ? e.status === f.status : f.includeRetired || live(e)) &&
          (f.pinned === undefined || Boolean(e.pinned) === f.pinned) &&
          (!f.idPrefix || e.id.startsWith(f.idPrefix)),
      )
      .sort((a, b) => {
        const la = a.temporal?.learned_at ?? '';
        const lb = b.temporal?.learned_at ?? '';
        return la !== lb ? (la < lb ? 1 : -1) : a.id < b.id ? 1 : -1;
      });
    return (f.limit ? found.slice(0, f.limit) : found).map(clone);
  }

  async stats(): Promise<StoreStats> {
    const byStatus: Record<string, number> = {};
    for (const { doc } of this.engrams.values()) byStatus[doc.status] = (byStatus[doc.status] ?? 0) + 1;
    return {
      engrams: this.engrams.size,
      by_status: byStatus,
      episodes: this.episodes.length,
      sessions: this.sessions.size,
      packs: 0,
      injection_events: this.events.filter((e) => e.action === 'injected').length,
    };
  }

  async refresh(): Promise<void> {
    // One process holds it: nothing to catch up with.
  }

  /**
   * Runs `fn` alone (writers queue); what it puts is validated and applied when it returns, with
   * a change event each. If anything throws, nothing is applied.
   */
  async write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      const pending = new Map<string, EngramDoc>();
      const notes = new Map<string, EventNote>();
      const counters = new Map(this.counters);
      const tx: EngramWriter = {
        get: async (id) => (pending.has(id) ? clone(pending.get(id)!) : this.get(id)),
        findByHash: async (hash) => {
          const found = new Map((await this.findByHash(hash)).map((e) => [e.id, e]));
          for (const e of pending.values()) if (contentHash(e.statement) === hash) found.set(e.id, clone(e));
          return [...found.values()];
        },
        allocateId: async (kind: IdKind, now: Date) => {
          const stem = idStem(kind, this.prefix, idDay(now));
          let seq = counters.get(stem) ?? 0;
          let id: string;
          do id = formatId(kind, this.prefix, idDay(now), ++seq);
          while (pending.has(id) || this.engrams.has(id));
          counters.set(stem, seq);
          return id;
        },
        put: async (engram, note) => {
          pending.set(engram.id, clone(engram));
          if (note) notes.set(engram.id, note);
        },
      };
      const result = await fn(tx);
      for (const doc of pending.values()) {
        const check = validateEngram(doc);
        if (!check.ok) throw invalid(`engram ${doc.id} is invalid`, check.errors);
      }
      // Validated: from here nothing throws, so the unit of work applies whole.
      for (const [stem, seq] of counters) this.counters.set(stem, seq);
      for (const doc of pending.values()) {
        const before = this.engrams.get(doc.id)?.doc ?? null;
        const index = indexColumns([doc.statement, (doc.tags ?? []).join(' '), doc.domain ?? '', doc.rationale ?? '']);
        this.engrams.set(doc.id, { doc, hash: contentHash(doc.statement), index });
        const event = changeEvent(before, doc, notes.get(doc.id));
        if (event) this.events.push(event);
      }
      return result;
    };
    const done = this.lock.then(run, run);
    this.lock = done.catch(() => undefined);
    return done;
  }

  // ---------------------------------------------------------------- SearchIndex

  async searchText(query: string, limit: number, mode: 'any' | 'all' = 'any'): Promise<SearchHit[]> {
    const docs = [...this.engrams.values()].map((r) => ({ item: r.doc, index: r.index }));
    return rankBm25(docs, query, mode, live)
      .slice(0, limit)
      .map((h) => ({ engram: clone(h.item), score: h.score }));
  }

  async searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]> {
    if (model !== this.vectorModel) return [];
    const hits: VectorHit[] = [];
    for (const [id, v] of this.vectors) {
      const row = this.engrams.get(id);
      if (row && live(row.doc) && row.hash === v.hash) hits.push({ engram: row.doc, cosine: cosine(vector, v.vector) });
    }
    return hits
      .sort((a, b) => b.cosine - a.cosine)
      .slice(0, limit)
      .map((h) => ({ ...h, engram: clone(h.engram) }));
  }

  async embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number> {
    // Vectors of another model cannot be compared with this one's: they go.
    if (this.vectorModel !== embedder.model) {
      this.vectors.clear();
      this.vectorModel = embedder.model;
    }
    const pending = [...this.engrams.entries()].filter(([id, r]) => live(r.doc) && this.vectors.get(id)?.hash !== r.hash);
    const vectors = await embedder.embedPassages(pending.map(([, r]) => r.doc.statement));
    pending.forEach(([id, r], i) => {
      // Skip an engram edited while it was being embedded: its vector would be stale.
      if (this.engrams.get(id)?.hash === r.hash) this.vectors.set(id, { hash: r.hash, vector: vectors[i]! });
    });
    onProgress?.(pending.length, pending.length);
    return pending.length;
  }

  // ---------------------------------------------------------------- RecordLog

  recordId(kind: 'EP' | 'SES', now: Date): string {
    return `${kind}-${this.prefix}-${idDay(now)}-${randomBytes(4).toString('hex')}`;
  }

  async appendEpisodes(episodes: Episode[]): Promise<void> {
    for (const e of episodes) {
      if (this.episodes.some((x) => x.episode.id === e.id)) continue;
      this.episodes.push({ episode: clone(e), index: indexColumns([e.summary]) });
    }
  }

  async queryEpisodes(f: TimelineFilter): Promise<Episode[]> {
    const newestFirst = (a: Episode, b: Episode) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0);
    const fits = (e: Episode) =>
      (f.agent === undefined || e.agent === f.agent) &&
      (f.channel === undefined || e.channel === f.channel) &&
      (f.session === undefined || e.session === f.session) &&
      (!f.from || e.at >= f.from) &&
      (!f.to || e.at <= f.to);
    let found: Episode[];
    if (f.query) {
      const docs = this.episodes.map((x) => ({ item: x.episode, index: x.index })).reverse();
      found = rankBm25(docs, f.query, 'any', fits)
        .sort((a, b) => b.score - a.score || newestFirst(a.item, b.item))
        .map((h) => h.item);
    } else {
      found = this.episodes
        .map((x) => x.episode)
        .filter(fits)
        .reverse()
        .sort(newestFirst);
    }
    return found.slice(0, f.limit ?? 20).map(clone);
  }

  async getEpisode(id: string): Promise<Episode | null> {
    const found = this.episodes.find((x) => x.episode.id === id);
    return found ? clone(found.episode) : null;
  }

  async putSession(session: Session): Promise<void> {
    this.sessions.set(session.id, clone(session));
  }

  async getSession(id: string): Promise<Session | null> {
    const s = this.sessions.get(id);
    return s ? clone(s) : null;
  }

  async appendEvents(events: EngramEvent[]): Promise<void> {
    this.events.push(...events.map(clone));
  }

  /** Oldest first; with a limit, the newest `limit` of them. */
  async listEvents(f: EventFilter): Promise<EngramEvent[]> {
    const found = this.events
      .map((e, i) => ({ e, i }))
      .filter(
        ({ e }) =>
          (!f.engram_id || e.engram_id === f.engram_id || (e.action === 'injected' && (e.engram_ids ?? []).includes(f.engram_id))) &&
          (!f.session || e.session === f.session) &&
          (!f.action || e.action === f.action),
      )
      .sort((a, b) => (a.e.at < b.e.at ? -1 : a.e.at > b.e.at ? 1 : a.i - b.i))
      .map(({ e }) => clone(e));
    return f.limit ? found.slice(-Math.floor(f.limit)) : found;
  }
}
