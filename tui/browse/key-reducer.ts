import type { Key } from 'ink';
import { ENGRAM_TYPES, type EngramType } from '../../engine/model/engram-types.js';
import { ALL_STORES, DEFAULT_FILTERS, type Facets, type Filters, type StatusFilter } from './data.js';
import { keepPrompt, type ConflictKeep, type ConflictView } from './conflicts.js';
import type { TensionView } from './tensions.js';
import { oneLine } from '../../engine/text.js';
import {
  FIRST_PAGE,
  TOP,
  VIEWS,
  detailTop,
  place,
  settle,
  type Action,
  type BrowseState,
  type Detail,
  type Effect,
  type EngramList,
  type Layout,
  type Step,
} from './state.js';

// The keys, as a pure function: (state, key) -> (next state, effects). Nothing here reads the
// store or the terminal; the App runs the effects (quit, an action, a reload, reading facets).

const STATUS_CYCLE: StatusFilter[] = ['live', 'active', 'candidate', 'dormant', 'retired', 'all'];
const ENGRAM_ACTION_KEYS = ['x', 'p', 'P', '+', '-'];

export const NO_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
};

/** The key of one character of a multi-character input. */
function keyOf(ch: string): Key {
  return {
    ...NO_KEY,
    return: ch === '\r' || ch === '\n',
    tab: ch === '\t',
    delete: ch === '\u007f',
    backspace: ch === '\b',
    shift: /[A-Z]/.test(ch),
  };
}

/**
 * Keys typed while the process was busy (or pasted) arrive as one string: they are taken one
 * by one, so "/post" opens the search and types "post", and "jjj" moves three rows.
 */
export function splitInput(input: string, key: Key): Array<[string, Key]> {
  if (input.length > 1 && !key.ctrl && !key.meta) return [...input].map((ch) => [ch, keyOf(ch)]);
  return [[input, key]];
}

function cycle<T>(values: readonly T[], current: T, step: number): T {
  const i = values.indexOf(current);
  return values[(i + step + values.length) % values.length]!;
}

/** Where a movement key sends the cursor, or null for other keys. */
function moveTarget(input: string, key: Key, cursor: number, count: number, window: number): number | null {
  if (key.downArrow || input === 'j') return cursor + 1;
  if (key.upArrow || input === 'k') return cursor - 1;
  if (key.pageDown || (key.ctrl && input === 'f') || (input === ' ' && !key.ctrl)) return cursor + window;
  if (key.pageUp || (key.ctrl && input === 'b')) return cursor - window;
  if (key.home || input === 'g') return 0;
  if (key.end || input === 'G') return count - 1;
  return null;
}

/** The step for one key. */
export function reduceKey(state: BrowseState, input: string, key: Key, layout: Layout): Step {
  const step = keyStep(state, input, key, layout);
  return { ...step, state: settle(step.state, layout) };
}

const stay = (state: BrowseState, ...effects: Effect[]): Step => ({ state, effects });
const QUIT: Effect = { type: 'quit' };

function keyStep(prev: BrowseState, input: string, key: Key, layout: Layout): Step {
  if (key.ctrl && input === 'c') return stay(prev, QUIT);
  // A message lasts until the next key (the handlers below may set a new one).
  const s: BrowseState = prev.message && !prev.busy ? { ...prev, message: null } : prev;

  if (s.confirm) {
    if (input === 'y' || input === 'Y') return act({ ...s, confirm: null }, s.confirm.action);
    if (input === 'n' || input === 'N' || key.escape || input === 'q') return stay({ ...s, confirm: null, message: { text: 'Cancelled' } });
    return stay(s);
  }
  if (s.choose) return chooseKey(s, input, key);
  if (s.showHelp) return input === 'q' ? stay(s, QUIT) : stay({ ...s, showHelp: false });
  if (s.searching) return searchKey(s, input, key, layout);
  if (s.detail) return detailKey(s, input, key, layout);

  // Lists.
  if (input === 'q') return stay(s, QUIT);
  if (input === '?') return stay({ ...s, showHelp: true });
  if (key.tab) return stay(openView(s, cycle(VIEWS, s.view, key.shift ? -1 : 1)));
  if (/^[1-9]$/.test(input) && Number(input) <= VIEWS.length) return stay(openView(s, VIEWS[Number(input) - 1]!));
  if (input === 'R') return layout.stores ? stay({ ...s, message: { text: 'Reloading…' } }, { type: 'reload' }) : stay(s);
  if (s.view === 'engrams') return engramListKey(s, input, key, layout);
  if (s.view === 'episodes') return episodeListKey(s, input, key, layout);
  if (s.view === 'conflicts') return conflictListKey(s, input, key, layout);
  return tensionListKey(s, input, key, layout);
}

