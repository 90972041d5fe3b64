import type { EngramDoc, EngramStatus, EngramType } from '../../engine/model/engram-types.js';
import type { Episode } from '../../engine/model/records.js';
import type { FeedbackSignal } from '../../engine/ops/feedback.js';
import type { LocalBackend } from '../../engine/store/local-backend.js';
import { openStoreSpan } from '../../engine/store/open-store.js';
import { recall } from '../../engine/ops/recall.js';
import { forget } from '../../engine/ops/forget.js';
import { promote } from '../../engine/ops/promote.js';
import { pin } from '../../engine/ops/pin.js';
import { feedback } from '../../engine/ops/feedback.js';
import { systemContext } from '../../engine/ops/context.js';
import { listConflicts, resolveConflict } from '../../engine/store/sync-resolve.js';
import { toConflictView, type ConflictKeep, type ConflictView } from './conflicts.js';
import { loadTensions, type TensionsState } from './tensions.js';
import { oneLine } from '../../engine/text.js';

// What the browser reads and does, behind one interface so the UI never touches the store
// directly (and tests or another backend can stand in). The local implementation reads pages
// from the SQLite index (`list({limit})`, JSON rows: never YAML), searches with BM25 recall,
// and acts through the engine's operations.

export type StatusFilter = 'live' | 'all' | EngramStatus;

export interface Filters {
  scope: string | null;
  type: EngramType | null;
  domain: string | null;
  status: StatusFilter;
  /** `all`, `primary`, or the scope a registered store serves (`svc stores add`). */
  store: string;
}

export const ALL_STORES = 'all';
export const PRIMARY_STORE = 'primary';

export const DEFAULT_FILTERS: Filters = { scope: null, type: null, domain: null, status: 'live', store: ALL_STORES };

/** What a list row needs: a few short fields, never the whole document. */
export interface EngramRow {
  id: string;
  statement: string;
  type: string;
  scope: string;
  domain?: string;
  status: string;
  pinned: boolean;
}

export interface EngramPage {
  rows: EngramRow[];
  /** No more rows beyond these (the index returned fewer than asked). */
  complete: boolean;
  /** The exact number of matches, when known without loading them all. */
  total?: number;
  /** The limit this page was read with. */
  limit: number;
}

export interface EpisodePage {
  rows: Episode[];
  complete: boolean;
  limit: number;
}

export interface Facets {
  scopes: string[];
  domains: string[];
}

export interface BrowseData {
  readonly root: string;
  /** Store labels for the store filter: `all`, `primary`, then each registered store's scope. */
  readonly stores: string[];
  /** Things to tell the user (quarantined files, a rebuilt index). */
  readonly warnings: string[];
  /** Engram counts by status. */
  counts(): Promise<Record<string, number>>;
  page(filters: Filters, text: string, limit: number): Promise<EngramPage>;
  /** Distinct scopes and domains (domains with their parents), for the filter cycles. */
  facets(): Promise<Facets>;
  get(id: string): Promise<EngramDoc | null>;
  forget(id: string): Promise<string>;
  promote(id: string): Promise<string>;
  pin(id: string, pinned: boolean): Promise<string>;
  feedback(id: string, signal: FeedbackSignal): Promise<string>;
  episodes(text: string, limit: number): Promise<EpisodePage>;
  tensions(): Promise<TensionsState>;
  /** Open sync conflicts of the primary store; unreadable records named in `problems`. */
  conflicts(): Promise<{ rows: ConflictView[]; problems: string[] }>;
  resolveConflict(id: string, keep: ConflictKeep): Promise<string>;
  /** Catches up with other processes' writes. */
  refresh(): Promise<void>;
  close(): void;
}

/** Statements are cut here for rows: a row never shows more than a terminal line. */
const ROW_STATEMENT_MAX = 400;

export function toRow(e: EngramDoc): EngramRow {
  return {
    id: e.id,
    statement: oneLine(e.statement.length > ROW_STATEMENT_MAX ? e.statement.slice(0, ROW_STATEMENT_MAX) : e.statement),
    type: e.type,
    scope: e.scope,
    ...(e.domain ? { domain: e.domain } : {}),
    status: e.status,
    pinned: e.pinned === true,
  };
}

export function matchesFilters(row: EngramRow, f: Filters): boolean {
  if (f.scope && row.scope !== f.scope) return false;
  if (f.type && row.type !== f.type) return false;
  if (f.domain && row.domain !== f.domain && !(row.domain ?? '').startsWith(f.domain + '.')) return false;
  if (f.status === 'live' && row.status === 'retired') return false;
  if (f.status !== 'live' && f.status !== 'all' && row.status !== f.status) return false;
  return true;
}

export class LocalBrowseData implements BrowseData {
  readonly root: string;
  readonly stores: string[];
  readonly warnings: string[];
  private facetCache: Promise<Facets> | undefined;
  private tensionsState: Promise<TensionsState> | undefined;
  /** Each store by its filter label; the store itself (spanning all) under `all`. */
  private readonly byLabel = new Map<string, LocalBackend>();

  constructor(readonly store: LocalBackend) {
    this.root = store.root;
    this.warnings = store.warnings.splice(0);
    this.byLabel.set(ALL_STORES, store);
    for (const m of store.members()) this.byLabel.set(m.entry?.scope ?? PRIMARY_STORE, m.store);
    this.stores = [...this.byLabel.keys()];
  }

