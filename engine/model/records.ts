// Records kept beside the engrams: episodes (what happened when), sessions (an agent's unit of
// work), and change events (each engram's history, and what was injected when).

export interface Episode {
  id: string;
  at: string;
  summary: string;
  /** The client that reported it (a label: claude, cursor, ci); the hub records the real author in `owner`. */
  agent: string;
  /** Who wrote it, on the hub (the authenticated user). */
  owner?: string;
  /** Where it lives on the hub: who may read it (default the author's own scope). */
  scope?: string;
  channel?: string;
  session?: string;
  engram_ids?: string[];
}

export interface Session {
  id: string;
  /** Who started it, on the hub; only they may end it. */
  owner?: string;
  status: 'open' | 'ended';
  started_at: string;
  ended_at?: string;
  task?: string;
  agent?: string;
  /** Where its learnings go by default; on the hub also who may read it. */
  scope?: string;
  domain?: string;
  summary?: string;
  /** Engrams injected into or learned in this session. */
  engram_ids: string[];
}

export type EngramEventAction =
  | 'created'
  | 'deduplicated'
  | 'reactivated'
  | 'updated'
  | 'retired'
  | 'promoted'
  | 'feedback'
  | 'pinned'
  | 'unpinned'
  | 'decayed'
  | 'injected';

export interface EngramEvent {
  at: string;
  action: EngramEventAction;
  /** Absent for injections, which name several engrams. */
  engram_id?: string;
  engram_ids?: string[];
  session?: string;
  /** Top-level fields that changed. */
  changed?: string[];
  details?: Record<string, unknown>;
}

/** What an operation says about a change, for the engram's history (else it is inferred: model/change-event.ts). */
export interface EventNote {
  action?: EngramEventAction;
  at?: string;
  session?: string;
  details?: Record<string, unknown>;
}

export interface TimelineFilter {
  query?: string;
  from?: string;
  to?: string;
  agent?: string;
  channel?: string;
  session?: string;
  limit?: number;
}

export interface EventFilter {
  engram_id?: string;
  session?: string;
  action?: EngramEventAction;
  /** Newest first when limited. */
  limit?: number;
}
