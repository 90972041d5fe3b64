import type { EngramDoc } from './model/engram-schema.js';
import type { IdKind } from './model/ids.js';
import type { Embedder, EmbedderState } from './embed/embedder.js';
import type { EngramEvent, EngramEventAction, Episode, EventFilter, Session, TimelineFilter } from './model/records.js';

/** What an operation says about a change, for the engram's history (else it is inferred). */
export interface EventNote {
  action?: EngramEventAction;
  at?: string;
  session?: string;
  details?: Record<string, unknown>;
}

// The engine's contract: its logic is written once against these interfaces, and two backends
// implement them (the local store: YAML + SQLite; the hub: PostgreSQL).

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

export interface EngramBackend extends EngramReader {
  /** Absent: 'keep-local'. */
  readonly secretPolicy?: SecretPolicy;
  write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T>;
  searchText(query: string, limit: number, mode?: 'any' | 'all'): Promise<SearchHit[]>;
  list(filter: ListFilter): Promise<EngramDoc[]>;
  stats(): Promise<StoreStats>;
  /** Nearest live engrams embedded by `model`. */
  searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]>;
  /** Embeds every live engram with no current vector (learned offline, or edited); returns how many. */
  embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number>;

  /** Catches up with writes made by other processes since the backend was opened. */
  refresh(): Promise<void>;
  recordId(kind: 'EP' | 'SES', now: Date): string;
  appendEpisodes(episodes: Episode[]): Promise<void>;
  queryEpisodes(filter: TimelineFilter): Promise<Episode[]>;
  getEpisode(id: string): Promise<Episode | null>;
  putSession(session: Session): Promise<void>;
  getSession(id: string): Promise<Session | null>;
  appendEvents(events: EngramEvent[]): Promise<void>;
  listEvents(filter: EventFilter): Promise<EngramEvent[]>;
}
