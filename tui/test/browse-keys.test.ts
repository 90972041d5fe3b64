import { describe, expect, it } from 'vitest';
import type { Key } from 'ink';
import { reduceEvent, type BrowseEvent } from '../browse/event-reducer.js';
import { NO_KEY, reduceKey, splitInput } from '../browse/key-reducer.js';
import { initialState, pageKey, type BrowseState, type Layout, type Step } from '../browse/state.js';
import type { EngramPage, EngramRow } from '../browse/data.js';
import type { TensionView } from '../browse/tensions.js';
import type { ConflictView } from '../browse/conflicts.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';

// The browser's keys and data events as pure functions: state in, state and effects out,
// no Ink, no store.

const LAYOUT: Layout = { listRows: 18, detailRows: 19, detailLines: 0, stores: ['all', 'primary'] };

const row = (i: number, extra: Partial<EngramRow> = {}): EngramRow => ({
  id: `ENG-T-2026-0101-${String(i).padStart(3, '0')}`,
  statement: `statement ${i}`,
  type: 'behavioral',
  scope: 'global',
  status: 'active',
  pinned: false,
  ...extra,
});

function page(n: number, opts: Partial<EngramPage> = {}): EngramPage {
  return { rows: Array.from({ length: n }, (_, i) => row(i)), complete: true, limit: 100, total: n, ...opts };
}

/** A state showing `p` as the engram list. */
const listing = (p: EngramPage): BrowseState => initialState(p);

const special = (k: Partial<Key>): Key => ({ ...NO_KEY, ...k });
const DOWN = special({ downArrow: true });
const ENTER = special({ return: true });
const ESC = special({ escape: true });
const BACKSPACE = special({ backspace: true });
const TAB = special({ tab: true });

/** Types keys one after another: a string is split into characters, each as a terminal would send it. */
function keys(state: BrowseState, layout: Layout, ...input: Array<string | Key>): Step {
  let step: Step = { state, effects: [] };
  for (const k of input) {
    const pairs = typeof k === 'string' ? splitInput(k, NO_KEY) : [['', k] as [string, Key]];
    for (const [ch, key] of pairs) {
      const next = reduceKey(step.state, ch, key, layout);
      step = { state: next.state, effects: [...step.effects, ...next.effects] };
    }
  }
  return step;
}

const event = (state: BrowseState, e: BrowseEvent, layout = LAYOUT) => reduceEvent(state, e, layout).state;

