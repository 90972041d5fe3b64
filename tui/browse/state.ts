import type { EngramDoc } from '../../engine/model/engram-types.js';
import type { Episode } from '../../engine/model/records.js';
import { DEFAULT_FILTERS, type EngramPage, type EpisodePage, type Facets, type Filters } from './data.js';
import type { ConflictKeep, ConflictView } from './conflicts.js';
import type { TensionsState, TensionView } from './tensions.js';

// What the browser shows and what it has read, in one value: the key reducer and the data
// events turn one state into the next (pure functions), the hooks read from the store what
// the state asks for, and the components draw it.

export type View = 'engrams' | 'episodes' | 'tensions' | 'conflicts';
export const VIEWS: View[] = ['engrams', 'episodes', 'tensions', 'conflicts'];

export type Detail =
  | { kind: 'engram'; id: string }
  | { kind: 'episode'; episode: Episode }
  | { kind: 'tension'; tension: TensionView }
  | { kind: 'conflict'; conflict: ConflictView };

/** A row window: the selected index and the first visible index. */
export interface Nav {
  cursor: number;
  offset: number;
}

export interface Message {
  text: string;
  error?: boolean;
}

/** What the user asked the store to do (run by the App, which reports back with `acted`). */
export type Action =
  | { kind: 'forget'; id: string }
  | { kind: 'pin'; id: string; pinned: boolean }
  | { kind: 'promote'; id: string }
  | { kind: 'feedback'; id: string; signal: 'positive' | 'negative' }
  | { kind: 'resolve'; tension: string; winner: string }
  | { kind: 'resolveConflict'; id: string; keep: ConflictKeep };

/** A question awaiting y/n, and what y does. */
export interface Confirm {
  prompt: string;
  action: Action;
}

export interface EngramList {
  filters: Filters;
  /** What is typed in the search box. */
  query: string;
  /** What the shown rows were searched for: the query once typing pauses. */
  activeQuery: string;
  /** Rows to read: grows as the cursor nears the end of what is loaded. */
  limit: number;
  page: EngramPage | null;
  /** Which filters and query the page answers (until the next page arrives, the old one shows). */
  pageFor: string;
  error: string | null;
  nav: Nav;
  /** G or End pressed before every row was loaded: go to the last row once it is. */
  jumpEnd: boolean;
  /** Bumped to read the page again (after an action or a reload). */
  tick: number;
}

export interface EpisodeList {
  /** Read from the first time the view is opened. */
  started: boolean;
  query: string;
  activeQuery: string;
  limit: number;
  page: EpisodePage | null;
  pageFor: string | null;
  error: string | null;
  nav: Nav;
  tick: number;
}

export interface TensionList {
  started: boolean;
  /** Every record, or only unresolved ones. */
  all: boolean;
  port: TensionsState | null;
  rows: TensionView[] | null;
  error: string | null;
  nav: Nav;
  tick: number;
}

/** Sync conflicts (records of the primary store), read when the view is first opened. */
export interface ConflictList {
  started: boolean;
  rows: ConflictView[] | null;
  error: string | null;
  nav: Nav;
  tick: number;
}

export interface DetailState {
  target: Detail;
  /** The first line shown; past the end means "the end" (G), clamped when drawn. */
  scroll: number;
  /** The engram shown: undefined while it loads, null when it is gone. */
  doc: EngramDoc | null | undefined;
  /** The engrams of a tension, as they are now. */
  engrams: Record<string, EngramDoc | null>;
  tick: number;
}

export interface BrowseState {
  view: View;
  detail: DetailState | null;
  searching: boolean;
  showHelp: boolean;
  confirm: Confirm | null;
  /** A tension awaiting the choice of its winner. */
  choose: TensionView | null;
  message: Message | null;
  /** An action runs: actions wait, the message stays. */
  busy: boolean;
  /** Engram counts by status (the title bar). */
  counts: Record<string, number> | null;
  /** Scopes and domains for the filter cycles, read on first use. */
  facets: Facets | null;
  engrams: EngramList;
  episodes: EpisodeList;
  tensions: TensionList;
  conflicts: ConflictList;
}

