import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Box, Text, useApp, useInput, useStdout, type Key } from 'ink';
import { ENGRAM_TYPES, type EngramDoc, type EngramType } from '../../engine/model/engram-schema.js';
import type { Episode } from '../../engine/model/records.js';
import { ALL_STORES, DEFAULT_FILTERS, type BrowseData, type EngramPage, type EpisodePage, type Facets, type Filters, type StatusFilter } from './data.js';
import { engramLines, recordLines, type DetailLine } from './fields.js';
import { HELP_LINE, HELP_TAIL, KEY_SCREEN, type KeyHelp } from './keymap.js';
import type { TensionsState, TensionView } from './tensions.js';
import { displayWidth, fit, formatCount, oneLine, truncate, truncateStart } from './text.js';

// The interactive browser. Everything on screen is cut to the terminal width before it is
// rendered, and the frame is always exactly `rows - 1` lines (one fewer than the terminal, so
// Ink never falls back to clearing the whole screen on each update). Lists are windowed: only
// the visible rows are rendered, and rows are read from the index a page at a time.

export interface AppProps {
  /** Opens the data source; called once when the UI starts (the opening is part of start-up). */
  open: () => Promise<BrowseData>;
  /** Terminal size; defaults to the stdout's, following resizes. */
  columns?: number;
  rows?: number;
  /** Search-as-you-type delay. */
  debounceMs?: number;
  /** Called once, after the first frame that shows the engram list. */
  onListPainted?: () => void;
}

type View = 'engrams' | 'episodes' | 'tensions';
const VIEWS: View[] = ['engrams', 'episodes', 'tensions'];
const VIEW_TITLES: Record<View, string> = { engrams: 'Engrams', episodes: 'Episodes', tensions: 'Tensions' };

type Detail =
  | { kind: 'engram'; id: string }
  | { kind: 'episode'; episode: Episode }
  | { kind: 'tension'; tension: TensionView };

interface Confirm {
  prompt: string;
  run: () => Promise<string>;
}

interface Message {
  text: string;
  error?: boolean;
}

/** A row window: the selected index and the first visible index. */
interface Nav {
  cursor: number;
  offset: number;
}

const FIRST_PAGE = 100;
const STATUS_CYCLE: StatusFilter[] = ['live', 'active', 'candidate', 'dormant', 'retired', 'all'];
const TYPE_ABBR: Record<string, string> = { behavioral: 'beh', terminological: 'ter', procedural: 'pro', architectural: 'arc' };
const STATUS_MARK: Record<string, string> = { active: ' ', candidate: 'c', dormant: 'z', retired: 'x' };

function place(nav: Nav, cursor: number, count: number, window: number): Nav {
  const c = Math.max(0, Math.min(cursor, count - 1));
  let offset = nav.offset;
  if (c < offset) offset = c;
  if (c >= offset + window) offset = c - window + 1;
  offset = Math.max(0, Math.min(offset, Math.max(0, count - window)));
  return { cursor: Math.max(0, c), offset };
}

/**
 * State the key handler reads: a React state plus a ref holding the newest value at once.
 * Keys can arrive faster than React renders (React 19 renders in a microtask), so the
 * handler reads and writes the refs, never a render's snapshot, and no keystroke is lost.
 */
function useLive<T>(initial: T): [T, (next: T | ((prev: T) => T)) => void, { readonly current: T }] {
  const [state, setState] = useState<T>(initial);
  const ref = useRef<T>(initial);
  const set = useCallback((next: T | ((prev: T) => T)) => {
    const value = typeof next === 'function' ? (next as (prev: T) => T)(ref.current) : next;
    ref.current = value;
    setState(value);
  }, []);
  return [state, set, ref];
}