describe('key reducer: lists', () => {
  it('moves the cursor with j, k, arrows, pages, g and G, scrolling the window just enough', () => {
    const s0 = listing(page(48));
    expect(keys(s0, LAYOUT, 'jj').state.engrams.nav).toEqual({ cursor: 2, offset: 0 });
    expect(keys(s0, LAYOUT, 'jjk', DOWN).state.engrams.nav.cursor).toBe(2);
    expect(keys(s0, LAYOUT, 'k').state.engrams.nav.cursor).toBe(0); // clamped at the top
    expect(keys(s0, LAYOUT, ' ').state.engrams.nav).toEqual({ cursor: 18, offset: 1 });
    expect(keys(s0, LAYOUT, 'G').state.engrams.nav).toEqual({ cursor: 47, offset: 30 });
    expect(keys(s0, LAYOUT, 'G', 'g').state.engrams.nav).toEqual({ cursor: 0, offset: 0 });
    expect(keys(s0, LAYOUT, 'G', 'j').state.engrams.nav.cursor).toBe(47); // clamped at the end
  });

  it('G before the end is loaded reads up to the total, then lands on the last row', () => {
    const s0 = listing(page(100, { complete: false, total: 10_000 }));
    const s1 = keys(s0, LAYOUT, 'G').state;
    expect(s1.engrams).toMatchObject({ jumpEnd: true, limit: 10_001 });
    const full = page(10_000, { limit: 10_001 });
    const s2 = event(s1, { type: 'engramPage', page: full, pageFor: pageKey(s1.engrams.filters, '') });
    expect(s2.engrams).toMatchObject({ jumpEnd: false, nav: { cursor: 9_999, offset: 10_000 - 18 } });
  });

  it('reads a bigger page when the cursor nears the end of what is loaded, never all rows', () => {
    const s0 = listing(page(100, { complete: false, total: 10_000 }));
    expect(keys(s0, LAYOUT, ...Array<Key>(60).fill(DOWN)).state.engrams.limit).toBe(100);
    expect(keys(s0, LAYOUT, ...Array<Key>(64).fill(DOWN)).state.engrams.limit).toBe(200);
  });

  it('Enter opens the selected engram; Esc goes back', () => {
    const s0 = listing(page(5));
    const s1 = keys(s0, LAYOUT, 'j', ENTER).state;
    expect(s1.detail).toMatchObject({ target: { kind: 'engram', id: row(1).id }, scroll: 0, doc: undefined });
    expect(keys(s1, LAYOUT, ESC).state.detail).toBeNull();
  });

  it('q and Ctrl-C quit; Tab and 1 2 3 switch views, starting their reads on first visit', () => {
    const s0 = listing(page(5));
    expect(keys(s0, LAYOUT, 'q').effects).toEqual([{ type: 'quit' }]);
    expect(reduceKey(s0, 'c', special({ ctrl: true }), LAYOUT).effects).toEqual([{ type: 'quit' }]);
    const s1 = keys(s0, LAYOUT, TAB).state;
    expect(s1.view).toBe('episodes');
    expect(s1.episodes.started).toBe(true);
    expect(s1.tensions.started).toBe(false);
    expect(keys(s1, LAYOUT, special({ tab: true, shift: true })).state.view).toBe('engrams');
    expect(keys(s0, LAYOUT, '3').state).toMatchObject({ view: 'tensions', tensions: { started: true } });
  });

  it('R asks for a reload once the store is open', () => {
    const s0 = listing(page(5));
    expect(keys(s0, LAYOUT, 'R')).toMatchObject({ state: { message: { text: 'Reloading…' } }, effects: [{ type: 'reload' }] });
    expect(keys(s0, { ...LAYOUT, stores: null }, 'R').effects).toEqual([]);
    const s1 = event(s0, { type: 'reloaded' });
    expect(s1.message).toEqual({ text: 'Reloaded' });
    expect([s1.engrams.tick, s1.episodes.tick, s1.tensions.tick, s1.conflicts.tick]).toEqual([1, 1, 1, 1]);
  });
});

describe('key reducer: search', () => {
  it('/ types a query (q is a letter there), Backspace erases, Enter keeps it, Esc clears it', () => {
    const s0 = listing(page(5));
    const typing = keys(s0, LAYOUT, '/postgresq', BACKSPACE).state;
    expect(typing).toMatchObject({ searching: true, engrams: { query: 'postgres' } });
    expect(keys(typing, LAYOUT, ENTER).state).toMatchObject({ searching: false, engrams: { query: 'postgres' } });
    expect(keys(typing, LAYOUT, ESC).state).toMatchObject({ searching: false, engrams: { query: '' } });
    expect(reduceKey(typing, 'c', special({ ctrl: true }), LAYOUT).effects).toEqual([{ type: 'quit' }]);
  });

  it('the list is searched once typing settles, from its first row', () => {
    const s0 = keys(listing(page(50)), LAYOUT, 'jjj', '/pg').state;
    expect(s0.engrams.activeQuery).toBe('');
    const s1 = event(s0, { type: 'searchSettled', view: 'engrams', query: 'pg' });
    expect(s1.engrams).toMatchObject({ activeQuery: 'pg', limit: 100, nav: { cursor: 0, offset: 0 } });
  });
});

