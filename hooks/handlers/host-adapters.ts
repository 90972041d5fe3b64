import type { HostId } from '../hosts.js';

// One adapter per agent host, beside the handlers rather than copies of them. The handlers speak
// Claude Code's hook protocol: its event names (SessionStart, UserPromptSubmit, PostToolUse,
// Stop, PreCompact, SessionEnd), its snake_case fields (session_id, cwd, prompt, tool_name,
// tool_input, tool_response, stop_hook_active) and its answers. An adapter says only where its
// host differs: the names of its events, the names of its fields, and the shape of the two
// answers that carry something to the model (context for the request, a reason to go on at a
// stop). A host without an adapter is Claude Code's protocol as is. Cursor has handlers of its
// own (cursor.ts): its hooks take no context, so they answer through a rules file instead.

type Json = Record<string, unknown>;

export interface HostAdapter {
  /** The host's event name -> the Claude Code event the handlers know. */
  events?: Readonly<Record<string, string>>;
  /** The host's field name -> Claude Code's, applied to the event before any handler reads it. */
  fields?: Readonly<Record<string, string>>;
  /** The answer adding `text` to the model's context at `event` (a Claude Code event name). */
  context?: (event: string, text: string) => Json;
  /** The answer that makes the agent go on with `reason` instead of stopping. */
  stop?: (reason: string) => Json;
  /** The host's name of a built-in tool -> Claude Code's, where the tool takes the same input. */
  tools?: Readonly<Record<string, string>>;
  /** Undoes what the host itself added to a field (after the renames), so handlers see what the user wrote. */
  normalize?: (e: Json) => Json;
}

// Gemini CLI: its own event names and Claude Code's fields and context answer, under its own
// event name. At AfterAgent it continues on `decision: deny`, sending the reason as the next
// prompt. In `gemini -p` the SessionStart context is glued before the prompt as
// `<hook_context>…</hook_context>\n\n`, so BeforeAgent's `prompt` starts with it: stripped, so
// recall and correction detection read the user's words only. Its tools are renamed to Claude
// Code's, so observation and revert detection know its shell and edits, and svc's own tools.
const GEMINI_EVENTS: Readonly<Record<string, string>> = {
  BeforeAgent: 'UserPromptSubmit',
  AfterAgent: 'Stop',
  AfterTool: 'PostToolUse',
  PreCompress: 'PreCompact',
};
const GEMINI_NAMES = Object.fromEntries(Object.entries(GEMINI_EVENTS).map(([gemini, claude]) => [claude, gemini]));
// Its built-in tools take Claude Code's inputs (command, file_path, old_string, new_string).
const GEMINI_TOOLS: Readonly<Record<string, string>> = {
  run_shell_command: 'Bash',
  replace: 'Edit',
  write_file: 'Write',
  read_file: 'Read',
  read_many_files: 'Read',
  list_directory: 'LS',
  glob: 'Glob',
  grep_search: 'Grep',
  search_file_content: 'Grep',
  google_web_search: 'WebSearch',
  web_fetch: 'WebFetch',
  write_todos: 'TodoWrite',
  ask_user: 'AskUserQuestion',
  exit_plan_mode: 'ExitPlanMode',
  list_mcp_resources: 'ListMcpResourcesTool',
  read_mcp_resource: 'ReadMcpResourceTool',
};
/** An MCP tool (Gemini: `mcp_<server>_<tool>`, split unambiguously by its `mcp_context`) under Claude Code's name. */
function geminiMcpTool(e: Json): Json {
  const mcp = e.mcp_context as Json | undefined;
  const server = typeof mcp?.server_name === 'string' ? mcp.server_name : undefined;
  const tool = typeof mcp?.tool_name === 'string' ? mcp.tool_name : undefined;
  return server && tool ? { ...e, tool_name: `mcp__${server}__${tool}` } : e;
}
const GEMINI: HostAdapter = {
  events: GEMINI_EVENTS,
  tools: GEMINI_TOOLS,
  context: (event, text) => ({ hookSpecificOutput: { hookEventName: GEMINI_NAMES[event] ?? event, additionalContext: text } }),
  stop: (reason) => ({ decision: 'deny', reason }),
  normalize: (e) =>
    geminiMcpTool(typeof e.prompt === 'string' ? { ...e, prompt: e.prompt.replace(/^<hook_context>[\s\S]*?<\/hook_context>\n\n/, '') } : e),
};