  static async open(root: string): Promise<LocalBrowseData> {
    // `fast`: trust the folder's mtime (a full stat scan still runs every 30 s), so opening a
    // large store is not held up by 10,000 stats; R in the browser catches up on demand.
    // With registered stores (`svc stores add`) this spans them all.
    return new LocalBrowseData(await openStoreSpan(root, 'fast'));
  }

  /** The store a page reads: all of them, or the one the store filter names. */
  private source(f: Filters): LocalBackend {
    return this.byLabel.get(f.store) ?? this.store;
  }

  async counts(): Promise<Record<string, number>> {
    return (await this.store.stats()).by_status;
  }

  async page(f: Filters, text: string, limit: number): Promise<EngramPage> {
    const q = text.trim();
    if (q !== '') {
      // BM25 (recall --fast): ranked, lifecycle-shaped; retired engrams never come back.
      const result = await recall(this.source(f), q, { fast: true, limit });
      const rows = result.hits.map((h) => toRow(h.engram)).filter((r) => matchesFilters(r, f));
      return { rows, complete: result.hits.length < limit, limit };
    }
    const docs = await this.source(f).list({
      scope: f.scope ?? undefined,
      type: f.type ?? undefined,
      domain: f.domain ?? undefined,
      status: f.status === 'live' || f.status === 'all' ? undefined : f.status,
      includeRetired: f.status === 'all',
      limit,
    });
    const page: EngramPage = { rows: docs.map(toRow), complete: docs.length < limit, limit };
    if (!f.scope && !f.type && !f.domain) {
      const by = (await this.source(f).stats()).by_status;
      const sum = (pred: (s: string) => boolean) => Object.entries(by).reduce((n, [s, c]) => (pred(s) ? n + c : n), 0);
      page.total = f.status === 'all' ? sum(() => true) : f.status === 'live' ? sum((s) => s !== 'retired') : (by[f.status] ?? 0);
    } else if (page.complete) {
      page.total = page.rows.length;
    }
    return page;
  }

  facets(): Promise<Facets> {
    this.facetCache ??= (async () => {
      // One pass over the index rows (JSON, ~60 ms per 10,000), only when a filter is cycled.
      const docs = await this.store.list({ includeRetired: true });
      const scopes = new Set<string>();
      const domains = new Set<string>();
      for (const d of docs) {
        scopes.add(d.scope);
        if (d.domain) {
          const parts = d.domain.split('.');
          for (let i = 1; i <= parts.length; i++) domains.add(parts.slice(0, i).join('.'));
        }
      }
      return { scopes: [...scopes].sort(), domains: [...domains].sort() };
    })();
    this.facetCache.catch(() => (this.facetCache = undefined));
    return this.facetCache;
  }

  get(id: string): Promise<EngramDoc | null> {
    return this.store.get(id);
  }

  async forget(id: string): Promise<string> {
    const r = await forget(this.store, { target: id, reason: 'retired in svc browse' }, systemContext);
    if (r.action === 'retired') return `Retired ${id} (history kept)`;
    if (r.action === 'already_retired') return `${id} was already retired`;
    return `${id}: ${r.matches.length} matches, nothing retired`;
  }

  async promote(id: string): Promise<string> {
    await promote(this.store, id, systemContext);
    return `Promoted ${id} to active`;
  }

  async pin(id: string, pinned: boolean): Promise<string> {
    await pin(this.store, id, pinned, systemContext);
    return pinned ? `Pinned ${id}` : `Unpinned ${id}`;
  }

  async feedback(id: string, signal: FeedbackSignal): Promise<string> {
    const [e] = await feedback(this.store, [{ id, signal }], systemContext);
    const fb = e?.feedback_signals;
    const tally = fb ? ` (+${fb.positive ?? 0} / -${fb.negative ?? 0})` : '';
    return `${signal === 'positive' ? 'Positive' : signal === 'negative' ? 'Negative' : 'Neutral'} feedback on ${id}${tally}`;
  }

  async episodes(text: string, limit: number): Promise<EpisodePage> {
    const q = text.trim();
    const rows = await this.store.queryEpisodes({ ...(q ? { query: q } : {}), limit });
    return { rows, complete: rows.length < limit, limit };
  }

  tensions(): Promise<TensionsState> {
    this.tensionsState ??= loadTensions(this.store, this.root);
    return this.tensionsState;
  }

  /** Sync conflicts live in the primary store (the one `svc sync` commits). */
  private primary(): LocalBackend {
    return this.byLabel.get(PRIMARY_STORE) ?? this.store;
  }

  async conflicts(): Promise<{ rows: ConflictView[]; problems: string[] }> {
    const { conflicts, problems } = listConflicts(this.primary());
    return { rows: conflicts.map(toConflictView), problems };
  }

  async resolveConflict(id: string, keep: ConflictKeep): Promise<string> {
    const r = await resolveConflict(this.primary(), id, keep, systemContext);
    const subject = r.engram ? r.engram.id : r.path;
    return `Resolved ${r.id}: ${keep === 'current' ? 'kept the current' : "took the other machine's"} version of ${subject}; svc sync shares it`;
  }

  async refresh(): Promise<void> {
    await this.store.refresh();
    this.facetCache = undefined;
    for (const w of this.store.warnings.splice(0)) this.warnings.push(w);
  }

  close(): void {
    this.store.close();
  }
}

export function openLocalBrowseData(root: string): Promise<BrowseData> {
  return LocalBrowseData.open(root);
}