describe('key reducer: filters', () => {
  it('t and T cycle the type, a the status; a new filter starts from the first page', () => {
    const s0 = keys(listing(page(50)), LAYOUT, 'jjj').state;
    const s1 = keys(s0, LAYOUT, 't').state;
    expect(s1.engrams).toMatchObject({ filters: { type: 'behavioral' }, nav: { cursor: 0, offset: 0 }, limit: 100 });
    expect(keys(s1, LAYOUT, 'T').state.engrams.filters.type).toBeNull();
    expect(keys(s0, LAYOUT, 'a', 'a').state.engrams.filters.status).toBe('candidate');
    expect(keys(s0, LAYOUT, 't', 'a', 'c').state.engrams.filters).toEqual(initialState().engrams.filters);
  });

  it('s reads the scopes first (an effect), then cycles them', () => {
    const s0 = listing(page(5));
    const asked = keys(s0, LAYOUT, 's');
    expect(asked.effects).toEqual([{ type: 'facets', filter: 's', step: 1 }]);
    expect(asked.state.message?.text).toBe('Reading scopes and domains…');
    const s1 = event(asked.state, { type: 'facets', facets: { scopes: ['global', 'project:svc'], domains: ['db'] }, filter: 's', step: 1 });
    expect(s1.engrams.filters.scope).toBe('global');
    expect(s1.message).toBeNull();
    expect(keys(s1, LAYOUT, 's').state.engrams.filters.scope).toBe('project:svc');
    expect(keys(s1, LAYOUT, 'D').state.engrams.filters.domain).toBe('db');
  });

  it('o cycles the stores, or says there is only one', () => {
    const s0 = listing(page(5));
    expect(keys(s0, LAYOUT, 'o').state.message?.text).toMatch(/^One store only/);
    const three = { ...LAYOUT, stores: ['all', 'primary', 'project:team'] };
    expect(keys(s0, three, 'o', 'o').state.engrams.filters.store).toBe('project:team');
  });
});

describe('key reducer: actions', () => {
  it('x asks first: n cancels, y forgets (an effect) and waits for the outcome', () => {
    const s0 = listing(page(5));
    const asking = keys(s0, LAYOUT, 'x');
    expect(asking.effects).toEqual([]);
    expect(asking.state.confirm).toEqual({
      prompt: `Forget ${row(0).id}? It will be retired: hidden from recall and injection, its history kept.`,
      action: { kind: 'forget', id: row(0).id },
    });
    expect(keys(asking.state, LAYOUT, 'n').state).toMatchObject({ confirm: null, message: { text: 'Cancelled' } });
    const yes = keys(asking.state, LAYOUT, 'y');
    expect(yes.effects).toEqual([{ type: 'act', action: { kind: 'forget', id: row(0).id } }]);
    expect(yes.state).toMatchObject({ confirm: null, busy: true, message: { text: 'Working…' } });
    // While it runs, other actions wait and the message stays.
    expect(keys(yes.state, LAYOUT, 'p').effects).toEqual([]);
    expect(keys(yes.state, LAYOUT, 'j').state.message?.text).toBe('Working…');
    const done = event(yes.state, { type: 'acted', action: { kind: 'forget', id: row(0).id }, text: `Retired ${row(0).id}` });
    expect(done).toMatchObject({ busy: false, message: { text: `Retired ${row(0).id}` }, engrams: { tick: 1 } });
    // A message lasts until the next key.
    expect(keys(done, LAYOUT, 'j').state.message).toBeNull();
  });

  it('p pins or unpins, P promotes, + and - give feedback', () => {
    const s0 = listing({ ...page(2), rows: [row(0, { pinned: true }), row(1)] });
    expect(keys(s0, LAYOUT, 'p').effects).toEqual([{ type: 'act', action: { kind: 'pin', id: row(0).id, pinned: false } }]);
    expect(keys(s0, LAYOUT, 'j', 'p').effects).toEqual([{ type: 'act', action: { kind: 'pin', id: row(1).id, pinned: true } }]);
    expect(keys(s0, LAYOUT, 'P').effects).toEqual([{ type: 'act', action: { kind: 'promote', id: row(0).id } }]);
    expect(keys(s0, LAYOUT, '-').effects).toEqual([{ type: 'act', action: { kind: 'feedback', id: row(0).id, signal: 'negative' } }]);
    expect(keys(listing(page(0)), LAYOUT, '+').state.message).toEqual({ text: 'No engram selected', error: true });
  });

  it('in the detail view, actions apply to the engram shown once it is read', () => {
    const s0 = keys(listing(page(3)), LAYOUT, ENTER).state;
    expect(keys(s0, LAYOUT, 'p').state.message?.text).toBe('No engram selected');
    const doc = { id: row(0).id, status: 'active', pinned: true } as EngramDoc;
    const s1 = event(s0, { type: 'detailDoc', id: row(0).id, doc });
    expect(keys(s1, LAYOUT, 'p').effects).toEqual([{ type: 'act', action: { kind: 'pin', id: row(0).id, pinned: false } }]);
  });
});