const NO_KEY: Key = {
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

function errorText(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}

const pageKey = (f: Filters, q: string) => JSON.stringify([f, q]);
const engramsText = (shown: string, n: number) => `${shown} ${n === 1 ? 'engram' : 'engrams'}`;

function cycle<T>(values: T[], current: T, step: number): T {
  const i = values.indexOf(current);
  return values[(i + step + values.length) % values.length]!;
}

const helpWidth = (items: KeyHelp[]) => items.reduce((w, k, i) => w + (i ? 1 : 0) + displayWidth(`${k.keys} ${k.label}`), 0);

/** The help line's items that fit the width (keys are bold, so one space separates items); the tail always stays. */
function fitHelp(items: KeyHelp[], tail: KeyHelp[], width: number): KeyHelp[] {
  const shown: KeyHelp[] = [];
  for (const item of items) {
    if (helpWidth([...shown, item, ...tail]) > width) break;
    shown.push(item);
  }
  return [...shown, ...tail];
}

export function App(props: AppProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const [size, setSize] = useState(() => ({
    columns: props.columns ?? (stdout.columns || 80),
    rows: props.rows ?? (stdout.rows || 24),
  }));
  useEffect(() => {
    if (props.columns && props.rows) return;
    const onResize = () => setSize({ columns: props.columns ?? (stdout.columns || 80), rows: props.rows ?? (stdout.rows || 24) });
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, props.columns, props.rows]);
  const W = Math.max(20, size.columns);
  /** Lines of the frame: one fewer than the terminal. */
  const H = Math.max(8, size.rows - 1);
  const listRows = H - 5;
  const detailRows = H - 4;

  // ------------------------------------------------------------------ data source
  const [data, setData, dataR] = useLive<BrowseData | null>(null);
  const [openError, setOpenError] = useState<string | null>(null);
  useEffect(() => {
    let alive = true;
    props.open().then(
      (d) => {
        if (!alive) return d.close();
        setData(d);
        if (d.warnings.length) setMessage({ text: d.warnings.join('; '), error: true });
      },
      (err) => alive && setOpenError(errorText(err)),
    );
    // Unmounting (quit) closes the store.
    return () => {
      alive = false;
      dataR.current?.close();
    };
  }, []);

  // ------------------------------------------------------------------ shared UI state
  const [view, setView, viewR] = useLive<View>('engrams');
  const [detail, setDetail, detailR] = useLive<Detail | null>(null);
  const [detailScroll, setDetailScroll, detailScrollR] = useLive(0);
  const [detailDoc, setDetailDoc, detailDocR] = useLive<EngramDoc | null | undefined>(undefined);
  const [tensionEngrams, setTensionEngrams] = useState<Record<string, EngramDoc | null>>({});
  const [searching, setSearching, searchingR] = useLive(false);
  const [showHelp, setShowHelp, showHelpR] = useLive(false);
  const [confirm, setConfirm, confirmR] = useLive<Confirm | null>(null);
  const [choose, setChoose, chooseR] = useLive<TensionView | null>(null);
  const [message, setMessage, messageR] = useLive<Message | null>(null);
  const [, setBusy, busyR] = useLive(false);

  // ------------------------------------------------------------------ engrams
  const [filters, setFilters, filtersR] = useLive<Filters>(DEFAULT_FILTERS);
  const [query, setQuery, queryR] = useLive('');
  const [activeQuery, setActiveQuery] = useState('');
  const [limit, setLimit, limitR] = useLive(FIRST_PAGE);
  const [page, setPage, pageR] = useLive<EngramPage | null>(null);
  const [pageError, setPageError] = useState<string | null>(null);
  const [nav, setNav, navR] = useLive<Nav>({ cursor: 0, offset: 0 });
  const [reloadTick, setReloadTick] = useState(0);
  const [counts, setCounts] = useState<Record<string, number> | null>(null);
  const [, setFacets, facetsR] = useLive<Facets | null>(null);
  const pageSeq = useRef(0);
  /** Which filters and query the shown page answers (until the next page arrives, the old one shows). */
  const [pageFor, setPageFor] = useState('');
  const painted = useRef(false);
  /** G/End pressed before every row was loaded: go to the last row once it is. */
  const jumpEnd = useRef(false);

  useEffect(() => {
    if (!data) return;
    const seq = ++pageSeq.current;
    const forKey = pageKey(filters, activeQuery);
    data.page(filters, activeQuery, limit).then(
      (p) => {
        if (seq !== pageSeq.current) return;
        setPage(p);
        setPageFor(forKey);
        setPageError(null);
        if (jumpEnd.current) {
          if (p.complete) jumpEnd.current = false;
          else setLimit(p.limit * 4);
          setNav((n) => place(n, p.rows.length - 1, p.rows.length, listRows));
        } else {
          setNav((n) => place(n, n.cursor, p.rows.length, listRows));
        }
      },
      (err) => seq === pageSeq.current && setPageError(errorText(err)),
    );
    data.counts().then(setCounts, () => undefined);
  }, [data, filters, activeQuery, limit, reloadTick]);

  useEffect(() => {
    if (page && !painted.current) {
      painted.current = true;
      props.onListPainted?.();
    }
  }, [page, props]);

  // Search as you type, debounced: the query runs once typing pauses.
  useEffect(() => {
    if (query === activeQuery) return;
    const timer = setTimeout(() => {
      setActiveQuery(query);
      setLimit(FIRST_PAGE);
      setNav({ cursor: 0, offset: 0 });
    }, props.debounceMs ?? 120);
    return () => clearTimeout(timer);
  }, [query, activeQuery, props.debounceMs]);

  // Near the end of what is loaded: read a bigger page (the index is asked, never all rows at once).
  useEffect(() => {
    if (!page || page.complete || page.limit !== limit) return;
    if (nav.cursor + listRows * 2 >= page.rows.length) setLimit(limit * 2);
  }, [nav.cursor, page, limit, listRows]);

  const changeFilters = (next: Filters) => {
    jumpEnd.current = false;
    setFilters(next);
    setLimit(FIRST_PAGE);
    setNav({ cursor: 0, offset: 0 });
  };

  // ------------------------------------------------------------------ episodes
  const [epQuery, setEpQuery, epQueryR] = useLive('');
  const [epActiveQuery, setEpActiveQuery] = useState('');
  const [epLimit, setEpLimit] = useState(FIRST_PAGE);
  const [epPage, setEpPage, epPageR] = useLive<EpisodePage | null>(null);
  const [epError, setEpError] = useState<string | null>(null);
  const [epNav, setEpNav, epNavR] = useLive<Nav>({ cursor: 0, offset: 0 });
  const [epTick, setEpTick] = useState(0);
  const epSeq = useRef(0);
  const [epPageFor, setEpPageFor] = useState<string | null>(null);
  const epWanted = view === 'episodes';
  const [epStarted, setEpStarted] = useState(false);
  useEffect(() => {
    if (epWanted) setEpStarted(true);
  }, [epWanted]);
  useEffect(() => {
    if (!data || !epStarted) return;
    const seq = ++epSeq.current;
    data.episodes(epActiveQuery, epLimit).then(
      (p) => {
        if (seq !== epSeq.current) return;
        setEpPage(p);
        setEpPageFor(epActiveQuery);
        setEpError(null);
        setEpNav((n) => place(n, n.cursor, p.rows.length, listRows));
      },
      (err) => seq === epSeq.current && setEpError(errorText(err)),
    );
  }, [data, epStarted, epActiveQuery, epLimit, epTick]);
  useEffect(() => {
    if (epQuery === epActiveQuery) return;
    const timer = setTimeout(() => {
      setEpActiveQuery(epQuery);
      setEpLimit(FIRST_PAGE);
      setEpNav({ cursor: 0, offset: 0 });
    }, props.debounceMs ?? 120);
    return () => clearTimeout(timer);
  }, [epQuery, epActiveQuery, props.debounceMs]);
  useEffect(() => {
    if (!epPage || epPage.complete || epPage.limit !== epLimit) return;
    if (epNav.cursor + listRows * 2 >= epPage.rows.length) setEpLimit(epLimit * 2);
  }, [epNav.cursor, epPage, epLimit, listRows]);

  // ------------------------------------------------------------------ tensions
  const [tState, setTState, tStateR] = useLive<TensionsState | null>(null);
  const [tAll, setTAll] = useState(false);
  const [tRows, setTRows, tRowsR] = useLive<TensionView[] | null>(null);
  const [tError, setTError] = useState<string | null>(null);
  const [tNav, setTNav, tNavR] = useLive<Nav>({ cursor: 0, offset: 0 });
  const [tTick, setTTick] = useState(0);
  const [tStarted, setTStarted] = useState(false);
  useEffect(() => {
    if (view === 'tensions') setTStarted(true);
  }, [view]);
  useEffect(() => {
    if (!data || !tStarted) return;
    let alive = true;
    (async () => {
      const state = await data.tensions();
      if (!alive) return;
      setTState(state);
      if (!state.available) return;
      const { tensions: rows, warnings } = await state.port.list({ all: tAll });
      if (!alive) return;
      setTRows(rows);
      if (warnings.length) setMessage({ text: warnings.join('; '), error: true });
      setTError(null);
      setTNav((n) => place(n, n.cursor, rows.length, listRows));
    })().catch((err) => alive && setTError(errorText(err)));
    return () => {
      alive = false;
    };
  }, [data, tStarted, tAll, tTick]);

  // ------------------------------------------------------------------ details
  const detailKey = detail ? (detail.kind === 'engram' ? detail.id : detail.kind === 'episode' ? detail.episode.id : detail.tension.id) : '';
  const [detailTick, setDetailTick] = useState(0);
  const shownDetail = useRef('');
  useEffect(() => {
    // Another engram: "Loading…"; the same one after an action: keep it on screen until reread.
    if (shownDetail.current !== detailKey) setDetailDoc(undefined);
    shownDetail.current = detailKey;
    if (!data || detail?.kind !== 'engram') return;
    let alive = true;
    data.get(detail.id).then(
      (doc) => alive && setDetailDoc(doc),
      (err) => alive && setMessage({ text: errorText(err), error: true }),
    );
    return () => {
      alive = false;
    };
  }, [data, detailKey, detailTick]);
  useEffect(() => {
    if (!data || detail?.kind !== 'tension') return;
    let alive = true;
    Promise.all(detail.tension.engrams.map(async (id) => [id, await data.get(id)] as const)).then(
      (pairs) => alive && setTensionEngrams(Object.fromEntries(pairs)),
      () => undefined,
    );
    return () => {
      alive = false;
    };
  }, [data, detailKey, detailTick]);

  const detailLines: DetailLine[] = useMemo(() => {
    if (!detail) return [];
    if (detail.kind === 'engram') {
      if (detailDoc === undefined) return [{ text: 'Loading…', kind: 'text' }];
      if (detailDoc === null) return [{ text: `${detail.id} is no longer in the store.`, kind: 'text' }];
      return engramLines(detailDoc, W);
    }
    if (detail.kind === 'episode') return recordLines(detail.episode as unknown as Record<string, unknown>, W, ['id', 'at', 'agent', 'channel', 'session', 'summary', 'engram_ids']);
    const t = detail.tension;
    const lines: DetailLine[] = recordLines(t.record, W, ['id', 'status']);
    t.engrams.forEach((id, i) => {
      lines.push({ text: '', kind: 'text' });
      lines.push({ text: truncate(`── ${i + 1}: ${id}, as it is now ──`, W), kind: 'heading' });
      const e = tensionEngrams[id];
      if (e === undefined) lines.push({ text: 'Loading…', kind: 'text' });
      else if (e === null) lines.push({ text: 'not in this store', kind: 'text' });
      else lines.push(...recordLines({ status: e.status, type: e.type, scope: e.scope, statement: e.statement, ...(e.rationale ? { rationale: e.rationale } : {}) }, W, ['status', 'type', 'scope', 'statement', 'rationale']));
    });
    return lines;
  }, [detail, detailDoc, tensionEngrams, W]);
  const maxScroll = Math.max(0, detailLines.length - detailRows);
  const maxScrollR = useRef(maxScroll);
  maxScrollR.current = maxScroll;

  // ------------------------------------------------------------------ actions
  // The helpers below and the key handler read the refs (see useLive), not this render's values.
  const selectedEngram = (): { id: string; pinned: boolean; status: string } | null => {
    const detail = detailR.current;
    const detailDoc = detailDocR.current;
    const page = pageR.current;
    const nav = navR.current;
    if (detail?.kind === 'engram') {
      if (!detailDoc) return null;
      return { id: detailDoc.id, pinned: detailDoc.pinned === true, status: detailDoc.status };
    }
    const row = page?.rows[nav.cursor];
    return row ? { id: row.id, pinned: row.pinned, status: row.status } : null;
  };

  const afterChange = () => {
    setReloadTick((t) => t + 1);
    setDetailTick((t) => t + 1);
    setTTick((t) => t + 1);
  };

  const act = useCallback(
    (run: () => Promise<string>) => {
      setBusy(true);
      setMessage({ text: 'Working…' });
      run().then(
        (text) => {
          setMessage({ text });
          setBusy(false);
          afterChange();
        },
        (err) => {
          setMessage({ text: errorText(err), error: true });
          setBusy(false);
        },
      );
    },
    [],
  );

  const engramAction = (input: string): boolean => {
    const data = dataR.current;
    if (!data) return false;
    const target = selectedEngram();
    if (!['x', 'p', 'P', '+', '-'].includes(input)) return false;
    if (!target) {
      setMessage({ text: 'No engram selected', error: true });
      return true;
    }
    const { id } = target;
    if (input === 'x') {
      if (target.status === 'retired') setMessage({ text: `${id} is already retired` });
      else setConfirm({ prompt: `Forget ${id}? It is retired (history kept).`, run: () => data.forget(id) });
    } else if (input === 'p') act(() => data.pin(id, !target.pinned));
    else if (input === 'P') act(() => data.promote(id));
    else if (input === '+') act(() => data.feedback(id, 'positive'));
    else if (input === '-') act(() => data.feedback(id, 'negative'));
    return true;
  };

  const startResolve = (t: TensionView | undefined) => {
    const tState = tStateR.current;
    if (!t) return setMessage({ text: 'No tension selected', error: true });
    if (!tState?.available) return setMessage({ text: tState ? tState.reason : 'tensions are loading', error: true });
    if (t.engrams.length < 2) return setMessage({ text: `${t.id} names fewer than two engrams`, error: true });
    setChoose(t);
  };

  const quit = () => exit();

  // ------------------------------------------------------------------ keys
  const moveKeys = (input: string, key: Key, cursor: number, count: number, window: number): number | null => {
    if (key.downArrow || input === 'j') return cursor + 1;
    if (key.upArrow || input === 'k') return cursor - 1;
    if (key.pageDown || (key.ctrl && input === 'f') || (input === ' ' && !key.ctrl)) return cursor + window;
    if (key.pageUp || (key.ctrl && input === 'b')) return cursor - window;
    if (key.home || input === 'g') return 0;
    if (key.end || input === 'G') return count - 1;
    return null;
  };

  // Ink subscribes the input handler in an effect; two keys arriving before that effect runs
  // would reach a stale closure. So Ink gets one stable function that calls the handler of
  // the latest render (renders are synchronous after each key).
  const handlerRef = useRef<(input: string, key: Key) => void>(() => undefined);
  const stableHandler = useCallback((input: string, key: Key) => {
    // Keys typed while the process was busy (or pasted) arrive as one string: replay them one
    // by one, so "/post" opens the search and types "post", and "jjj" moves three rows.
    if (input.length > 1 && !key.ctrl && !key.meta) {
      for (const ch of input) handlerRef.current(ch, keyOf(ch));
      return;
    }
    handlerRef.current(input, key);
  }, []);
  useInput(stableHandler);

  handlerRef.current = (input: string, key: Key) => {
    if (key.ctrl && input === 'c') return quit();
    const data = dataR.current;
    const view = viewR.current;
    const detail = detailR.current;
    const detailScroll = detailScrollR.current;
    const searching = searchingR.current;
    const showHelp = showHelpR.current;
    const confirm = confirmR.current;
    const choose = chooseR.current;
    const message = messageR.current;
    const busy = busyR.current;
    const filters = filtersR.current;
    const query = queryR.current;
    const limit = limitR.current;
    const page = pageR.current;
    const nav = navR.current;
    const facets = facetsR.current;
    const epQuery = epQueryR.current;
    const epPage = epPageR.current;
    const epNav = epNavR.current;
    const tState = tStateR.current;
    const tRows = tRowsR.current;
    const tNav = tNavR.current;
    const maxScroll = maxScrollR.current;
    // A message lasts until the next key (handlers below may set a new one).
    if (message && !busy) setMessage(null);

    if (confirm) {
      if (input === 'y' || input === 'Y') {
        const { run } = confirm;
        setConfirm(null);
        act(run);
      } else if (input === 'n' || input === 'N' || key.escape || input === 'q') {
        setConfirm(null);
        setMessage({ text: 'Cancelled' });
      }
      return;
    }
    if (choose) {
      const n = Number(input);
      if (Number.isInteger(n) && n >= 1 && n <= choose.engrams.length) {
        const winner = choose.engrams[n - 1]!;
        const losers = choose.engrams.filter((id) => id !== winner);
        const t = choose;
        setChoose(null);
        if (tState?.available) {
          const port = tState.port;
          setConfirm({
            prompt: `Resolve: keep ${winner}, retire ${losers.join(', ')}?`,
            run: async () => {
              const text = await port.resolve(t.id, winner);
              // The record changed status: back to the list, which reloads.
              if (detailR.current?.kind === 'tension') setDetail(null);
              return text;
            },
          });
        }
      } else if (key.escape || input === 'n' || input === 'q') {
        setChoose(null);
        setMessage({ text: 'Cancelled' });
      }
      return;
    }
    if (showHelp) {
      if (input === 'q') return quit();
      setShowHelp(false);
      return;
    }

    if (searching) {
      const isEp = view === 'episodes';
      const q = isEp ? epQuery : query;
      const setQ = isEp ? setEpQuery : setQuery;
      if (key.escape) {
        setQ('');
        setSearching(false);
      } else if (key.return) {
        setSearching(false);
      } else if (key.backspace || key.delete) {
        setQ([...q].slice(0, -1).join(''));
      } else if (key.ctrl && input === 'u') {
        setQ('');
      } else if (key.upArrow || key.downArrow || key.pageUp || key.pageDown) {
        if (isEp) {
          const n = epPage?.rows.length ?? 0;
          const to = moveKeys('', key, epNav.cursor, n, listRows);
          if (to !== null) setEpNav(place(epNav, to, n, listRows));
        } else {
          const n = page?.rows.length ?? 0;
          const to = moveKeys('', key, nav.cursor, n, listRows);
          if (to !== null) setNav(place(nav, to, n, listRows));
        }
      } else if (input && !key.ctrl && !key.meta && !key.tab) {
        const text = oneLine(input.replace(/[\r\n]/g, ' '));
        if (text || input === ' ') setQ(q + (text || ' '));
      }
      return;
    }

    if (detail) {
      if (key.escape || key.leftArrow || key.backspace || key.delete || input === 'h') {
        setDetail(null);
        setDetailScroll(0);
        return;
      }
      if (input === 'q') return quit();
      if (input === '?') return setShowHelp(true);
      // The render clamps the scroll to the text (which may not have loaded yet): G is "the end".
      const top = Math.min(detailScroll, maxScroll);
      const to = key.end || input === 'G' ? Number.MAX_SAFE_INTEGER : moveKeys(input, key, top, maxScroll + 1, detailRows);
      if (to !== null) return setDetailScroll(Math.max(0, to));
      if (busy) return;
      if (detail.kind === 'engram') engramAction(input);
      else if (detail.kind === 'tension' && input === 'r') startResolve(detail.tension);
      return;
    }

    // Lists.
    if (input === 'q') return quit();
    if (input === '?') return setShowHelp(true);
    if (key.tab) return setView(cycle(VIEWS, view, key.shift ? -1 : 1));
    if (input === '1' || input === '2' || input === '3') return setView(VIEWS[Number(input) - 1]!);
    if (input === 'R') {
      if (!data) return;
      setMessage({ text: 'Reloading…' });
      data.refresh().then(
        () => {
          setMessage({ text: 'Reloaded' });
          setFacets(null);
          afterChange();
          setEpTick((t) => t + 1);
        },
        (err) => setMessage({ text: errorText(err), error: true }),
      );
      return;
    }

    if (view === 'engrams') {
      const n = page?.rows.length ?? 0;
      if ((key.end || input === 'G') && page && !page.complete) {
        // Read up to the end (the total is known for unfiltered lists), then land on the last row.
        jumpEnd.current = true;
        setLimit(page.total !== undefined ? Math.max(page.total + 1, limit) : limit * 4);
      }
      const to = moveKeys(input, key, nav.cursor, n, listRows);
      if (to !== null) return setNav(place(nav, to, n, listRows));
      if (key.return) {
        const row = page?.rows[nav.cursor];
        if (row) {
          setDetail({ kind: 'engram', id: row.id });
          setDetailScroll(0);
        }
        return;
      }
      if (input === '/') return setSearching(true);
      if (key.escape) {
        if (query) setQuery('');
        return;
      }
      if (input === 'c') {
        setQuery('');
        changeFilters(DEFAULT_FILTERS);
        return;
      }
      const lower = input.toLowerCase();
      if (['s', 't', 'd', 'a', 'o'].includes(lower) && input.length === 1) {
        const step = input === lower ? 1 : -1;
        if (lower === 't') {
          const types: Array<EngramType | null> = [null, ...ENGRAM_TYPES];
          return changeFilters({ ...filters, type: cycle(types, filters.type, step) });
        }
        if (lower === 'a') return changeFilters({ ...filters, status: cycle(STATUS_CYCLE, filters.status, step) });
        if (lower === 'o') {
          const stores = data?.stores ?? [ALL_STORES];
          if (stores.length <= 2) return setMessage({ text: 'One store only: add others with svc stores add <path> <scope>' });
          return changeFilters({ ...filters, store: cycle(stores, filters.store, step) });
        }
        // Scope and domain values come from the store, read once on first use.
        const apply = (f: Facets) => {
          if (lower === 's') changeFilters({ ...filters, scope: cycle<string | null>([null, ...f.scopes], filters.scope, step) });
          else changeFilters({ ...filters, domain: cycle<string | null>([null, ...f.domains], filters.domain, step) });
        };
        if (facets) apply(facets);
        else if (data) {
          setMessage({ text: 'Reading scopes and domains…' });
          data.facets().then(
            (f) => {
              setFacets(f);
              setMessage(null);
              apply(f);
            },
            (err) => setMessage({ text: errorText(err), error: true }),
          );
        }
        return;
      }
      if (!busy) engramAction(input);
      return;
    }

    if (view === 'episodes') {
      const n = epPage?.rows.length ?? 0;
      const to = moveKeys(input, key, epNav.cursor, n, listRows);
      if (to !== null) return setEpNav(place(epNav, to, n, listRows));
      if (key.return) {
        const ep = epPage?.rows[epNav.cursor];
        if (ep) {
          setDetail({ kind: 'episode', episode: ep });
          setDetailScroll(0);
        }
        return;
      }
      if (input === '/') return setSearching(true);
      if (key.escape && epQuery) setEpQuery('');
      return;
    }

    // Tensions.
    const n = tRows?.length ?? 0;
    const to = moveKeys(input, key, tNav.cursor, n, listRows);
    if (to !== null) return setTNav(place(tNav, to, n, listRows));
    if (key.return) {
      const t = tRows?.[tNav.cursor];
      if (t) {
        setDetail({ kind: 'tension', tension: t });
        setDetailScroll(0);
        setTensionEngrams({});
      }
      return;
    }
    if (input === 'a') {
      setTAll((a) => !a);
      setTNav({ cursor: 0, offset: 0 });
      return;
    }
    if (input === 'r' && !busy) startResolve(tRows?.[tNav.cursor]);
  };

  // ------------------------------------------------------------------ rendering
  const lines: Array<{ text: string; style?: 'title' | 'selected' | 'dim' | 'bold' | 'error' | 'prompt' | 'accent'; help?: KeyHelp[] }> = [];
  const push = (text: string, style?: (typeof lines)[number]['style']) => lines.push({ text: fit(text, W), style });

  // Title bar: views on the left, what the store holds on the right.
  const tabs = VIEWS.map((v, i) => (v === view ? `[${i + 1} ${VIEW_TITLES[v]}]` : ` ${i + 1} ${VIEW_TITLES[v]} `)).join('');
  let right = '';
  if (counts) {
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const retired = counts.retired ?? 0;
    right = `${formatCount(total - retired)} live · ${formatCount(total)} total `;
  }
  const left = ` svc ${tabs}`;
  const gap = W - displayWidth(left) - displayWidth(right);
  push(gap >= 1 ? left + ' '.repeat(gap) + right : left, 'title');

  /** `visible`: the formatted rows of the window only, starting at `offset`. */
  const listBody = (total: number, visible: string[], cursor: number, offset: number, empty: string) => {
    if (total === 0) {
      push(empty, 'dim');
      for (let i = 1; i < listRows; i++) push('');
      return;
    }
    for (let i = 0; i < listRows; i++) {
      const text = visible[i];
      const selected = offset + i === cursor;
      // The cursor is marked twice: reverse video, and a › for terminals without it.
      if (text === undefined) push('');
      else push(`${selected ? '›' : ' '}${text}`, selected ? 'selected' : undefined);
    }
  };

  const footer: { info: Message | null; help: KeyHelp[]; tail: KeyHelp[] } = { info: null, help: [], tail: HELP_TAIL };

  if (openError) {
    push(`Cannot open the store: ${openError}`, 'error');
    for (let i = 0; i < H - 4; i++) push('');
    footer.info = { text: 'q to quit', error: true };
    footer.help = [];
  } else if (!data) {
    push('Opening the store…', 'dim');
    for (let i = 0; i < H - 4; i++) push('');
    footer.help = [];
  } else if (showHelp) {
    push(`Keys · store ${truncateStart(data.root, Math.max(10, W - 17))}`, 'bold');
    const keyW = 12;
    const body = KEY_SCREEN.map(([k, v]) => (v === '' ? k : `  ${fit(k, keyW)} ${v}`));
    for (let i = 0; i < H - 4; i++) push(body[i] ?? '', body[i] && !body[i]!.startsWith(' ') ? 'accent' : undefined);
    footer.help = HELP_LINE.help;
  } else if (detail) {
    const title =
      detail.kind === 'engram' ? `Engram ${detail.id}` : detail.kind === 'episode' ? `Episode ${detail.episode.id}` : `Tension ${detail.tension.id}`;
    const top = Math.min(detailScroll, maxScroll);
    const pos = detailLines.length > detailRows ? ` · lines ${top + 1}-${Math.min(detailLines.length, top + detailRows)} of ${detailLines.length}` : '';
    push(`${title}${pos}`, 'bold');
    for (let i = 0; i < detailRows; i++) {
      const l = detailLines[top + i];
      push(l?.text ?? '', l?.kind === 'field' ? undefined : l?.kind === 'heading' ? 'accent' : undefined);
    }
    footer.help = detail.kind === 'engram' ? HELP_LINE.engramDetail : detail.kind === 'episode' ? HELP_LINE.episodeDetail : HELP_LINE.tensionDetail;
  } else if (view === 'engrams') {
    const label = (name: string, value: string | null, fallback: string) => `${name}:${value ?? fallback}`;
    const cell = (s: string) => truncate(s, 22);
    push(
      [
        cell(label('scope', filters.scope, 'all')),
        cell(label('type', filters.type, 'all')),
        cell(label('domain', filters.domain, 'all')),
        label('status', filters.status, 'live'),
        label('store', filters.store, ALL_STORES),
      ].join('  '),
      filters.scope || filters.type || filters.domain || filters.status !== 'live' || filters.store !== ALL_STORES ? 'accent' : 'dim',
    );
    const count = !page || pageFor !== pageKey(filters, activeQuery)
      ? 'loading…'
      : activeQuery
        ? `${formatCount(page.rows.length)}${page.complete ? '' : '+'} found`
        : page.total !== undefined
          ? engramsText(formatCount(page.total), page.total)
          : engramsText(`${formatCount(page.rows.length)}${page.complete ? '' : '+'}`, page.rows.length);
    const pending = query !== activeQuery ? ' …' : '';
    if (searching || query) {
      const q = `/ ${query}${searching ? '▏' : ''}`;
      const tail = `${count}${pending} `;
      push(fit(q, Math.max(1, W - displayWidth(tail))) + tail, searching ? 'prompt' : undefined);
    } else {
      const tail = `${count} `;
      push(fit('/ to search (BM25)', Math.max(1, W - displayWidth(tail))) + tail, 'dim');
    }
    const scopeW = W >= 70 ? 12 : 8;
    const domainW = W >= 70 ? 16 : 0;
    const rows = (page?.rows ?? []).slice(nav.offset, nav.offset + listRows).map((r) => {
      const marks = `${STATUS_MARK[r.status] ?? '?'}${r.pinned ? '*' : ' '}`;
      const cols = [marks, TYPE_ABBR[r.type] ?? fit(r.type, 3), fit(r.scope, scopeW)];
      if (domainW) cols.push(fit(r.domain ?? '', domainW));
      return `${cols.join(' ')} ${r.statement}`;
    });
    // Only the visible window is formatted and rendered.
    listBody(
      page?.rows.length ?? 0,
      rows,
      nav.cursor,
      nav.offset,
      pageError
        ? `Error: ${pageError}`
        : !page
          ? 'Loading…'
          : !activeQuery
            ? 'No engrams'
            : filters.status === 'retired'
              ? 'Search never returns retired engrams: Esc clears the search to list them'
              : `No engram matches "${activeQuery}"`,
    );
    const row = page?.rows[nav.cursor];
    footer.info = row
      ? {
          // Position first: a long id or domain is what gets cut at the edge.
          text: `${formatCount(nav.cursor + 1)}/${formatCount(page?.total ?? page?.rows.length ?? 0)}${page?.complete || page?.total !== undefined ? '' : '+'}  ${row.id} · ${row.status}${row.pinned ? ' · pinned' : ''} · ${row.type} · ${row.scope}${row.domain ? ' · ' + row.domain : ''}`,
        }
      : null;
    footer.help = searching ? HELP_LINE.search : HELP_LINE.engrams;
  } else if (view === 'episodes') {
    const epCount =
      !epPage || epPageFor !== epActiveQuery ? 'loading…' : `${formatCount(epPage.rows.length)}${epPage.complete ? '' : '+'} ${epActiveQuery ? 'found' : 'loaded'}`;
    push(`Episodes, newest first · ${epCount}`, 'dim');
    if (searching || epQuery) push(`/ ${epQuery}${searching ? '▏' : ''}${epQuery !== epActiveQuery ? ' …' : ''}`, searching ? 'prompt' : undefined);
    else push('/ to search summaries', 'dim');
    const rows = (epPage?.rows ?? []).slice(epNav.offset, epNav.offset + listRows).map((e) => {
      const at = e.at.replace('T', ' ').slice(0, 16);
      return `${at}  ${fit(e.agent, 10)} ${oneLine(e.summary)}`;
    });
    listBody(
      epPage?.rows.length ?? 0,
      rows,
      epNav.cursor,
      epNav.offset,
      epError ? `Error: ${epError}` : epPage ? (epActiveQuery ? `No episode matches "${epActiveQuery}"` : 'No episodes yet (svc capture records one)') : 'Loading…',
    );
    const ep = epPage?.rows[epNav.cursor];
    footer.info = ep ? { text: `${ep.id}${ep.session ? ' · session ' + ep.session : ''}${ep.engram_ids?.length ? ` · ${ep.engram_ids.length} engrams` : ''}` } : null;
    footer.help = searching ? HELP_LINE.search : HELP_LINE.episodes;
  } else {
    push(`Tensions · ${tAll ? 'all records' : 'unresolved'}${tRows ? ` · ${tRows.length}` : ''}`, 'dim');
    push(tState && !tState.available ? '' : 'r resolves the selected tension with a winner', 'dim');
    const rows = (tRows ?? []).slice(tNav.offset, tNav.offset + listRows).map((t) => {
      const pair = t.engrams.join(' vs ');
      return `${fit(t.id, 17)} ${fit(t.status, 10)} ${pair}${t.summary ? '  ' + oneLine(t.summary) : ''}`;
    });
    const empty = tError
      ? `Error: ${tError}`
      : !tState
        ? 'Loading…'
        : !tState.available
          ? `Tensions unavailable: ${tState.reason}`
          : tAll
            ? 'No tension records'
            : 'No unresolved tensions';
    listBody(tRows?.length ?? 0, rows, tNav.cursor, tNav.offset, empty);
    const t = tRows?.[tNav.cursor];
    footer.info = t ? { text: `${t.id} · ${t.status} · ${t.engrams.length} engrams` } : null;
    footer.help = HELP_LINE.tensions;
  }

  // Info line: a question, else the last message, else what is selected.
  if (confirm) push(`${confirm.prompt} [y/n]`, 'prompt');
  else if (choose) push(`Winner? ${choose.engrams.map((id, i) => `${i + 1}=${id}`).join('  ')}`, 'prompt');
  else if (message) push(message.text, message.error ? 'error' : 'bold');
  else if (footer.info) push(footer.info.text, footer.info.error ? 'error' : 'dim');
  else push('');
  const helpItems = confirm ? HELP_LINE.confirm : choose ? HELP_LINE.choose : footer.help;
  const tail = confirm || choose ? [] : showHelp && data ? HELP_TAIL.filter((k) => k.keys === 'q') : footer.tail;
  const help = fitHelp(helpItems, tail, W);
  lines.push({ text: truncate(help.map((k) => `${k.keys} ${k.label}`).join(' '), W), help });

  return (
    <Box flexDirection="column" width={W} height={H}>
      {lines.slice(0, H).map((l, i) =>
        l.help ? (
          // The help line: keys bold, what they do dimmed.
          <Text key={i} wrap="truncate-end">
            {l.help.map((k, j) => (
              <Text key={j}>
                {j ? ' ' : ''}
                <Text bold color="cyan">
                  {k.keys}
                </Text>
                <Text dimColor> {k.label}</Text>
              </Text>
            ))}
          </Text>
        ) : (
        <Text
          key={i}
          wrap="truncate-end"
          inverse={l.style === 'title' || l.style === 'selected'}
          bold={l.style === 'bold' || l.style === 'title' || l.style === 'prompt'}
          dimColor={l.style === 'dim'}
          color={l.style === 'error' ? 'red' : l.style === 'prompt' ? 'yellow' : l.style === 'accent' ? 'cyan' : undefined}
        >
          {l.text}
        </Text>
        ),
      )}
    </Box>
  );
}