function openView(s: BrowseState, view: BrowseState['view']): BrowseState {
  const next = { ...s, view };
  if (view === 'episodes' && !s.episodes.started) next.episodes = { ...s.episodes, started: true };
  if (view === 'tensions' && !s.tensions.started) next.tensions = { ...s.tensions, started: true };
  if (view === 'conflicts' && !s.conflicts.started) next.conflicts = { ...s.conflicts, started: true };
  return next;
}

function openDetail(s: BrowseState, target: Detail): BrowseState {
  return { ...s, detail: { target, scroll: 0, doc: undefined, engrams: {}, tick: 0 } };
}

/** Starts an action: it runs outside, and `acted` reports its outcome. */
function act(s: BrowseState, action: Action): Step {
  return { state: { ...s, busy: true, message: { text: 'Working…' } }, effects: [{ type: 'act', action }] };
}

function chooseKey(s: BrowseState, input: string, key: Key): Step {
  const t = s.choose!;
  const n = Number(input);
  if (Number.isInteger(n) && n >= 1 && n <= t.engrams.length) {
    const winner = t.engrams[n - 1]!;
    const losers = t.engrams.filter((id) => id !== winner);
    if (!s.tensions.port?.available) return stay({ ...s, choose: null });
    return stay({
      ...s,
      choose: null,
      confirm: { prompt: `Resolve: keep ${winner}, retire ${losers.join(', ')}?`, action: { kind: 'resolve', tension: t.id, winner } },
    });
  }
  if (key.escape || input === 'n' || input === 'q') return stay({ ...s, choose: null, message: { text: 'Cancelled' } });
  return stay(s);
}

function searchKey(s: BrowseState, input: string, key: Key, layout: Layout): Step {
  const isEp = s.view === 'episodes';
  const q = isEp ? s.episodes.query : s.engrams.query;
  const withQuery = (query: string): BrowseState =>
    isEp ? { ...s, episodes: { ...s.episodes, query } } : { ...s, engrams: { ...s.engrams, query } };
  if (key.escape) return stay({ ...withQuery(''), searching: false });
  if (key.return) return stay({ ...s, searching: false });
  if (key.backspace || key.delete) return stay(withQuery([...q].slice(0, -1).join('')));
  if (key.ctrl && input === 'u') return stay(withQuery(''));
  if (key.upArrow || key.downArrow || key.pageUp || key.pageDown) {
    const list = isEp ? s.episodes : s.engrams;
    const n = list.page?.rows.length ?? 0;
    const to = moveTarget('', key, list.nav.cursor, n, layout.listRows);
    if (to === null) return stay(s);
    const nav = place(list.nav, to, n, layout.listRows);
    return stay(isEp ? { ...s, episodes: { ...s.episodes, nav } } : { ...s, engrams: { ...s.engrams, nav } });
  }
  if (input && !key.ctrl && !key.meta && !key.tab) {
    const text = oneLine(input.replace(/[\r\n]/g, ' '));
    if (text || input === ' ') return stay(withQuery(q + (text || ' ')));
  }
  return stay(s);
}

function detailKey(s: BrowseState, input: string, key: Key, layout: Layout): Step {
  const detail = s.detail!;
  if (key.escape || key.leftArrow || key.backspace || key.delete || input === 'h') return stay({ ...s, detail: null });
  if (input === 'q') return stay(s, QUIT);
  if (input === '?') return stay({ ...s, showHelp: true });
  // Moves start from what is on screen; G is "the end", wherever the layout of the text ends.
  const top = detailTop(detail.scroll, layout);
  const to = key.end || input === 'G' ? Number.MAX_SAFE_INTEGER : moveTarget(input, key, top, Number.MAX_SAFE_INTEGER, layout.detailRows);
  if (to !== null) return stay({ ...s, detail: { ...detail, scroll: Math.max(0, to) } });
  if (s.busy) return stay(s);
  if (detail.target.kind === 'engram') return engramAction(s, input, layout) ?? stay(s);
  if (detail.target.kind === 'tension' && input === 'r') return startResolve(s, detail.target.tension);
  if (detail.target.kind === 'conflict') return keepKey(s, input, detail.target.conflict) ?? stay(s);
  return stay(s);
}