describe('key reducer: the detail view', () => {
  it('scrolls from what is on screen; G is the end wherever the layout of the text ends', () => {
    const s0 = keys(listing(page(3)), LAYOUT, ENTER).state;
    const long = { ...LAYOUT, detailLines: 100 };
    expect(keys(s0, long, 'jjj').state.detail?.scroll).toBe(3);
    expect(keys(s0, long, special({ pageDown: true })).state.detail?.scroll).toBe(19);
    const end = keys(s0, long, 'G').state;
    expect(end.detail?.scroll).toBe(Number.MAX_SAFE_INTEGER);
    // Up from the end: from the last screen of the 100 lines laid out.
    expect(keys(end, long, 'k').state.detail?.scroll).toBe(100 - 19 - 1);
    expect(keys(end, long, 'g').state.detail?.scroll).toBe(0);
    expect(keys(s0, long, 'k').state.detail?.scroll).toBe(0);
    expect(keys(end, long, 'q').effects).toEqual([{ type: 'quit' }]);
  });
});

describe('key reducer: tensions', () => {
  const tension: TensionView = { id: 'T-2026-0101-001', status: 'open', engrams: ['ENG-A', 'ENG-B'], summary: 'both', record: {} };
  const port = { available: true as const, port: { list: async () => ({ tensions: [], warnings: [] }), resolve: async () => '' } };
  const withTensions = (): BrowseState => {
    const s0 = keys(listing(page(3)), LAYOUT, '3').state;
    return event(event(s0, { type: 'tensionsPort', port }), { type: 'tensionRows', rows: [tension], warnings: [] });
  };

  it('r picks a winner, then asks: y resolves', () => {
    const s0 = withTensions();
    const choosing = keys(s0, LAYOUT, 'r').state;
    expect(choosing.choose).toBe(tension);
    const asking = keys(choosing, LAYOUT, '2').state;
    expect(asking.confirm).toEqual({
      prompt: 'Resolve: keep ENG-B, retire ENG-A?',
      action: { kind: 'resolve', tension: tension.id, winner: 'ENG-B' },
    });
    expect(keys(asking, LAYOUT, 'y').effects).toEqual([{ type: 'act', action: { kind: 'resolve', tension: tension.id, winner: 'ENG-B' } }]);
    expect(keys(choosing, LAYOUT, ESC).state).toMatchObject({ choose: null, message: { text: 'Cancelled' } });
  });

  it('resolving from the detail view goes back to the list', () => {
    const s0 = keys(withTensions(), LAYOUT, ENTER, 'r', '1', 'y').state;
    expect(s0.detail?.target.kind).toBe('tension');
    const done = event(s0, { type: 'acted', action: { kind: 'resolve', tension: tension.id, winner: 'ENG-A' }, text: 'Resolved' });
    expect(done.detail).toBeNull();
    expect(done.tensions.tick).toBe(1);
  });

  it('r without a selection, or without the tensions module, says why', () => {
    const s0 = keys(listing(page(3)), LAYOUT, '3').state;
    expect(keys(s0, LAYOUT, 'r').state.message).toEqual({ text: 'No tension selected', error: true });
    const s1 = event(event(s0, { type: 'tensionsPort', port: { available: false, reason: 'no tensions module' } }), {
      type: 'tensionRows',
      rows: [tension],
      warnings: [],
    });
    expect(keys(s1, LAYOUT, 'r').state.message).toEqual({ text: 'no tensions module', error: true });
  });

  it('a toggles every record and unresolved ones', () => {
    const s0 = withTensions();
    expect(keys(s0, LAYOUT, 'a').state.tensions.all).toBe(true);
    expect(keys(s0, LAYOUT, 'a', 'a').state.tensions.all).toBe(false);
  });
});

