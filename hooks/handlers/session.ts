import {
  contextOutput,
  eventName,
  hostOf,
  obj,
  openStore,
  projectDir,
  sessionId,
  sessionKey,
  storeReady,
  str,
  withStore,
  type HookEvent,
} from './io.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { hasState, markLearn, openCorrections, pruneStates, readState, updateState } from './session-state.js';
import { oneLine } from '../../engine/text.js';
import { hookFailed } from './failure-log.js';

// The session bookkeeping hooks.
//
// hook-session-guard — Claude Code `SessionStart`. Opens the store (creating it on first use, as
// every svc command does) so that a broken one is found at the start rather than on the first
// prompt. When it cannot be opened, adds one line of context saying memory is unavailable this
// session (and shows the user why, as a `systemMessage`); quarantined engram files are reported
// to the user the same way. Prints nothing when all is well. Never fails.
//
// hook-session-mark — Claude Code `SessionStart`, `SessionEnd` (and `PostToolUse`, if wired
// there). Keeps the session state file: SessionStart counts the start and notes its `source` and
// folder, and prunes state files untouched for 14 days; SessionEnd (of a session it saw start)
// notes the end and its reason and, if corrections were never recorded, keeps them as an episode (`svc timeline`) so they
// are not lost with the session; PostToolUse counts a svc_learn call (as hook-observe does, once
// per tool call). Prints nothing.
//
// hook-session-remind — Claude Code `SessionStart` and `PreCompact`. At SessionStart (every
// `source`, so the protocol survives /clear and compaction) adds the Learning Protocol as context,
// plus any correction of this session still unrecorded (after a resume or compaction). At
// PreCompact prints plain text, which Claude Code passes to the compaction as custom
// instructions: keep unrecorded corrections and the engram ids in use.

export async function hookSessionGuard(e: HookEvent): Promise<string | undefined> {
  const name = eventName(e) || 'SessionStart';
  const problem = await storeProblem();
  if (!problem) return undefined;
  const systemMessage = `svc: ${problem.user}`;
  if (problem.agent && (name === 'SessionStart' || name === 'UserPromptSubmit')) {
    return contextOutput(name, `svc: ${problem.agent}`, { systemMessage });
  }
  return JSON.stringify({ systemMessage });
}

/** What is wrong with the store, for the agent and for the user; undefined when it opens cleanly. */
export async function storeProblem(): Promise<{ agent?: string; user: string } | undefined> {
  const root = resolveStoreRoot();
  try {
    const store = await openStore(root);
    const quarantined = store.warnings.filter((w) => w.startsWith('quarantined')).length;
    store.close();
    if (quarantined === 0) return undefined;
    return { user: `${quarantined} unreadable engram file(s) were moved to quarantine in ${root}; run "svc doctor".` };
  } catch (err) {
    hookFailed(err);
    const why = oneLine(err instanceof Error ? err.message : String(err), 160);
    return {
      agent: 'memory is unavailable this session (the store cannot be opened); svc_learn and recall will fail, carry on without them.',
      user: `memory is unavailable: ${why}. Run "svc doctor".`,
    };
  }
}

export async function hookSessionMark(e: HookEvent): Promise<string | undefined> {
  const key = sessionKey(e);
  const root = resolveStoreRoot();
  if (!key || !storeReady(root)) return undefined;
  const now = new Date();
  switch (eventName(e)) {
    case 'SessionStart': {
      updateState(
        root,
        key,
        (s) => {
          s.starts += 1;
          s.host ??= hostOf(e);
          s.source = str(e, 'source') || undefined;
          s.cwd = projectDir(e) || s.cwd;
          delete s.ended_at;
          delete s.end_reason;
        },
        now,
      );
      pruneStates(root, now.getTime());
      return undefined;
    }
    case 'SessionEnd': {
      // An end without a start (`claude mcp list` ends a session it never started) leaves nothing.
      if (!hasState(root, key)) return undefined;
      const state = updateState(
        root,
        key,
        (s) => {
          s.ended_at = now.toISOString();
          s.end_reason = str(e, 'reason') || undefined;
        },
        now,
      );
      const open = state ? openCorrections(state) : [];
      if (open.length > 0) {
        const summary = `Session ended with ${open.length} correction(s) never recorded as engrams: ${open.map((c) => `"${oneLine(c.excerpt, 200)}"`).join('; ')}`;
        await captureEpisode(root, summary, { session: sessionId(e), agent: hostOf(e) });
      }
      return undefined;
    }
    case 'PostToolUse':
      if (isLearnTool(e)) updateState(root, key, (s) => markLearn(s, now.toISOString(), str(e, 'tool_use_id') || undefined), now);
      return undefined;
    default:
      return undefined;
  }
}

export async function hookSessionRemind(e: HookEvent): Promise<string | undefined> {
  const name = eventName(e);
  if (name !== 'SessionStart' && name !== 'PreCompact') return undefined;
  const pending = await unrecorded(e);
  if (name === 'PreCompact') {
    const lines = [
      'When summarizing, keep verbatim any correction or convention the user stated that has not yet been recorded with svc_learn, and keep the ids (ENG-...) of svc engrams that were shown or used.',
    ];
    if (pending.length > 0) lines.push(`Not yet recorded: ${pending.join('; ')}.`);
    return lines.join('\n');
  }
  const { LEARNING_PROTOCOL } = await import('../../engine/ops/inject.js');
  let text = LEARNING_PROTOCOL;
  if (pending.length > 0) text += `\n- Still to record from earlier in this session: ${pending.join('; ')}.`;
  return contextOutput('SessionStart', text);
}

/** This session's corrections not yet recorded, quoted. */
async function unrecorded(e: HookEvent): Promise<string[]> {
  const key = sessionKey(e);
  const root = resolveStoreRoot();
  if (!key || !storeReady(root)) return [];
  return openCorrections(readState(root, key)).map((c) => `"${oneLine(c.excerpt, 160)}"`);
}

/**
 * svc_learn through MCP (Claude Code's mcp__svc__svc_learn, Gemini CLI's mcp_svc_svc_learn, any
 * server name) or `svc learn` in a shell (Gemini CLI's is run_shell_command).
 */
export function isLearnTool(e: HookEvent): boolean {
  const tool = str(e, 'tool_name');
  // Claude Code and Codex name MCP tools `mcp__svc__svc_learn`; GitHub Copilot CLI `svc-svc_learn`; Gemini CLI `mcp_svc_svc_learn`.
  if (/(^|__|-|^mcp_[A-Za-z0-9-]+_)svc_learn$/.test(tool)) return true;
  if (tool === 'Bash' || tool === 'Shell' || tool === 'bash' || tool === 'run_shell_command') {
    const command = str(obj(e, 'tool_input'), 'command') || str(e, 'command');
    return /(^|[;&|(]\s*|\s)(svc|npx svc)\s+learn\b/.test(command);
  }
  return false;
}

/** Records an episode; silently does nothing when the store or the episode log is unavailable. */
export async function captureEpisode(
  root: string,
  summary: string,
  who: { session?: string; agent: string; channel?: string },
): Promise<void> {
  await withStore(root, async (store) => {
    const { capture } = await import('../../engine/ops/episodes.js');
    const { findSecrets } = await import('../../engine/model/secret-guard.js');
    const safe =
      findSecrets(summary).length > 0 ? `${summary.split(':')[0]}: (details withheld: they look like they hold a secret)` : summary;
    await capture(
      store,
      { summary: oneLine(safe, 1000), agent: who.agent, channel: who.channel ?? 'hook', session: who.session },
      { now: () => new Date() },
    );
  });
}
