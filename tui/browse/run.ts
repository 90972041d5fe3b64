import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { AppProps } from './app.js';
import type { BrowseData } from './data.js';
import type { Opened } from './first-frame.js';

// Starting the browser: in the user's terminal (`svc`, `svc browse`), or off-screen for the
// first-paint benchmark. Ink and React are imported here, lazily: no other command loads them.

const ENTER_ALT_SCREEN = '\u001B[?1049h\u001B[H';
const LEAVE_ALT_SCREEN = '\u001B[?1049l';
const HOME = '\u001B[H';
const HIDE_CURSOR = '\u001B[?25l';
const SHOW_CURSOR = '\u001B[?25h';

/** How long the first screen waits for the store before Ink loads anyway (and shows "Opening the store…"). */
const STORE_WAIT_MS = 150;

/** Where the UI draws: a terminal, or the benchmark's stand-in. */
interface Screen {
  readonly columns: number;
  readonly rows: number;
  write(text: string): unknown;
}

/** The store opening, and what the first screen showed when it opened in time. */
interface FirstScreen {
  opening: Promise<{ data: BrowseData; opened?: Opened }>;
  opened?: Opened;
}

/**
 * Opens the store and reads the first page, then paints that first screen as plain text, before
 * Ink and React are loaded (they take most of the start-up). A store slow to open is not waited
 * for: nothing is painted, and the App shows "Opening the store…" once Ink is loaded.
 */
async function paintFirstScreen(root: string, screen: Screen): Promise<FirstScreen> {
  // One import at a time: Node 20 can fail to link a module that two dynamic imports in flight
  // share ("request for './data.js' is not in cache", nodejs/node#52187).
  const { openLocalBrowseData, DEFAULT_FILTERS } = await import('./data.js');
  const { FIRST_PAGE } = await import('./state.js');
  const { firstFrame } = await import('./first-frame.js');
  const opening = (async () => {
    const data = await openLocalBrowseData(root);
    try {
      const firstPage = await data.page(DEFAULT_FILTERS, '', FIRST_PAGE);
      return { data, opened: { data, firstPage, counts: await data.counts() } };
    } catch {
      return { data }; // the App reads again, and shows the error
    }
  })();
  opening.catch(() => undefined); // reported by the App, not as an unhandled rejection
  const waited = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), STORE_WAIT_MS).unref());
  const opened = (await Promise.race([opening.catch(() => undefined), waited]))?.opened;
  if (!opened) return { opening };
  screen.write(HOME + HIDE_CURSOR + firstFrame(opened, screen.columns, screen.rows) + HOME);
  return { opening, opened };
}

/** Loads Ink, React and the App; the App starts from the first screen's state, so its first frame changes nothing on screen. */
async function loadUi({ opening, opened }: FirstScreen) {
  // React and its reconciler load their development builds (more code, slower renders) unless
  // NODE_ENV says production; this process only runs the UI.
  process.env.NODE_ENV ??= 'production';
  const ink = await import('ink');
  const react = await import('react');
  const app = await import('./app.js');
  const props: AppProps = { open: () => opening.then((o) => o.data), ...(opened ? { opened } : {}) };
  return { render: ink.render, createElement: react.createElement, App: app.App, props };
}

/**
 * Runs the browser on the store at `root` in this terminal (stdin and stdout must be TTYs)
 * until q or Ctrl-C. It draws on the alternate screen, so quitting restores what was there,
 * and Ink restores the cursor and the terminal mode.
 */
export async function runBrowser(root: string): Promise<number> {
  // Ink renders nothing until exit when it believes it runs in CI; here a person asked for
  // the UI on a terminal, so that guess is wrong. (Read by Ink when it is first imported.)
  for (const name of ['CI', 'CONTINUOUS_INTEGRATION']) if (process.env[name]) process.env[name] = 'false';
  const { stdin, stdout } = process;
  let onScreen = true;
  const restore = () => {
    if (!onScreen) return;
    onScreen = false;
    stdout.write(SHOW_CURSOR + LEAVE_ALT_SCREEN);
    if (stdin.isTTY) stdin.setRawMode(false);
  };
  stdout.write(ENTER_ALT_SCREEN);
  process.once('exit', restore);
  // Keys typed before Ink listens wait for it, neither echoed over the first screen nor held
  // for a whole line.
  if (stdin.isTTY) stdin.setRawMode(true);
  try {
    const first = await paintFirstScreen(root, { columns: stdout.columns || 80, rows: stdout.rows || 24, write: (s) => stdout.write(s) });
    const { render, createElement, App, props } = await loadUi(first);
    const instance = render(createElement(App, props), { exitOnCtrlC: false, patchConsole: true });
    try {
      await instance.waitUntilExit();
    } finally {
      instance.cleanup();
    }
  } finally {
    restore();
    process.off('exit', restore);
  }
  return 0;
}

/** A stand-in terminal for rendering off-screen: 80×24, records every frame. */
class FakeStdout extends EventEmitter {
  readonly isTTY = true;
  readonly columns: number;
  readonly rows: number;
  onFrame: (frame: string) => void = () => undefined;
  constructor(columns: number, rows: number) {
    super();
    this.columns = columns;
    this.rows = rows;
  }
  write = (frame: string): boolean => {
    this.onFrame(frame);
    return true;
  };
}

class FakeStdin extends EventEmitter {
  readonly isTTY = true;
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
  read = (): null => null;
}

/**
 * Milliseconds from starting the UI to the first frame that shows the engram list, rendered
 * off-screen at 80×24: the plain first screen when the store opens in time (then Ink is not
 * loaded at all), else the App's first list frame.
 */
export async function benchFirstPaint(storeRoot: string): Promise<number> {
  const start = performance.now();
  const stdout = new FakeStdout(80, 24);
  const stdin = new FakeStdin();
  let lastFrame = '';
  stdout.onFrame = (frame) => (lastFrame = frame);
  const showsList = () => {
    // eslint-disable-next-line no-restricted-syntax -- the benchmark's own check: a wrong frame is a bug, not a refusal
    if (!/(ENG|ABS|META)-|No engrams/.test(lastFrame)) throw new Error('first paint: the frame does not show the engram list');
  };
  const first = await paintFirstScreen(storeRoot, stdout);
  if (first.opened) {
    const ms = performance.now() - start;
    first.opened.data.close();
    showsList();
    return ms;
  }
  const { render, createElement, App, props } = await loadUi(first);
  let painted!: () => void;
  const done = new Promise<void>((resolve) => (painted = resolve));
  const instance = render(createElement(App, { ...props, columns: 80, rows: 24, onListPainted: () => painted() }), {
    stdout: stdout as unknown as NodeJS.WriteStream,
    stderr: stdout as unknown as NodeJS.WriteStream,
    stdin: stdin as unknown as NodeJS.ReadStream,
    // Debug mode writes each frame whole and at once, so the frame is out when `painted` fires.
    debug: true,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  try {
    await done;
    const ms = performance.now() - start;
    showsList();
    return ms;
  } finally {
    instance.unmount();
    instance.cleanup();
  }
}