describe('key reducer: sync conflicts', () => {
  const conflict: ConflictView = {
    id: 'ENG-A-0badf00d',
    path: 'engrams/ENG-A.yaml',
    engram: 'ENG-A',
    fields: ['statement'],
    current: { statement: 'now' },
    other: { statement: 'theirs' },
    detectedAt: '2026-11-20T10:00:00.000Z',
    detectedOn: 'KQ7M',
  };
  const withConflicts = (): BrowseState =>
    event(keys(listing(page(3)), LAYOUT, '4').state, { type: 'conflictRows', rows: [conflict], problems: [] });

  it('4 opens the view and starts its read; c and o ask before resolving', () => {
    expect(keys(listing(page(3)), LAYOUT, '4').state).toMatchObject({ view: 'conflicts', conflicts: { started: true } });
    const s0 = withConflicts();
    const keep = keys(s0, LAYOUT, 'c').state;
    expect(keep.confirm?.action).toEqual({ kind: 'resolveConflict', id: conflict.id, keep: 'current' });
    expect(keys(keep, LAYOUT, 'y').effects).toEqual([
      { type: 'act', action: { kind: 'resolveConflict', id: conflict.id, keep: 'current' } },
    ]);
    expect(keys(s0, LAYOUT, 'o').state.confirm?.prompt).toBe("Take the other machine's version of ENG-A's statement?");
    expect(keys(keep, LAYOUT, 'n').state).toMatchObject({ confirm: null, message: { text: 'Cancelled' } });
  });

  it('resolving from the detail view goes back to the list, which reads again', () => {
    const s0 = keys(withConflicts(), LAYOUT, ENTER, 'o', 'y').state;
    expect(s0.detail?.target).toEqual({ kind: 'conflict', conflict });
    const done = event(s0, { type: 'acted', action: { kind: 'resolveConflict', id: conflict.id, keep: 'other' }, text: 'Resolved' });
    expect(done.detail).toBeNull();
    expect(done.conflicts.tick).toBe(1);
  });

  it('says so when nothing is selected, and names unreadable records', () => {
    const s0 = event(keys(listing(page(3)), LAYOUT, '4').state, {
      type: 'conflictRows',
      rows: [],
      problems: ['conflicts/x.yaml: not a conflict record'],
    });
    expect(s0.message).toEqual({ text: 'Unreadable conflict records: conflicts/x.yaml: not a conflict record', error: true });
    expect(keys(s0, LAYOUT, 'c').state.message).toEqual({ text: 'No conflict selected', error: true });
  });
});

describe('keys that arrive together', () => {
  it('are taken one by one; Enter and Tab inside them keep their meaning', () => {
    expect(splitInput('jjj', NO_KEY).map(([ch]) => ch)).toEqual(['j', 'j', 'j']);
    const [, enter] = splitInput('a\r', NO_KEY);
    expect(enter![1].return).toBe(true);
    expect(splitInput('\t', NO_KEY)).toHaveLength(1);
    const s = keys(listing(page(5)), LAYOUT, '/pg\rj').state;
    expect(s).toMatchObject({ searching: false, engrams: { query: 'pg' } });
  });
});