export const HOST_ADAPTERS: Partial<Record<HostId, HostAdapter>> = {
  // Codex CLI takes Claude Code's events and answers; at Stop it continues on `decision: block`,
  // sending the reason to the model as the next prompt.
  codex: { stop: (reason) => ({ decision: 'block', reason }) },
  // opencode has no command hooks: svc's plugin (install/opencode-plugin.ts) sends Claude Code's
  // events and answers; at a stop it sends the reason of `decision: block` as the next prompt.
  opencode: { stop: (reason) => ({ decision: 'block', reason }) },
  // VS Code's agent hooks (Preview) run the commands of Claude Code's .claude/settings.json with
  // camelCase common fields, and want a stop's decision inside hookSpecificOutput. Its
  // UserPromptSubmit hook adds nothing to the request (svc's instructions block asks the agent to
  // call svc_inject instead). Documented by VS Code, not run here: there is no headless VS Code.
  vscode: {
    fields: { hookEventName: 'hook_event_name', sessionId: 'session_id' },
    stop: (reason) => ({ hookSpecificOutput: { hookEventName: 'Stop', decision: 'block', reason } }),
  },
  // GitHub Copilot CLI, wired with Claude Code's event names, sends Claude's fields, but reads
  // context only as a top-level `additionalContext` (it drops `hookSpecificOutput`), and goes on
  // at Stop on `decision: block`, sending the reason as the next prompt.
  copilot: {
    context: (_event, text) => ({ additionalContext: text }),
    stop: (reason) => ({ decision: 'block', reason }),
  },
  gemini: GEMINI,
};

/**
 * The host of an event whose command line names none: VS Code's events are the only ones with the
 * camelCase `hookEventName`; Cursor's carry `conversation_id`; the rest are Claude Code's.
 */
export function sniffHost(e: Json): HostId {
  if ('hookEventName' in e) return 'vscode';
  return 'conversation_id' in e || 'workspace_roots' in e || 'cursor_version' in e ? 'cursor' : 'claude-code';
}

/** The event with the host's field names and event name turned into Claude Code's. */
export function adaptEvent(host: HostId | undefined, e: Json): Json {
  const adapter = host ? HOST_ADAPTERS[host] : undefined;
  if (!adapter) return e;
  const out: Json = { ...e };
  for (const [from, to] of Object.entries(adapter.fields ?? {})) {
    if (from in e && !(to in e)) out[to] = e[from];
  }
  const name = typeof e.hook_event_name === 'string' ? e.hook_event_name : undefined;
  if (name && adapter.events?.[name]) out.hook_event_name = adapter.events[name];
  const tool = typeof e.tool_name === 'string' ? adapter.tools?.[e.tool_name] : undefined;
  if (tool) out.tool_name = tool;
  return adapter.normalize ? adapter.normalize(out) : out;
}

/** Claude Code's answer adding context (UserPromptSubmit, SessionStart, PostToolUse), or the host's. */
export function contextAnswer(host: HostId | undefined, event: string, text: string): Json {
  const own = host ? HOST_ADAPTERS[host]?.context : undefined;
  return own ? own(event, text) : { hookSpecificOutput: { hookEventName: event, additionalContext: text } };
}

/** The host's answer to go on at a stop; undefined when the host takes Claude Code's (learn-check.ts picks by version). */
export function stopAnswer(host: HostId | undefined, reason: string): Json | undefined {
  const own = host ? HOST_ADAPTERS[host]?.stop : undefined;
  return own?.(reason);
}

/**
 * Whether this run is a second copy of a svc hook that another copy answers, since hosts also load
 * other hosts' files. GitHub Copilot CLI runs Claude Code's .claude/settings.json beside its own
 * hooks (it sets COPILOT_CLI=1 for hooks; Claude Code names itself in AI_AGENT): there the copy
 * without `--host` stays quiet. VS Code runs both .claude/settings.json and Copilot's
 * .github/hooks/: its events (the camelCase `hookEventName`) are answered by the copy without
 * `--host`, and a copy naming another host stays quiet.
 */
export function isDuplicateCopy(host: HostId | undefined, e: Json, env: NodeJS.ProcessEnv = process.env): boolean {
  const fromVsCode = 'hookEventName' in e;
  if (host === undefined) return !fromVsCode && env.COPILOT_CLI === '1' && !/^claude-code/.test(env.AI_AGENT ?? '');
  return fromVsCode && host !== 'vscode';
}