/** The engram the actions apply to: the one in the detail view, else the selected row. */
function selectedEngram(s: BrowseState): { id: string; pinned: boolean; status: string } | null {
  if (s.detail?.target.kind === 'engram') {
    const doc = s.detail.doc;
    return doc ? { id: doc.id, pinned: doc.pinned === true, status: doc.status } : null;
  }
  const row = s.engrams.page?.rows[s.engrams.nav.cursor];
  return row ? { id: row.id, pinned: row.pinned, status: row.status } : null;
}

/** x p P + -, or null for other keys (and before the store is open). */
function engramAction(s: BrowseState, input: string, layout: Layout): Step | null {
  if (!ENGRAM_ACTION_KEYS.includes(input) || !layout.stores) return null;
  const target = selectedEngram(s);
  if (!target) return stay({ ...s, message: { text: 'No engram selected', error: true } });
  const { id } = target;
  if (input === 'x') {
    if (target.status === 'retired') return stay({ ...s, message: { text: `${id} is already retired` } });
    return stay({
      ...s,
      confirm: {
        prompt: `Forget ${id}? It will be retired: hidden from recall and injection, its history kept.`,
        action: { kind: 'forget', id },
      },
    });
  }
  if (input === 'p') return act(s, { kind: 'pin', id, pinned: !target.pinned });
  if (input === 'P') return act(s, { kind: 'promote', id });
  return act(s, { kind: 'feedback', id, signal: input === '+' ? 'positive' : 'negative' });
}

function startResolve(s: BrowseState, t: TensionView | undefined): Step {
  const port = s.tensions.port;
  if (!t) return stay({ ...s, message: { text: 'No tension selected', error: true } });
  if (!port?.available) return stay({ ...s, message: { text: port ? port.reason : 'tensions are loading', error: true } });
  if (t.engrams.length < 2) return stay({ ...s, message: { text: `${t.id} names fewer than two engrams`, error: true } });
  return stay({ ...s, choose: t });
}

/** New filters: the list reads from its first page again. */
function withFilters(list: EngramList, filters: Filters): EngramList {
  return { ...list, filters, limit: FIRST_PAGE, nav: TOP, jumpEnd: false };
}

/** Cycles the scope or domain filter through the store's values. */
export function cycleFacet(list: EngramList, facets: Facets, filter: 's' | 'd', step: number): EngramList {
  const { filters } = list;
  if (filter === 's') return withFilters(list, { ...filters, scope: cycle<string | null>([null, ...facets.scopes], filters.scope, step) });
  return withFilters(list, { ...filters, domain: cycle<string | null>([null, ...facets.domains], filters.domain, step) });
}

