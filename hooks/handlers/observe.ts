import { isAbsolute, relative } from 'node:path';
import { contextOutput, eventName, hostOf, obj, projectDir, sessionId, sessionKey, storeReady, str, type HookEvent } from './io.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { editRecords, revertCommand, undoesEarlier, type EditRecord } from './revert.js';
import { markLearn, updateState } from './session-state.js';
import { captureEpisode, isLearnTool } from './session.js';
import { oneLine } from '../../engine/text.js';

// hook-observe — Claude Code `PostToolUse` (all tools). Keeps a short record of what the agent
// did: one episode per state-changing tool call ("Edit src/app.ts", "Ran: npm test"), with the
// session id, readable with `svc timeline`. Read-only tools (Read, Grep, Glob, web fetches, todo
// lists, svc's own tools) and read-only shell commands (ls, cat, git status/log/diff ...) are
// skipped; a summary that looks like it holds a secret is withheld. A svc_learn call is counted
// in the session state instead (hook-learn-check reads it). Prints nothing.
//
// hook-revert-detect — Claude Code `PostToolUse` on Bash, Edit and MultiEdit. Notices a change
// being thrown away: git revert, git checkout -- <file>, git restore, git reset --hard or
// HEAD~n, git clean -f, hg/svn revert, jj undo/restore/abandon, or an edit that puts back exactly
// what an earlier edit of the same file in this session replaced (edits are remembered as hashes
// in the session state). Then answers with additionalContext suggesting to record why, as the
// correction hook does; it never blocks. Otherwise prints nothing.

const READ_ONLY_TOOLS = new Set([
  'Read',
  'Grep',
  'Glob',
  'LS',
  'NotebookRead',
  'TodoWrite',
  'TodoRead',
  'WebSearch',
  'WebFetch',
  'BashOutput',
  'KillShell',
  'KillBash',
  'ExitPlanMode',
  'ListMcpResourcesTool',
  'ReadMcpResourceTool',
  'AskUserQuestion',
]);
const READ_ONLY_COMMAND =
  /^\s*(ls|ll|cat|head|tail|less|more|grep|rg|ag|find|fd|pwd|echo|printf|which|type|wc|tree|stat|file|du|df|env|date|whoami|true|cd)\b(?![^|;&]*[>])|^\s*git\s+(status|log|diff|show|branch|remote|rev-parse|blame|ls-files|describe|shortlog)\b(?![^|;&]*[>])/;

export async function hookObserve(e: HookEvent): Promise<string | undefined> {
  if (eventName(e) && eventName(e) !== 'PostToolUse') return undefined;
  const tool = str(e, 'tool_name');
  const key = sessionKey(e);
  const root = resolveStoreRoot();
  if (!tool || !storeReady(root)) return undefined;
  if (isLearnTool(e)) {
    if (key) updateState(root, key, (s) => markLearn(s, new Date().toISOString(), str(e, 'tool_use_id') || undefined));
    return undefined;
  }
  const summary = summarize(tool, obj(e, 'tool_input') ?? {}, projectDir(e));
  if (summary) await captureEpisode(root, summary, { session: sessionId(e), agent: hostOf(e) });
  return undefined;
}

/** One line saying what a tool call did, or undefined for calls not worth a record. */
export function summarize(tool: string, input: HookEvent, cwd: string): string | undefined {
  if (READ_ONLY_TOOLS.has(tool) || /(^|__)svc_\w+$/.test(tool)) return undefined;
  const file = shortPath(str(input, 'file_path') || str(input, 'notebook_path') || str(input, 'path'), cwd);
  switch (tool) {
    case 'Edit':
      return file ? `Edit ${file}` : undefined;
    case 'MultiEdit': {
      const n = Array.isArray(input.edits) ? input.edits.length : 0;
      return file ? `Edit ${file}${n > 1 ? ` (${n} changes)` : ''}` : undefined;
    }
    case 'Write':
      return file ? `Wrote ${file}` : undefined;
    case 'NotebookEdit':
      return file ? `Edit notebook ${file}` : undefined;
    case 'Bash':
    case 'Shell': {
      const command = str(input, 'command');
      if (!command || READ_ONLY_COMMAND.test(command)) return undefined;
      const description = str(input, 'description');
      return `Ran: ${oneLine(command, 200)}${description ? ` (${oneLine(description, 100)})` : ''}`;
    }
    case 'Task': {
      const description = str(input, 'description') || str(input, 'subagent_type');
      return `Subagent: ${oneLine(description || 'task', 160)}`;
    }
    default: {
      const args = Object.keys(input).length ? ` ${oneLine(JSON.stringify(input), 160)}` : '';
      return `${tool}${args}`;
    }
  }
}

function shortPath(path: string, cwd: string): string {
  if (!path || !cwd || !isAbsolute(path)) return path;
  const rel = relative(cwd, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

export async function hookRevertDetect(e: HookEvent): Promise<string | undefined> {
  if (eventName(e) && eventName(e) !== 'PostToolUse') return undefined;
  const tool = str(e, 'tool_name');
  const input = obj(e, 'tool_input') ?? {};
  let what: string | null = null;
  if (tool === 'Bash' || tool === 'Shell') {
    what = revertCommand(str(input, 'command'));
    if (what) await noteRevert(e, what);
  } else if (tool === 'Edit' || tool === 'MultiEdit') {
    const file = str(input, 'file_path');
    const edits = tool === 'Edit' ? [input] : Array.isArray(input.edits) ? (input.edits as HookEvent[]) : [];
    if (file && (await noteEdits(e, editRecords(file, edits))))
      what = `an edit of ${shortPath(file, projectDir(e))} that undoes an earlier one`;
  }
  if (!what) return undefined;
  return contextOutput('PostToolUse', revertMessage(what));
}

export function revertMessage(what: string): string {
  return (
    `svc: a change was just reverted (${what}). If it was thrown away because the approach was wrong or the user asked for it, ` +
    `record the lesson with svc_learn as one short statement (what to do instead next time). If it was routine, ignore this.`
  );
}

/** Remembers a revert in the session state. */
export async function noteRevert(e: HookEvent, what: string): Promise<void> {
  const key = sessionKey(e);
  const root = resolveStoreRoot();
  if (key && storeReady(root))
    updateState(root, key, (s) => void s.reverts.push({ at: new Date().toISOString(), what: oneLine(what, 200) }));
}

/** Remembers edits (as hashes); true when one of them undoes an earlier edit of this session. */
export async function noteEdits(e: HookEvent, records: EditRecord[]): Promise<boolean> {
  const key = sessionKey(e);
  const root = resolveStoreRoot();
  if (records.length === 0 || !key || !storeReady(root)) return false;
  let undone = false;
  updateState(root, key, (s) => {
    undone = records.some((r) => undoesEarlier(r, s.edits));
    s.edits.push(...records);
    if (undone) s.reverts.push({ at: new Date().toISOString(), what: `edit of ${records[0]!.f} undoing an earlier one` });
  });
  return undone;
}
