import type { EngramDoc } from '../../engine/model/engram-types.js';
import type { EngramPage, EpisodePage, Facets } from './data.js';
import { cycleFacet } from './key-reducer.js';
import type { ConflictView } from './conflicts.js';
import type { TensionsState, TensionView } from './tensions.js';
import { FIRST_PAGE, TOP, place, settle, type Action, type BrowseState, type Layout, type Message, type Step } from './state.js';

// What arrives from outside the keyboard (pages read, actions done, a search that settled),
// as a pure function of the state, like the keys.

export type BrowseEvent =
  | { type: 'engramPage'; page: EngramPage; pageFor: string }
  | { type: 'engramPageFailed'; error: string }
  | { type: 'counts'; counts: Record<string, number> }
  | { type: 'episodePage'; page: EpisodePage; pageFor: string }
  | { type: 'episodePageFailed'; error: string }
  | { type: 'tensionsPort'; port: TensionsState }
  | { type: 'tensionRows'; rows: TensionView[]; warnings: string[] }
  | { type: 'tensionsFailed'; error: string }
  | { type: 'conflictRows'; rows: ConflictView[]; problems: string[] }
  | { type: 'conflictsFailed'; error: string }
  | { type: 'detailDoc'; id: string; doc: EngramDoc | null }
  | { type: 'tensionEngrams'; tension: string; engrams: Record<string, EngramDoc | null> }
  /** Typing paused: the list is searched for what is typed. */
  | { type: 'searchSettled'; view: 'engrams' | 'episodes'; query: string }
  | { type: 'acted'; action: Action; text: string }
  | { type: 'actFailed'; error: string }
  | { type: 'reloaded' }
  | { type: 'facets'; facets: Facets; filter: 's' | 'd'; step: number }
  | { type: 'message'; message: Message };

export function reduceEvent(state: BrowseState, event: BrowseEvent, layout: Layout): Step {
  return { state: settle(eventState(state, event, layout), layout), effects: [] };
}

/** After a change to the store: every list and the detail read again. */
function reread(s: BrowseState): BrowseState {
  return {
    ...s,
    engrams: { ...s.engrams, tick: s.engrams.tick + 1 },
    tensions: { ...s.tensions, tick: s.tensions.tick + 1 },
    conflicts: { ...s.conflicts, tick: s.conflicts.tick + 1 },
    detail: s.detail && { ...s.detail, tick: s.detail.tick + 1 },
  };
}

function eventState(s: BrowseState, e: BrowseEvent, { listRows }: Layout): BrowseState {
  switch (e.type) {
    case 'engramPage': {
      const { page } = e;
      const n = page.rows.length;
      const list = { ...s.engrams, page, pageFor: e.pageFor, error: null };
      if (!list.jumpEnd) return { ...s, engrams: { ...list, nav: place(list.nav, list.nav.cursor, n, listRows) } };
      // G before the end was loaded: read on until it is, on the last row meanwhile.
      const more = page.complete ? { jumpEnd: false } : { limit: page.limit * 4 };
      return { ...s, engrams: { ...list, ...more, nav: place(list.nav, n - 1, n, listRows) } };
    }
    case 'engramPageFailed':
      return { ...s, engrams: { ...s.engrams, error: e.error } };
    case 'counts':
      return { ...s, counts: e.counts };
    case 'episodePage': {
      const list = s.episodes;
      return {
        ...s,
        episodes: {
          ...list,
          page: e.page,
          pageFor: e.pageFor,
          error: null,
          nav: place(list.nav, list.nav.cursor, e.page.rows.length, listRows),
        },
      };
    }
    case 'episodePageFailed':
      return { ...s, episodes: { ...s.episodes, error: e.error } };
    case 'tensionsPort':
      return { ...s, tensions: { ...s.tensions, port: e.port } };
    case 'tensionRows': {
      const list = s.tensions;
      const next = {
        ...s,
        tensions: { ...list, rows: e.rows, error: null, nav: place(list.nav, list.nav.cursor, e.rows.length, listRows) },
      };
      return e.warnings.length ? { ...next, message: { text: e.warnings.join('; '), error: true } } : next;
    }
    case 'tensionsFailed':
      return { ...s, tensions: { ...s.tensions, error: e.error } };
    case 'conflictRows': {
      const list = s.conflicts;
      const next = {
        ...s,
        conflicts: { ...list, rows: e.rows, error: null, nav: place(list.nav, list.nav.cursor, e.rows.length, listRows) },
      };
      return e.problems.length
        ? { ...next, message: { text: `Unreadable conflict records: ${e.problems.join('; ')}`, error: true } }
        : next;
    }
    case 'conflictsFailed':
      return { ...s, conflicts: { ...s.conflicts, error: e.error } };
    case 'detailDoc':
      if (s.detail?.target.kind !== 'engram' || s.detail.target.id !== e.id) return s;
      return { ...s, detail: { ...s.detail, doc: e.doc } };
    case 'tensionEngrams':
      if (s.detail?.target.kind !== 'tension' || s.detail.target.tension.id !== e.tension) return s;
      return { ...s, detail: { ...s.detail, engrams: e.engrams } };
    case 'searchSettled':
      if (e.view === 'engrams') return { ...s, engrams: { ...s.engrams, activeQuery: e.query, limit: FIRST_PAGE, nav: TOP } };
      return { ...s, episodes: { ...s.episodes, activeQuery: e.query, limit: FIRST_PAGE, nav: TOP } };
    case 'acted': {
      const next = reread({ ...s, busy: false, message: { text: e.text } });
      // A resolved tension or conflict is done with: back to the list, which reloads.
      const done =
        (e.action.kind === 'resolve' && next.detail?.target.kind === 'tension') ||
        (e.action.kind === 'resolveConflict' && next.detail?.target.kind === 'conflict');
      return done ? { ...next, detail: null } : next;
    }
    case 'actFailed':
      return { ...s, busy: false, message: { text: e.error, error: true } };
    case 'reloaded': {
      const next = reread({ ...s, message: { text: 'Reloaded' }, facets: null });
      return { ...next, episodes: { ...next.episodes, tick: next.episodes.tick + 1 } };
    }
    case 'facets':
      return { ...s, facets: e.facets, message: null, engrams: cycleFacet(s.engrams, e.facets, e.filter, e.step) };
    case 'message':
      return { ...s, message: e.message };
  }
}
