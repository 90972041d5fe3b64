import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { errorLine } from '../../engine/text.js';

// Hooks never show an error to the host (run-hook.ts), so a failure would leave no trace: each
// one is appended here, to <store>/logs/hook-failures.jsonl (machine-local, never committed),
// and `svc doctor` shows the recent ones. The file stays small: past MAX_BYTES it is cut to its
// newest half. Logging must never fail a hook, so every error here is swallowed.

export const FAILURE_LOG = join('logs', 'hook-failures.jsonl');
const MAX_BYTES = 64 * 1024;

export interface HookFailure {
  at: string;
  hook: string;
  error: string;
}

let current = 'hook';

/** Names the hook this process runs, for the lines it logs. */
export function runningHook(name: string): void {
  current = name;
}

/**
 * A failure the host never sees: logged in the store (svc doctor shows it), and written to
 * stderr when SVC_DEBUG is set.
 */
export function hookFailed(err: unknown): void {
  if (process.env.SVC_DEBUG) process.stderr.write(`svc ${current}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  logHookFailure(resolveStoreRoot(), err);
}

/** Appends a failure of the running hook to the store's log (only in a store that exists). */
export function logHookFailure(root: string, err: unknown, hook = current): void {
  try {
    if (!existsSync(root) || !statSync(root).isDirectory()) return; // hooks never create a store
    const file = join(root, FAILURE_LOG);
    mkdirSync(join(root, 'logs'), { recursive: true });
    const line: HookFailure = { at: new Date().toISOString(), hook, error: errorLine(err, 500) };
    appendFileSync(file, `${JSON.stringify(line)}\n`);
    if (statSync(file).size > MAX_BYTES) {
      const text = readFileSync(file, 'utf8');
      const keep = text.slice(text.indexOf('\n', text.length - MAX_BYTES / 2) + 1);
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, keep);
      renameSync(tmp, file);
    }
  } catch {
    // a full disk or a read-only store: the hook goes on without its log line
  }
}

/** The newest `limit` failures logged in the store, newest first; unreadable lines are skipped. */
export function recentHookFailures(root: string, limit: number): HookFailure[] {
  let text: string;
  try {
    text = readFileSync(join(root, FAILURE_LOG), 'utf8');
  } catch {
    return [];
  }
  const out: HookFailure[] = [];
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0 && out.length < limit; i--) {
    try {
      const f = JSON.parse(lines[i]!) as HookFailure;
      if (typeof f.at === 'string' && typeof f.hook === 'string' && typeof f.error === 'string') out.push(f);
    } catch {
      // a line cut by a crash
    }
  }
  return out;
}
