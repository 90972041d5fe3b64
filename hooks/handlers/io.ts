import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalBackend } from '../../engine/store/local-backend.js';
import { hookFailed } from './failure-log.js';
import { terminalSafe } from '../../engine/text.js';
import type { HostId } from '../hosts.js';
import { adaptEvent, contextAnswer, sniffHost } from './host-adapters.js';

// What every hook handler shares: the event read from stdin, field access that never throws on a
// wrong type, the session key, the store, and the host's output shapes. Only node built-ins are
// imported eagerly; the store (better-sqlite3) loads when a handler asks for it.

/** The host's event, as parsed from stdin: always an object, any field may be missing or wrong. */
export type HookEvent = Record<string, unknown>;

/** The agent hosts svc wires (hooks/hosts.ts names each). */
export type Host = HostId;

let declaredHost: HostId | undefined;

/** The host named on the hook's command line (`--host codex`), set by the runner before the handler runs. */
export function declareHost(host: HostId | undefined): void {
  declaredHost = host;
}

/** Largest stdin accepted (PostToolUse carries whole tool outputs); beyond it the event is dropped. */
const MAX_STDIN = 32 * 1024 * 1024;

/** Reads stdin to its end; gives up (returning what came) after `timeoutMs` or at MAX_STDIN. */
export async function readStdin(timeoutMs: number): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY) return '';
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stdin.removeAllListeners('data');
      stdin.pause();
      resolve(size > MAX_STDIN ? '' : Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(finish, timeoutMs);
    timer.unref();
    stdin.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_STDIN) return finish();
      chunks.push(chunk);
    });
    stdin.on('end', finish);
    stdin.on('error', finish);
  });
}

/**
 * The event object, with the declared host's names turned into Claude Code's, or null for empty
 * input, invalid JSON or JSON that is not an object.
 */
export function parseEvent(text: string): HookEvent | null {
  if (text.trim() === '') return null;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? adaptEvent(declaredHost ?? sniffHost(value as HookEvent), value as HookEvent)
      : null;
  } catch {
    return null;
  }
}

/** A string field, trimmed; '' when missing or not a string. */
export function str(e: HookEvent | undefined, key: string): string {
  const v = e?.[key];
  return typeof v === 'string' ? v.trim() : '';
}

/** An object field; undefined when missing or not a plain object. */
export function obj(e: HookEvent | undefined, key: string): HookEvent | undefined {
  const v = e?.[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as HookEvent) : undefined;
}

/** The event name the host sent (Claude Code: PascalCase; Cursor: camelCase). */
export function eventName(e: HookEvent): string {
  return str(e, 'hook_event_name');
}

/**
 * The session's key for file names: Cursor's `conversation_id` (every Cursor event carries it;
 * its `sessionStart` also has a `session_id`), else Claude Code's `session_id`. Anything outside
 * [A-Za-z0-9._-] is replaced; '' when absent.
 */
export function sessionKey(e: HookEvent): string {
  const raw = sessionId(e);
  if (!raw) return '';
  const safe = raw
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 128);
  return safe;
}

/** The raw session id, for records that name the session (episodes, injection events). */
export function sessionId(e: HookEvent): string | undefined {
  return (str(e, 'conversation_id') || str(e, 'session_id') || undefined)?.slice(0, 200);
}

/**
 * The host that sent the event: the one its command line names (hosts with files of their own are
 * wired with `--host <id>`), else what its fields say (host-adapters.ts).
 */
export function hostOf(e: HookEvent): HostId {
  return declaredHost ?? sniffHost(e);
}

/** The project folder: Claude Code's `cwd`, Cursor's first workspace root. */
export function projectDir(e: HookEvent): string {
  const roots = e.workspace_roots;
  if (Array.isArray(roots) && typeof roots[0] === 'string' && roots[0]) return roots[0];
  return str(e, 'cwd');
}

/**
 * True when a store has been set up at `root` (its index exists). Hooks other than the session
 * guard never create a store: a prompt in a folder where svc was never used must stay free.
 */
export function storeReady(root: string): boolean {
  try {
    return statSync(root).isDirectory() && existsSync(join(root, 'index.db'));
  } catch {
    return false;
  }
}

/** Opens the store for a hook (cheap reconcile). Throws like LocalStore.open; callers fail open. */
export async function openStore(root: string): Promise<LocalBackend> {
  const { openStoreSpan } = await import('../../engine/store/open-store.js');
  return openStoreSpan(root, 'fast');
}

/** Runs `fn` on the store, closing it afterwards; undefined when the store is absent or fails. */
export async function withStore<T>(root: string, fn: (store: LocalBackend) => Promise<T>): Promise<T | undefined> {
  if (!storeReady(root)) return undefined;
  let store: LocalBackend | undefined;
  try {
    store = await openStore(root);
    return await fn(store);
  } catch (err) {
    hookFailed(err);
    return undefined;
  } finally {
    store?.close();
  }
}

/**
 * The JSON answer adding context at `hookEventName` (Claude Code's name: UserPromptSubmit,
 * SessionStart, PostToolUse), in the shape the declared host takes (host-adapters.ts); `extra`
 * fields (a `systemMessage` for the user) go beside it.
 */
export function contextOutput(hookEventName: string, text: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...extra, ...contextAnswer(declaredHost, hookEventName, terminalSafe(text)) });
}