function engramListKey(s: BrowseState, input: string, key: Key, layout: Layout): Step {
  let list = s.engrams;
  const { page } = list;
  const n = page?.rows.length ?? 0;
  if ((key.end || input === 'G') && page && !page.complete) {
    // Read up to the end (the total is known for unfiltered lists), then land on the last row.
    list = { ...list, jumpEnd: true, limit: page.total !== undefined ? Math.max(page.total + 1, list.limit) : list.limit * 4 };
  }
  const to = moveTarget(input, key, list.nav.cursor, n, layout.listRows);
  if (to !== null) return stay({ ...s, engrams: { ...list, nav: place(list.nav, to, n, layout.listRows) } });
  if (key.return) {
    const row = page?.rows[list.nav.cursor];
    return stay(row ? openDetail(s, { kind: 'engram', id: row.id }) : s);
  }
  if (input === '/') return stay({ ...s, searching: true });
  if (key.escape) return stay(list.query ? { ...s, engrams: { ...list, query: '' } } : s);
  if (input === 'c') return stay({ ...s, engrams: withFilters({ ...list, query: '' }, DEFAULT_FILTERS) });
  const lower = input.toLowerCase();
  if (['s', 't', 'd', 'a', 'o'].includes(lower) && input.length === 1) {
    const step = input === lower ? 1 : -1;
    const { filters } = list;
    if (lower === 't') {
      const types: Array<EngramType | null> = [null, ...ENGRAM_TYPES];
      return stay({ ...s, engrams: withFilters(list, { ...filters, type: cycle(types, filters.type, step) }) });
    }
    if (lower === 'a') return stay({ ...s, engrams: withFilters(list, { ...filters, status: cycle(STATUS_CYCLE, filters.status, step) }) });
    if (lower === 'o') {
      const stores = layout.stores ?? [ALL_STORES];
      if (stores.length <= 2) return stay({ ...s, message: { text: 'One store only: add others with svc stores add <path> <scope>' } });
      return stay({ ...s, engrams: withFilters(list, { ...filters, store: cycle(stores, filters.store, step) }) });
    }
    // Scope and domain values come from the store, read once on first use.
    const filter = lower as 's' | 'd';
    if (s.facets) return stay({ ...s, engrams: cycleFacet(list, s.facets, filter, step) });
    if (!layout.stores) return stay(s);
    return stay({ ...s, message: { text: 'Reading scopes and domains…' } }, { type: 'facets', filter, step });
  }
  if (s.busy) return stay(s);
  return engramAction(s, input, layout) ?? stay(s);
}

function episodeListKey(s: BrowseState, input: string, key: Key, layout: Layout): Step {
  const list = s.episodes;
  const n = list.page?.rows.length ?? 0;
  const to = moveTarget(input, key, list.nav.cursor, n, layout.listRows);
  if (to !== null) return stay({ ...s, episodes: { ...list, nav: place(list.nav, to, n, layout.listRows) } });
  if (key.return) {
    const episode = list.page?.rows[list.nav.cursor];
    return stay(episode ? openDetail(s, { kind: 'episode', episode }) : s);
  }
  if (input === '/') return stay({ ...s, searching: true });
  if (key.escape && list.query) return stay({ ...s, episodes: { ...list, query: '' } });
  return stay(s);
}

function tensionListKey(s: BrowseState, input: string, key: Key, layout: Layout): Step {
  const list = s.tensions;
  const n = list.rows?.length ?? 0;
  const to = moveTarget(input, key, list.nav.cursor, n, layout.listRows);
  if (to !== null) return stay({ ...s, tensions: { ...list, nav: place(list.nav, to, n, layout.listRows) } });
  if (key.return) {
    const tension = list.rows?.[list.nav.cursor];
    return stay(tension ? openDetail(s, { kind: 'tension', tension }) : s);
  }
  if (input === 'a') return stay({ ...s, tensions: { ...list, all: !list.all, nav: TOP } });
  if (input === 'r' && !s.busy) return startResolve(s, list.rows?.[list.nav.cursor]);
  return stay(s);
}

/** c keeps the current version, o takes the other machine's: each asks y/n first. */
function keepKey(s: BrowseState, input: string, c: ConflictView | undefined): Step | null {
  if (input !== 'c' && input !== 'o') return null;
  if (!c) return stay({ ...s, message: { text: 'No conflict selected', error: true } });
  const keep: ConflictKeep = input === 'c' ? 'current' : 'other';
  return stay({ ...s, confirm: { prompt: keepPrompt(c, keep), action: { kind: 'resolveConflict', id: c.id, keep } } });
}

function conflictListKey(s: BrowseState, input: string, key: Key, layout: Layout): Step {
  const list = s.conflicts;
  const n = list.rows?.length ?? 0;
  const to = moveTarget(input, key, list.nav.cursor, n, layout.listRows);
  if (to !== null) return stay({ ...s, conflicts: { ...list, nav: place(list.nav, to, n, layout.listRows) } });
  const selected = list.rows?.[list.nav.cursor];
  if (key.return) return stay(selected ? openDetail(s, { kind: 'conflict', conflict: selected }) : s);
  if (s.busy) return stay(s);
  return keepKey(s, input, selected) ?? stay(s);
}