/** Sizes the reducers need: rows of a list window, of the detail view, and detail lines laid out so far. */
export interface Layout {
  listRows: number;
  detailRows: number;
  detailLines: number;
  /** The store filter's labels; null until the store is open. */
  stores: string[] | null;
}

/** What a step asks of the outside world. */
export type Effect =
  { type: 'quit' } | { type: 'act'; action: Action } | { type: 'reload' } | { type: 'facets'; filter: 's' | 'd'; step: number };

export interface Step {
  state: BrowseState;
  effects: Effect[];
}

export const FIRST_PAGE = 100;
export const TOP: Nav = { cursor: 0, offset: 0 };

export const pageKey = (f: Filters, q: string): string => JSON.stringify([f, q]);

export function initialState(firstPage?: EngramPage, counts?: Record<string, number>): BrowseState {
  return {
    view: 'engrams',
    detail: null,
    searching: false,
    showHelp: false,
    confirm: null,
    choose: null,
    message: null,
    busy: false,
    counts: counts ?? null,
    facets: null,
    engrams: {
      filters: DEFAULT_FILTERS,
      query: '',
      activeQuery: '',
      limit: FIRST_PAGE,
      page: firstPage ?? null,
      pageFor: firstPage ? pageKey(DEFAULT_FILTERS, '') : '',
      error: null,
      nav: TOP,
      jumpEnd: false,
      tick: 0,
    },
    episodes: { started: false, query: '', activeQuery: '', limit: FIRST_PAGE, page: null, pageFor: null, error: null, nav: TOP, tick: 0 },
    tensions: { started: false, all: false, port: null, rows: null, error: null, nav: TOP, tick: 0 },
    conflicts: { started: false, rows: null, error: null, nav: TOP, tick: 0 },
  };
}

/**
 * The frame in a terminal of `columns` × `rows`: one line fewer than the terminal, so Ink never
 * falls back to clearing the whole screen on each update.
 */
export function frameSize(columns: number, rows: number): { width: number; height: number; listRows: number; detailRows: number } {
  const width = Math.max(20, columns);
  const height = Math.max(8, rows - 1);
  return { width, height, listRows: height - 5, detailRows: height - 4 };
}

/** Moves the cursor to `cursor` (clamped to `count` rows), scrolling the window just enough. */
export function place(nav: Nav, cursor: number, count: number, window: number): Nav {
  const c = Math.max(0, Math.min(cursor, count - 1));
  let offset = nav.offset;
  if (c < offset) offset = c;
  if (c >= offset + window) offset = c - window + 1;
  offset = Math.max(0, Math.min(offset, Math.max(0, count - window)));
  return { cursor: Math.max(0, c), offset };
}

/** Near the end of what is loaded: read a bigger page (the index is asked, never all rows at once). */
function grown<L extends { page: { rows: unknown[]; complete: boolean; limit: number } | null; limit: number; nav: Nav }>(
  list: L,
  listRows: number,
): L {
  const { page, limit, nav } = list;
  if (!page || page.complete || page.limit !== limit) return list;
  return nav.cursor + listRows * 2 >= page.rows.length ? { ...list, limit: limit * 2 } : list;
}

/** Applied after every step: the lists read further when the cursor nears their end. */
export function settle(state: BrowseState, layout: Layout): BrowseState {
  const engrams = grown(state.engrams, layout.listRows);
  const episodes = grown(state.episodes, layout.listRows);
  return engrams === state.engrams && episodes === state.episodes ? state : { ...state, engrams, episodes };
}

/** The first detail line shown: the scroll, clamped to the lines laid out so far. */
export function detailTop(scroll: number, layout: Pick<Layout, 'detailRows' | 'detailLines'>): number {
  return Math.max(0, Math.min(scroll, layout.detailLines - layout.detailRows));
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
