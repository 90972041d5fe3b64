import { existsSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from '../../engine/store/durable-write.js';
import { noteCorrection } from './correction-detect.js';
import { HEADER, injectFor, projectQuery } from './inject.js';
import { projectDir, sessionId, sessionKey, storeReady, str, type HookEvent } from './io.js';
import { terminalSafe } from '../../engine/text.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { pendingReminder } from './learn-check.js';
import { editRecords } from './revert.js';
import { noteEdits } from './observe.js';
import { captureEpisode, storeProblem } from './session.js';
import { updateState } from './session-state.js';
import { hookFailed } from './failure-log.js';

// The four Cursor handlers, wired in `.cursor/hooks.json` (version 1). Cursor's agent hooks
// read JSON on stdin with `conversation_id`, `generation_id`, `workspace_roots` (plus
// `hook_event_name`, `model`, `cursor_version`, `user_email`) and expect JSON on stdout; every
// handler always prints valid JSON, even when svc fails, and never blocks.
//
// hook-cursor-session-start — `sessionStart` (input adds `session_id`, `is_background_agent`,
// `composer_mode`). Does what the guard, mark, remind and inject hooks do at a Claude Code session
// start: opens (or creates) the store, starts the session state, writes the pinned and project
// engrams to the dynamic rules file (below) and answers `{"additional_context": "<Learning
// Protocol + those engrams>"}`, or a line saying memory is unavailable. (Cursor is reported to drop
// sessionStart's additional_context at times, hence the rules file as well.)
//
// hook-cursor-prompt — `beforeSubmitPrompt` (input adds `prompt`, `attachments`). Always answers
// `{"continue": true}`: a prompt is never held up. beforeSubmitPrompt has no context channel, so
// what hook-inject and hook-correction-detect would add goes into the dynamic rules file
// `<workspace>/.cursor/rules/svc-dynamic.mdc` (`alwaysApply: true`; only where `.cursor/` exists;
// removed when nothing applies, so stale memory never lingers). Corrections are recorded in the
// session state for the stop hook.
//
// hook-cursor-after-edit — `afterFileEdit` (input adds `file_path`, `edits: [{old_string,
// new_string}]`). Records the edit as an episode and remembers it (as hashes) to notice an edit
// that undoes an earlier one, which is noted in the session state. Answers `{}`.
//
// hook-cursor-stop — `stop` (input adds `status`: completed, aborted or error; `loop_count`).
// After a completed turn, when a correction of this conversation is still unrecorded, answers
// `{"followup_message": "..."}` (Cursor submits it as the next user message) asking to record it
// with svc_learn, once per correction; otherwise `{}`.

/** Matches `svc-dynamic*.mdc`, which `svc init --cursor` gitignores and its static rule tells the agent to read. */
export const CONTEXT_RULE = join('.cursor', 'rules', 'svc-dynamic.mdc');

export async function cursorSessionStart(e: HookEvent): Promise<string> {
  const problem = await storeProblem();
  if (problem?.agent) return JSON.stringify({ additional_context: `svc: ${problem.agent}` });
  const root = resolveStoreRoot();
  const key = sessionKey(e);
  if (key && storeReady(root)) {
    updateState(root, key, (s) => {
      s.starts += 1;
      s.host = 'cursor';
      s.cwd = projectDir(e) || s.cwd;
      s.source = str(e, 'composer_mode') || undefined;
    });
  }
  const engrams = await injectFor(projectQuery(projectDir(e)) || 'session start', { session: sessionId(e), host: 'cursor' });
  writeContextRule(projectDir(e), engrams ? `${HEADER}\n\n${engrams}` : undefined);
  const { LEARNING_PROTOCOL } = await import('../../engine/ops/inject.js');
  const parts = [LEARNING_PROTOCOL.replace('svc_learn (CLI: svc learn "<statement>")', 'the svc_learn tool')];
  if (engrams) parts.push(`${HEADER}\n\n${engrams}`);
  return JSON.stringify({ additional_context: terminalSafe(parts.join('\n\n')) });
}

export async function cursorPrompt(e: HookEvent): Promise<string> {
  const prompt = str(e, 'prompt');
  if (prompt) {
    const [engrams, correction] = await Promise.all([
      injectFor(prompt, { session: sessionId(e), host: 'cursor' }).catch((err: unknown) => void hookFailed(err)),
      noteCorrection(e).catch((err: unknown) => void hookFailed(err)),
    ]);
    const parts = [engrams ? `${HEADER}\n\n${engrams}` : '', correction ?? ''].filter(Boolean);
    writeContextRule(projectDir(e), parts.length ? parts.join('\n\n') : undefined);
  }
  return CONTINUE;
}

export const CONTINUE = JSON.stringify({ continue: true });

export async function cursorAfterEdit(e: HookEvent): Promise<string> {
  const file = str(e, 'file_path');
  const edits = Array.isArray(e.edits) ? (e.edits as HookEvent[]) : [];
  if (file) {
    const undone = await noteEdits(e, editRecords(file, edits));
    const root = resolveStoreRoot();
    if (storeReady(root)) {
      const n = edits.length;
      const summary = `Edit ${file}${n > 1 ? ` (${n} changes)` : ''}${undone ? ', undoing an earlier edit' : ''}`;
      await captureEpisode(root, summary, { session: sessionId(e), agent: 'cursor' });
    }
  }
  return '{}';
}

export async function cursorStop(e: HookEvent): Promise<string> {
  if (str(e, 'status') !== 'completed') return '{}';
  const reminder = await pendingReminder(e, 'cursor');
  return reminder ? JSON.stringify({ followup_message: reminder }) : '{}';
}

/**
 * Writes (or, with no content, removes) the dynamic rules file in the workspace, only where the
 * workspace has a `.cursor/` folder. Failures are ignored: the rule is a best-effort channel.
 */
export function writeContextRule(workspace: string, content: string | undefined): void {
  if (!workspace) return;
  try {
    if (!statSync(join(workspace, '.cursor')).isDirectory()) return;
    const path = join(workspace, CONTEXT_RULE);
    if (content === undefined) {
      if (existsSync(path)) unlinkSync(path);
      return;
    }
    mkdirSync(join(workspace, '.cursor', 'rules'), { recursive: true });
    writeFileDurable(
      path,
      `---\ndescription: svc memory for the current prompt (written by svc hooks on every prompt; do not edit)\nalwaysApply: true\n---\n\n${content}\n`,
    );
  } catch (err) {
    hookFailed(err);
  }
}
