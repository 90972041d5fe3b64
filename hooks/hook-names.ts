// Every `svc hook-*` command, in one list, with the time its host gives it: the dispatcher
// (bin/dispatch.mts) routes these names, the runner (handlers/run-hook.ts) maps each to its handler and
// stops it in time, and the installers (install/wiring.ts) write these names and timeouts. Kept
// free of imports so the dispatcher pays nothing to read it.

export const HOOK_NAMES = [
  'hook-inject',
  'hook-observe',
  'hook-learn-check',
  'hook-session-guard',
  'hook-session-mark',
  'hook-session-remind',
  'hook-correction-detect',
  'hook-revert-detect',
  'hook-cursor-session-start',
  'hook-cursor-prompt',
  'hook-cursor-after-edit',
  'hook-cursor-stop',
] as const;

export type HookName = (typeof HOOK_NAMES)[number];

/**
 * Seconds the host waits for each hook before it kills it (init writes these as `timeout`; Cursor
 * takes none, its values only bound svc's own work). The host's limit is the outer one: a hook
 * gives up HOOK_MARGIN_MS earlier and answers its harmless default, so the host never kills it.
 * hook-inject runs before every prompt, synchronously: its limit is short, and the dense leg
 * gives way to BM25 well within it (handlers/inject.ts).
 */
export const HOST_TIMEOUT_S: Readonly<Record<HookName, number>> = {
  'hook-inject': 10,
  'hook-observe': 15,
  'hook-learn-check': 30,
  'hook-session-guard': 15,
  'hook-session-mark': 15,
  'hook-session-remind': 15,
  'hook-correction-detect': 15,
  'hook-revert-detect': 15,
  'hook-cursor-session-start': 10,
  'hook-cursor-prompt': 10,
  'hook-cursor-after-edit': 10,
  'hook-cursor-stop': 10,
};

/** Node's start-up, the shim and the answer's write fit in this. */
export const HOOK_MARGIN_MS = 3000;

/** When a hook stops its own work: the host's limit less the margin. */
export function hookDeadlineMs(name: HookName): number {
  return HOST_TIMEOUT_S[name] * 1000 - HOOK_MARGIN_MS;
}
