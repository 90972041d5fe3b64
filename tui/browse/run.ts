import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { AppProps } from './app.js';

// Starting the browser: in the user's terminal (`svc`, `svc browse`), or off-screen for the
// first-paint benchmark. Ink and React are imported here, lazily: no other command loads them.

const ENTER_ALT_SCREEN = '\u001B[?1049h\u001B[H';
const LEAVE_ALT_SCREEN = '\u001B[?1049l';

/**
 * Loads the UI and, at the same time, opens the store (its reconcile overlaps with loading
 * Ink). The App receives the opening as a promise and shows "Opening the store…" meanwhile.
 */
async function loadUi(root: string) {
  const opening = import('./data.js').then((m) => m.openLocalBrowseData(root));
  opening.catch(() => undefined); // reported by the App, not as an unhandled rejection
  const [ink, react, app] = await Promise.all([import('ink'), import('react'), import('./app.js')]);
  return { render: ink.render, createElement: react.createElement, App: app.App, open: () => opening };
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
  const { render, createElement, App, open } = await loadUi(root);

  let onScreen = true;
  const restore = () => {
    if (!onScreen) return;
    onScreen = false;
    process.stdout.write(LEAVE_ALT_SCREEN);
  };
  process.stdout.write(ENTER_ALT_SCREEN);
  process.once('exit', restore);
  const props: AppProps = { open };
  const instance = render(createElement(App, props), { exitOnCtrlC: false, patchConsole: true });
  try {
    await instance.waitUntilExit();
  } finally {
    instance.cleanup();
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
 * Milliseconds from starting the UI (importing Ink and React, opening the store) to the first
 * frame that shows the engram list, rendered off-screen at 80×24.
 */
export async function benchFirstPaint(storeRoot: string): Promise<number> {
  const start = performance.now();
  const { render, createElement, App, open } = await loadUi(storeRoot);
  const stdout = new FakeStdout(80, 24);
  const stdin = new FakeStdin();
  let lastFrame = '';
  stdout.onFrame = (frame) => (lastFrame = frame);
  let painted!: () => void;
  const done = new Promise<void>((resolve) => (painted = resolve));
  const props: AppProps = { open, columns: 80, rows: 24, onListPainted: () => painted() };
  const instance = render(createElement(App, props), {
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
    if (!/(ENG|ABS|META)-|No engrams/.test(lastFrame)) throw new Error('first paint: the frame does not show the engram list');
    return ms;
  } finally {
    instance.unmount();
    instance.cleanup();
  }
}
