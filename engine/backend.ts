import type { EngramDoc } from './model/engram-types.js';
import type { IdKind } from './model/ids.js';
import type { Embedder, EmbedderState } from './embed/embedder.js';
import type { EngramEvent, Episode, EventFilter, EventNote, Session, TimelineFilter } from './model/records.js';

// The engine's contract: its logic is written once against these interfaces, and the backends
// implement them (the local store: YAML + SQLite, and the multi-store over several; the hub:
// PostgreSQL; the reference in-memory backend of the tests). It has three concerns, so that each
// operation names only the one or two it uses: the engrams (`EngramStore`), their search
// (`SearchIndex`) and the records kept beside them (`RecordLog`). `EngramBackend` is their sum,
// what a backend implements; engine/test/support/backend-contract.ts is the suite it must pass.

export interface SearchHit {
  engram: EngramDoc;
  /** BM25 relevance, higher is better (FTS5's bm25() negated). */
  score: number;
}

export interface VectorHit {
  engram: EngramDoc;
  /** Cosine similarity to the query, -1..1. */
  cosine: number;
}

export interface ListFilter {
  scope?: string;
  domain?: string;
  type?: string;
  status?: string;
  includeRetired?: boolean;
  pinned?: boolean;
  idPrefix?: string;
  limit?: number;
}

/** The dense leg, loaded on first need and cached by the provider. */
export interface EmbedderProvider {
  /** Loads the model (downloading it when allowed); never throws for a missing model. */
  load(): Promise<EmbedderState>;
  /** The state if the model was already loaded in this process, without loading anything. */
  peek(): EmbedderState | undefined;
  /** Probes the model without downloading (status, doctor). */
  probe(): Promise<EmbedderState>;
}

export interface EngramReader {
  get(id: string): Promise<EngramDoc | null>;
  /** Every engram (any status, any scope) whose normalized statement has this hash. */
  findByHash(hash: string): Promise<EngramDoc[]>;
}

/** A unit of work holding the backend's write lock. */
export interface EngramWriter extends EngramReader {
  /** A fresh id for an engram that will live in `scope` (a store spanning several routes it by scope). */
  allocateId(kind: IdKind, now: Date, scope: string): Promise<string>;
  /** Creates or replaces an engram when the unit of work commits, recording a change event. */
  put(engram: EngramDoc, note?: EventNote): Promise<void>;
}

export interface StoreStats {
  engrams: number;
  by_status: Record<string, number>;
  episodes: number;
  sessions: number;
  packs: number;
  injection_events: number;
}

/**
 * What a backend does with content that looks like a secret: keep it on this machine in scope
 * `local` (the local store), or refuse it (the hub, which must never hold one).
 */
export type SecretPolicy = 'keep-local' | 'refuse';

/** The engrams: read one, list, write under the backend's lock, count. 7 members. */
export interface EngramStore extends EngramReader {
  /** Absent: 'keep-local'. */
  readonly secretPolicy?: SecretPolicy;
  write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T>;
  list(filter: ListFilter): Promise<EngramDoc[]>;
  stats(): Promise<StoreStats>;
  /** Catches up with writes made by other processes since the backend was opened. */
  refresh(): Promise<void>;
}

export interface TextSearchOptions {
  /**
   * Search with the query's rarest terms only: as many as match this many rows in all, and at
   * least two. For "engrams like this statement" (suggest-scope.ts): there the common words of a
   * statement weigh little, and cost most of the search (FTS5's bm25() scores every row that
   * holds any term). A backend may ignore it (the hub's ranker prunes such terms itself).
   */
  rarestTermRows?: number;
}

/** Finding engrams: by words (BM25) and by meaning (vectors). Retired engrams are never hits. 3 members. */
export interface SearchIndex {
  searchText(query: string, limit: number, mode?: 'any' | 'all', opts?: TextSearchOptions): Promise<SearchHit[]>;
  /** Nearest live engrams embedded by `model`. */
  searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]>;
  /** Embeds every live engram with no current vector (learned offline, or edited); returns how many. */
  embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number>;
}

/** The records beside the engrams: episodes, sessions, and the change events of their history. 8 members. */
export interface RecordLog {
  recordId(kind: 'EP' | 'SES', now: Date): string;
  appendEpisodes(episodes: Episode[]): Promise<void>;
  queryEpisodes(filter: TimelineFilter): Promise<Episode[]>;
  getEpisode(id: string): Promise<Episode | null>;
  putSession(session: Session): Promise<void>;
  getSession(id: string): Promise<Session | null>;
  appendEvents(events: EngramEvent[]): Promise<void>;
  listEvents(filter: EventFilter): Promise<EngramEvent[]>;
}

/** What a backend implements: the sum of the three (18 members). */
export interface EngramBackend extends EngramStore, SearchIndex, RecordLog {}

/**
 * A capability beyond the contract: a backend whose search index is derived from the engrams
 * (the local store's SQLite file, built from the YAML files) can drop it and build it again.
 * The hub's is not derived, so it has none; ask with `canRebuild`.
 */
export interface RebuildableIndex {
  /** Drops the derived index and builds it again from the engrams' source of truth. */
  rebuild(): Promise<void>;
}

export function canRebuild<B extends object>(backend: B): backend is B & RebuildableIndex {
  return typeof (backend as Partial<RebuildableIndex>).rebuild === 'function';
}
