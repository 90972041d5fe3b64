import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from '../../engine/store/durable-write.js';
import { hookFailed } from './failure-log.js';
import { byCodeUnit } from '../../engine/text.js';
import { sleepSync } from '../../engine/sleep-sync.js';

// The hooks' memory of one agent session: `<store>/sessions/hooks/<session>.json`. Hooks are
// separate short processes, several per event and run in parallel by the host (UserPromptSubmit
// runs hook-inject and hook-correction-detect together), so every change is a read-modify-write
// under a lock file, written temp + rename. A lock that cannot be had within LOCK_WAIT_MS is
// ignored (a lost update costs one reminder; a stuck hook would cost the user a prompt).
// The folder is machine-local scratch: it carries its own `.gitignore`.

export interface Correction {
  at: string;
  kind: 'correction' | 'convention';
  /** The user's sentence, at most 200 characters. */
  excerpt: string;
  /** The Stop hook has asked the agent to record it (it asks once per correction). */
  reminded?: boolean;
}

export interface HookSessionState {
  v: 1;
  session: string;
  host?: string;
  cwd?: string;
  started_at: string;
  updated_at: string;
  /** SessionStart count and the last `source` (startup, resume, clear, compact). */
  starts: number;
  source?: string;
  ended_at?: string;
  end_reason?: string;
  prompts: number;
  corrections: Correction[];
  learns: number;
  last_learn_at?: string;
  /** Recent tool_use_ids already counted as learns (two hooks may see the same call). */
  learn_calls?: string[];
  reverts: Array<{ at: string; what: string }>;
  /** Recent edits as hashes (file, old text, new text), to spot an edit that undoes an earlier one. */
  edits: Array<{ f: string; o: string; n: string }>;
}

const LOCK_WAIT_MS = 400;
const LOCK_STALE_MS = 5_000;
const MAX_CORRECTIONS = 20;
const MAX_REVERTS = 20;
const MAX_EDITS = 200;
const MAX_LEARN_CALLS = 20;
/** State files untouched this long are removed (at session start). */
const KEEP_MS = 14 * 24 * 60 * 60 * 1000;

export function stateDir(storeRoot: string): string {
  return join(storeRoot, 'sessions', 'hooks');
}

function statePath(storeRoot: string, key: string): string {
  return join(stateDir(storeRoot), `${key}.json`);
}

export function emptyState(key: string, now: Date): HookSessionState {
  const at = now.toISOString();
  return { v: 1, session: key, started_at: at, updated_at: at, starts: 0, prompts: 0, corrections: [], learns: 0, reverts: [], edits: [] };
}

/** Whether svc has seen this session before (a state file exists). */
export function hasState(storeRoot: string, key: string): boolean {
  return existsSync(statePath(storeRoot, key));
}

/** The session's state, or a fresh one when there is none (or it is unreadable). */
export function readState(storeRoot: string, key: string, now = new Date()): HookSessionState {
  try {
    const value = JSON.parse(readFileSync(statePath(storeRoot, key), 'utf8')) as HookSessionState;
    if (value && value.v === 1 && Array.isArray(value.corrections)) {
      value.reverts ??= [];
      value.edits ??= [];
      return value;
    }
  } catch {
    // missing or damaged: start over
  }
  return emptyState(key, now);
}

/**
 * Applies `change` to the session's state under its lock and saves it (unless `change` returns
 * false). Returns the new state, or undefined when the store folder cannot hold it.
 */
export function updateState(
  storeRoot: string,
  key: string,
  change: (state: HookSessionState) => void | boolean,
  now = new Date(),
): HookSessionState | undefined {
  if (!key) return undefined;
  const dir = stateDir(storeRoot);
  try {
    ensureDir(dir);
  } catch (err) {
    hookFailed(err);
    return undefined;
  }
  const release = lock(statePath(storeRoot, key) + '.lock');
  try {
    const state = readState(storeRoot, key, now);
    if (change(state) === false) return state;
    state.updated_at = now.toISOString();
    trim(state);
    writeFileDurable(statePath(storeRoot, key), `${JSON.stringify(state)}\n`);
    return state;
  } catch (err) {
    hookFailed(err);
    return undefined;
  } finally {
    release();
  }
}

function trim(state: HookSessionState): void {
  // Keep what is still pending: drop reminded corrections first, then the oldest.
  if (state.corrections.length > MAX_CORRECTIONS) {
    const open = state.corrections.filter((c) => !c.reminded);
    const done = state.corrections.filter((c) => c.reminded);
    state.corrections = [...done, ...open].slice(-MAX_CORRECTIONS).sort((a, b) => byCodeUnit(a.at, b.at));
  }
  state.reverts = state.reverts.slice(-MAX_REVERTS);
  state.edits = state.edits.slice(-MAX_EDITS);
  if (state.learn_calls) state.learn_calls = state.learn_calls.slice(-MAX_LEARN_CALLS);
}

function ensureDir(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, '.gitignore'), '# Machine-local hook scratch (svc): never committed.\n*\n');
}

/** Takes `path` as a lock file; returns its release. Waits briefly, steals stale locks, gives up quietly. */
function lock(path: string): () => void {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(path, 'wx'));
      return () => {
        try {
          unlinkSync(path);
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return () => {};
      try {
        if (Date.now() - statSync(path).mtimeMs > LOCK_STALE_MS) unlinkSync(path);
      } catch {
        /* released meanwhile */
      }
      if (Date.now() >= deadline) return () => {};
      sleepSync(10);
    }
  }
}

/** Removes state files (and dead locks) nobody touched for KEEP_MS. Cheap: one readdir. */
export function pruneStates(storeRoot: string, now = Date.now()): void {
  const dir = stateDir(storeRoot);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.endsWith('.json') && !name.endsWith('.lock')) continue;
    const path = join(dir, name);
    try {
      const age = now - statSync(path).mtimeMs;
      if (age > KEEP_MS || (name.endsWith('.lock') && age > LOCK_STALE_MS * 12)) unlinkSync(path);
    } catch {
      /* raced with another hook */
    }
  }
}

/** Corrections not yet followed by a learn and not yet reminded about. */
export function openCorrections(state: HookSessionState): Correction[] {
  return state.corrections.filter((c) => !c.reminded && !(state.last_learn_at && state.last_learn_at >= c.at));
}

/** Counts a learn (once per tool call id). */
export function markLearn(state: HookSessionState, at: string, callId?: string): boolean {
  if (callId) {
    state.learn_calls ??= [];
    if (state.learn_calls.includes(callId)) return false;
    state.learn_calls.push(callId);
  }
  state.learns += 1;
  state.last_learn_at = at;
  return true;
}
