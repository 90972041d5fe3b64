import { useEffect, useRef, type ReactNode } from 'react';
import { Box, useApp, useInput } from 'ink';
import { runAction } from './actions.js';
import { ConflictListView, conflictListFooter } from './conflict-list-view.js';
import type { BrowseData } from './data.js';
import type { Opened } from './first-frame.js';
import { DetailView } from './detail-view.js';
import { engramListFooter } from './engram-list-lines.js';
import { EngramListView } from './engram-list-view.js';
import { EpisodeListView, episodeListFooter } from './episode-list-view.js';
import { Footer } from './footer.js';
import type { ScreenFooter } from './footer-lines.js';
import { Lines } from './frame.js';
import { KeyScreen } from './key-screen.js';
import { HELP_LINE, type KeyHelp } from './keymap.js';
import { errorText, frameSize, initialState, type Detail, type Effect, type Layout } from './state.js';
import { TensionListView, tensionListFooter } from './tension-list-view.js';
import { TitleBar } from './title-bar.js';
import { useBrowseState } from './use-browse-state.js';
import { useDataSource } from './use-data-source.js';
import { useConflictList } from './use-conflict-list.js';
import { useDetail } from './use-detail.js';
import { useEngramList } from './use-engram-list.js';
import { useEpisodeList } from './use-episode-list.js';
import { useTensionList } from './use-tension-list.js';
import { useTerminalSize } from './use-terminal-size.js';

// The interactive browser: state stepped by pure reducers (keys, data events), hooks that read
// what the state asks for, components that draw it. Everything on screen is cut to the
// terminal width, and the frame is always exactly `rows - 1` lines (see frameSize). Lists are
// windowed and read a page at a time; a long detail is laid out as far as it is shown.

const DETAIL_HELP: Record<Detail['kind'], KeyHelp[]> = {
  engram: HELP_LINE.engramDetail,
  episode: HELP_LINE.episodeDetail,
  tension: HELP_LINE.tensionDetail,
  conflict: HELP_LINE.conflictDetail,
};

export interface AppProps {
  /** Opens the data source; called once when the UI starts (the opening is part of start-up). */
  open: () => Promise<BrowseData>;
  /** The store, opened and its first page and counts read before Ink loaded: the first frame shows the list. */
  opened?: Opened;
  /** Terminal size; defaults to the stdout's, following resizes. */
  columns?: number;
  rows?: number;
  /** Search-as-you-type delay. */
  debounceMs?: number;
  /** Called once, after the first frame that shows the engram list. */
  onListPainted?: () => void;
}

export function App(props: AppProps) {
  const { exit } = useApp();
  const size = useTerminalSize(props.columns, props.rows);
  const { width: W, height: H, listRows, detailRows } = frameSize(size.columns, size.rows);
  const debounceMs = props.debounceMs ?? 120;

  const layout = useRef<Layout>({ listRows, detailRows, detailLines: 0, stores: null });
  const run = useRef<(effect: Effect) => void>(() => undefined);
  const { state, onKey, dispatch } = useBrowseState(() => initialState(props.opened?.firstPage, props.opened?.counts), layout, run);
  const { data, error: openError } = useDataSource(props.open, props.opened?.data, dispatch);
  useEngramList(data, state.engrams, dispatch, debounceMs, props.opened !== undefined);
  useEpisodeList(data, state.episodes, dispatch, debounceMs);
  useTensionList(data, state.tensions, dispatch);
  useConflictList(data, state.conflicts, dispatch);
  const detailLines = useDetail(data, state.detail, W, dispatch);
  // Lay out what the detail shows, and a page more for keys that come before the next render.
  if (state.detail && detailLines) detailLines.ensure(Math.min(state.detail.scroll, detailLines.count) + 2 * detailRows);
  layout.current = { listRows, detailRows, detailLines: detailLines?.count ?? 0, stores: data?.stores ?? null };

  run.current = (effect) => {
    if (effect.type === 'quit') return exit();
    if (!data) return;
    const failed = (err: unknown) => dispatch({ type: 'message', message: { text: errorText(err), error: true } });
    if (effect.type === 'act') {
      const { action } = effect;
      runAction(data, state.tensions.port, action).then(
        (text) => dispatch({ type: 'acted', action, text }),
        (err) => dispatch({ type: 'actFailed', error: errorText(err) }),
      );
    } else if (effect.type === 'reload') {
      data.refresh().then(() => dispatch({ type: 'reloaded' }), failed);
    } else {
      const { filter, step } = effect;
      data.facets().then((facets) => dispatch({ type: 'facets', facets, filter, step }), failed);
    }
  };
  useInput(onKey);

  const painted = useRef(false);
  useEffect(() => {
    if (state.engrams.page && !painted.current) {
      painted.current = true;
      props.onListPainted?.();
    }
  }, [state.engrams.page]);

  let body: ReactNode;
  let screen: ScreenFooter;
  const { detail, searching } = state;
  if (openError) {
    body = <Lines lines={[{ text: `Cannot open the store: ${openError}`, style: 'error' }]} width={W} count={H - 3} />;
    screen = { info: { text: 'q to quit', error: true }, help: [] };
  } else if (!data) {
    body = <Lines lines={[{ text: 'Opening the store…', style: 'dim' }]} width={W} count={H - 3} />;
    screen = { info: null, help: [] };
  } else if (state.showHelp) {
    body = <KeyScreen root={data.root} width={W} rows={H - 4} />;
    screen = { info: null, help: HELP_LINE.help, keyScreen: true };
  } else if (detail && detailLines) {
    body = <DetailView target={detail.target} lines={detailLines} scroll={detail.scroll} width={W} rows={detailRows} />;
    screen = { info: null, help: DETAIL_HELP[detail.target.kind] };
  } else if (state.view === 'engrams') {
    body = <EngramListView list={state.engrams} searching={searching} width={W} rows={listRows} />;
    screen = engramListFooter(state.engrams, searching);
  } else if (state.view === 'episodes') {
    body = <EpisodeListView list={state.episodes} searching={searching} width={W} rows={listRows} />;
    screen = episodeListFooter(state.episodes, searching);
  } else if (state.view === 'conflicts') {
    body = <ConflictListView list={state.conflicts} width={W} rows={listRows} />;
    screen = conflictListFooter(state.conflicts);
  } else {
    body = <TensionListView list={state.tensions} width={W} rows={listRows} />;
    screen = tensionListFooter(state.tensions);
  }

  return (
    <Box flexDirection="column" width={W} height={H}>
      <TitleBar view={state.view} counts={state.counts} width={W} />
      {body}
      <Footer state={state} screen={screen} width={W} />
    </Box>
  );
}
