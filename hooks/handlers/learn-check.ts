import { stopAnswer } from './host-adapters.js';
import { hostOf, sessionKey, storeReady, withStore, type HookEvent, type Host } from './io.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { openCorrections, readState, updateState, type Correction } from './session-state.js';
import { oneLine } from '../../engine/text.js';

// hook-learn-check — Claude Code and Codex CLI `Stop`.
//
// When the user corrected the agent (or stated a convention) during this session and nothing was
// learned since, asks the agent to record it before it stops (stopFeedback: as context where the
// host takes it, else `{"decision":"block","reason":...}`). Once per correction: the corrections named in a block are marked `reminded` and never
// cause another. A learn counts when the session state saw svc_learn (hook-observe or
// hook-session-mark on PostToolUse) or when the store shows an engram created, deduplicated or
// reactivated after the correction (a learn through the CLI or another client). With
// `stop_hook_active` (the agent is already continuing because of a Stop hook) it stays quiet and
// leaves the reminder for the next stop. Otherwise prints nothing.

export async function hookLearnCheck(e: HookEvent): Promise<string | undefined> {
  if (e.stop_hook_active === true) return undefined;
  const reason = await pendingReminder(e, hostOf(e));
  if (!reason) return undefined;
  const own = stopAnswer(hostOf(e), reason);
  return own ? JSON.stringify(own) : stopFeedback(reason);
}

/** Claude Code from this version takes a Stop hook's feedback as context, not as an error. */
const QUIET_STOP_SINCE: readonly number[] = [2, 1, 163];

/** The host's version, from the AI_AGENT variable it sets for hooks (`claude-code_2-1-197_harness`). */
export function claudeCodeVersion(env: NodeJS.ProcessEnv = process.env): number[] | undefined {
  const m = /^claude-code_(\d+)-(\d+)-(\d+)/.exec(env.AI_AGENT ?? '');
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/**
 * The quietest answer that still makes the agent act: `additionalContext` on Stop (the model
 * continues, nothing is shown as a hook error) where the host takes it, else `decision: block`,
 * which older versions show as "Stop hook error".
 */
export function stopFeedback(reason: string, env: NodeJS.ProcessEnv = process.env): string {
  const v = claudeCodeVersion(env);
  const quiet = v !== undefined && compareVersions(v, QUIET_STOP_SINCE) >= 0;
  return JSON.stringify(
    quiet ? { hookSpecificOutput: { hookEventName: 'Stop', additionalContext: reason } } : { decision: 'block', reason },
  );
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

/**
 * The reminder to send for corrections not yet recorded (marking them reminded), or undefined.
 * Shared with Cursor's stop hook, which sends it as a follow-up message.
 */
export async function pendingReminder(e: HookEvent, host: Host): Promise<string | undefined> {
  const key = sessionKey(e);
  const root = resolveStoreRoot();
  if (!key || !storeReady(root)) return undefined;
  const candidates = openCorrections(readState(root, key));
  if (candidates.length === 0) return undefined;
  const learnedAt = await lastStoreLearn(root);
  let due: Correction[] = [];
  updateState(root, key, (s) => {
    if (learnedAt && (!s.last_learn_at || learnedAt > s.last_learn_at)) s.last_learn_at = learnedAt;
    due = openCorrections(s);
    for (const c of due) c.reminded = true;
    return due.length > 0 || learnedAt !== undefined;
  });
  if (due.length === 0) return undefined;
  return reminderText(due, host);
}

function reminderText(due: Correction[], host: Host): string {
  const what = due.map((c) => `"${oneLine(c.excerpt, 120)}"`).join(', ');
  const kind = due.every((c) => c.kind === 'convention') ? 'stated a convention' : 'corrected you';
  // Claude Code's agent has a shell and the CLI on every machine; other hosts are told the tool.
  const tool = host === 'claude-code' ? 'svc_learn (CLI: svc learn "<statement>")' : 'the svc_learn tool';
  return (
    `svc: earlier in this session the user ${kind} (${what}) and nothing has been recorded since. ` +
    `Record the lesson now with ${tool} as one short, general statement; pass supersedes if it replaces an engram you were shown. ` +
    `If it is not worth keeping, say so in one line. Then stop.`
  );
}

/** When the newest engram was created, deduplicated or reactivated in the store; undefined if unknown. */
async function lastStoreLearn(root: string): Promise<string | undefined> {
  const events = await withStore(root, (store) => store.listEvents({ limit: 50 }));
  let newest: string | undefined;
  for (const ev of events ?? []) {
    if (ev.action !== 'created' && ev.action !== 'deduplicated' && ev.action !== 'reactivated') continue;
    if (!newest || ev.at > newest) newest = ev.at;
  }
  return newest;
}
