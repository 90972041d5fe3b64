import { hookDeadlineMs, type HookName } from '../hook-names.js';
import type { HookEvent } from './io.js';
import { hookFailed, runningHook } from './failure-log.js';
import { terminalSafe } from '../../engine/text.js';
import { whenMade, writeOut } from '../../engine/cli/std-write.js';
import { isHostId, type HostId } from '../hosts.js';
import { isDuplicateCopy } from './host-adapters.js';

// The entry of every `svc hook-*` command (bin/dispatch.mts maps each name here). A hook reads the
// host's event JSON on stdin and prints what the host expects. Whatever happens (bad or empty
// JSON, a missing or mistyped field, a broken store, an exception, a hang) it exits 0, prints
// nothing or only a harmless default (Cursor handlers always print valid JSON), writes nothing to
// stderr (unless SVC_DEBUG is set) and never blocks the host. Failures are logged in the store
// instead (failure-log.ts), where svc doctor shows them. Each handler module is imported
// only when its hook runs, and imports the store and the engine lazily itself.
//
// Which host events each handler serves is documented at the top of its module:
// Codex CLI's hooks take Claude Code's event JSON and answers, so it runs the same handlers; its
// commands end in `--host codex` so that records name it. Gemini CLI's (`--host gemini`) differ in
// event names and answers, which its adapter in host-adapters.ts translates.
//
//   hook-inject                 inject.ts             UserPromptSubmit, SessionStart
//   hook-correction-detect      correction-detect.ts  UserPromptSubmit
//   hook-learn-check            learn-check.ts        Stop
//   hook-session-guard/-mark/-remind  session.ts      SessionStart, SessionEnd, PreCompact, PostToolUse
//   hook-observe, hook-revert-detect  observe.ts      PostToolUse
//   hook-cursor-*               cursor.ts             Cursor sessionStart, beforeSubmitPrompt, afterFileEdit, stop

type Handler = (event: HookEvent) => Promise<string | undefined>;

interface HookSpec {
  load: () => Promise<Handler>;
  /** Printed when the input is unusable or the handler fails or runs out of time. */
  fallback: string;
}

const CURSOR_CONTINUE = '{"continue":true}';

const HOOKS: Record<HookName, HookSpec> = {
  'hook-inject': { load: () => import('./inject.js').then((m) => m.hookInject), fallback: '' },
  'hook-correction-detect': { load: () => import('./correction-detect.js').then((m) => m.hookCorrectionDetect), fallback: '' },
  'hook-learn-check': { load: () => import('./learn-check.js').then((m) => m.hookLearnCheck), fallback: '' },
  'hook-session-guard': { load: () => import('./session.js').then((m) => m.hookSessionGuard), fallback: '' },
  'hook-session-mark': { load: () => import('./session.js').then((m) => m.hookSessionMark), fallback: '' },
  'hook-session-remind': { load: () => import('./session.js').then((m) => m.hookSessionRemind), fallback: '' },
  'hook-observe': { load: () => import('./observe.js').then((m) => m.hookObserve), fallback: '' },
  'hook-revert-detect': { load: () => import('./observe.js').then((m) => m.hookRevertDetect), fallback: '' },
  'hook-cursor-session-start': { load: () => import('./cursor.js').then((m) => m.cursorSessionStart), fallback: '{}' },
  'hook-cursor-prompt': { load: () => import('./cursor.js').then((m) => m.cursorPrompt), fallback: CURSOR_CONTINUE },
  'hook-cursor-after-edit': { load: () => import('./cursor.js').then((m) => m.cursorAfterEdit), fallback: '{}' },
  'hook-cursor-stop': { load: () => import('./cursor.js').then((m) => m.cursorStop), fallback: '{}' },
};

/** How long to wait for the host to close stdin. */
const STDIN_TIMEOUT_MS = 3_000;

export function command(name: HookName): { run(argv: string[]): Promise<number> } {
  return { run: (argv) => runHook(name, argv) };
}

/** `--host <id>` on the command line (hosts other than Claude Code and Cursor are wired with it); anything else is ignored. */
function hostArg(argv: string[]): HostId | undefined {
  const i = argv.indexOf('--host');
  const value = i >= 0 ? argv[i + 1] : undefined;
  return isHostId(value) ? value : undefined;
}

async function runHook(name: HookName, argv: string[]): Promise<number> {
  const spec = HOOKS[name];
  const fallback = spec.fallback;
  runningHook(name);
  let answered = false;
  const answer = (text: string | undefined): void => {
    if (answered) return;
    answered = true;
    if (!text) return;
    // JSON answers escape control characters already; plain text is shown by the host as is.
    const safe = text.trimStart().startsWith('{') ? text : terminalSafe(text);
    write(safe.endsWith('\n') ? safe : `${safe}\n`);
  };

  silenceStderr();
  const onFatal = (err: unknown): void => {
    hookFailed(err);
    answer(fallback);
    process.exit(0);
  };
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
  const budget = timeoutMs(name);
  // process.hrtime, not performance.now(): the `performance` global loads its modules on first use.
  const deadline = process.hrtime.bigint() + BigInt(Math.round(budget * 1e6));
  const watchdog = setTimeout(() => onFatal(new Error(`${name} ran out of time`)), budget);
  watchdog.unref();

  try {
    const { declareHost, parseEvent, readStdin } = await import('./io.js');
    const host = hostArg(argv);
    declareHost(host);
    const event = parseEvent(await readStdin(STDIN_TIMEOUT_MS));
    if (!event || isDuplicateCopy(host, event)) {
      answer(fallback);
      return 0;
    }
    const handler = await spec.load();
    const out = await handler(event);
    // Work that never waited on I/O kept the watchdog from firing: an answer past the deadline is
    // dropped all the same.
    // eslint-disable-next-line no-restricted-syntax -- caught below: the hook answers its harmless default
    if (process.hrtime.bigint() > deadline) throw new Error(`${name} ran out of time`);
    answer(out ?? fallback);
  } catch (err) {
    hookFailed(err);
    answer(fallback);
  } finally {
    clearTimeout(watchdog);
    // Nothing a hook loaded (a model's thread pool, a stray timer) may keep the host waiting.
    setTimeout(() => process.exit(0), 300).unref();
  }
  return 0;
}

/** How long the hook may take in all before it gives up quietly: inside the host's limit ($SVC_HOOK_TIMEOUT_MS overrides). */
function timeoutMs(name: HookName): number {
  const n = Number(process.env.SVC_HOOK_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : hookDeadlineMs(name);
}

/** The answer, written to the file descriptor: making process.stdout costs a stream (engine/cli/std-write.ts). */
function write(text: string): void {
  try {
    writeOut(text);
  } catch {
    // The host stopped reading: nothing more to tell it.
  }
}

/** Drops everything written to stderr for the rest of the process, unless SVC_DEBUG is set. */
function silenceStderr(): void {
  if (process.env.SVC_DEBUG) return;
  // Once something writes there: making the stream to silence it cost a hook 1-2 ms (a file's loads fs streams).
  whenMade('stderr', (stream) => {
    stream.write = ((..._args: unknown[]) => true) as typeof stream.write;
  });
  process.emitWarning = (() => {}) as typeof process.emitWarning;
}
