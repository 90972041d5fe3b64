import { homedir, platform } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// What `svc init` writes and `svc doctor` checks, in one place: the hook tables for each host,
// where each host keeps its settings, the shim, and how svc's own entries are recognised among
// the user's. Changing an event name or a hook here changes both the installer and the doctor.

// ------------------------------------------------------------------ hook tables

/** Claude Code: settings.json `hooks` -> event -> matcher group -> `{type: "command", ...}`. */
export interface ClaudeHookSpec {
  event: string;
  hook: string;
  /** Tool-name pattern for tool events (PostToolUse); omitted for events without matchers. */
  matcher?: string;
  /** Seconds before Claude Code cancels the hook (its default for command hooks is 600). */
  timeout: number;
  /** Run in the background: the turn does not wait; output arrives on the next turn. */
  async?: boolean;
}

export const CLAUDE_HOOKS: readonly ClaudeHookSpec[] = [
  { event: 'SessionStart', hook: 'hook-session-guard', timeout: 15 },
  { event: 'SessionStart', hook: 'hook-session-remind', timeout: 15 },
  { event: 'SessionStart', hook: 'hook-session-mark', timeout: 15 },
  // The prompt-time injection: asynchronous, 90 s ceiling (spec/cli.md, init and Limits).
  { event: 'UserPromptSubmit', hook: 'hook-inject', timeout: 90, async: true },
  { event: 'UserPromptSubmit', hook: 'hook-correction-detect', timeout: 15 },
  { event: 'PostToolUse', hook: 'hook-observe', matcher: '*', timeout: 15 },
  { event: 'PostToolUse', hook: 'hook-revert-detect', matcher: '*', timeout: 15 },
  { event: 'Stop', hook: 'hook-learn-check', timeout: 30 },
  { event: 'PreCompact', hook: 'hook-session-remind', timeout: 15 },
  { event: 'SessionEnd', hook: 'hook-session-mark', timeout: 15 },
];

/** Cursor: `.cursor/hooks.json` `{version: 1, hooks: {eventName: [{command}]}}`. */
export interface CursorHookSpec {
  event: string;
  hook: string;
}

export const CURSOR_HOOKS: readonly CursorHookSpec[] = [
  { event: 'sessionStart', hook: 'hook-cursor-session-start' },
  { event: 'beforeSubmitPrompt', hook: 'hook-cursor-prompt' },
  { event: 'afterFileEdit', hook: 'hook-cursor-after-edit' },
  { event: 'stop', hook: 'hook-cursor-stop' },
];

/** The key under `mcpServers` that is svc's in every host's config. */
export const MCP_SERVER_KEY = 'svc';
/** Tools the lean profile (`SVC_TOOL_PROFILE=lean`) exposes; Cursor gets this profile. */
export const LEAN_TOOL_COUNT = 11;
export const CURSOR_MCP_ENV = { SVC_TOOL_PROFILE: 'lean' } as const;

/** Dynamic rules files written at run time by the Cursor hooks: never committed. */
export const CURSOR_DYNAMIC_RULES_GLOB = '.cursor/rules/svc-dynamic*.mdc';
export const CURSOR_STATIC_RULES = join('.cursor', 'rules', 'svc.mdc');

// ------------------------------------------------------------------ paths

/** The compiled entry point of this install (this file is dist/hooks/install/wiring.js). */
export function thisCliPath(): string {
  return fileURLToPath(new URL('../../tui/cli.js', import.meta.url));
}

/** `~/.svc/bin/svc-hook`: always under the home folder, whatever SVC_PATH says. */
export function shimPath(home = homedir()): string {
  return join(home, '.svc', 'bin', 'svc-hook');
}

export interface HostPaths {
  /** Claude Code settings with the hooks: project `.claude/settings.json` or `~/.claude/settings.json`. */
  claudeSettings: string;
  /** Claude Code MCP registration: project `.mcp.json` or user-scope `~/.claude.json`. */
  claudeMcp: string;
}

export function claudePaths(scope: 'project' | 'global', cwd: string, home = homedir()): HostPaths {
  return scope === 'project'
    ? { claudeSettings: join(cwd, '.claude', 'settings.json'), claudeMcp: join(cwd, '.mcp.json') }
    : { claudeSettings: join(home, '.claude', 'settings.json'), claudeMcp: join(home, '.claude.json') };
}

/** The desktop assistant's config folder for this platform (the app creates it on first start). */
export function desktopConfigDir(home = homedir(), env: NodeJS.ProcessEnv = process.env): string {
  switch (platform()) {
    case 'darwin':
      return join(home, 'Library', 'Application Support', 'Claude');
    case 'win32':
      return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'Claude');
    default:
      return join(env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(home, '.config'), 'Claude');
  }
}

export function desktopConfigPath(home = homedir(), env: NodeJS.ProcessEnv = process.env): string {
  return join(desktopConfigDir(home, env), 'claude_desktop_config.json');
}

export function cursorPaths(cwd: string): { dir: string; mcp: string; hooks: string; rules: string; gitignore: string } {
  return {
    dir: join(cwd, '.cursor'),
    mcp: join(cwd, '.cursor', 'mcp.json'),
    hooks: join(cwd, '.cursor', 'hooks.json'),
    rules: join(cwd, CURSOR_STATIC_RULES),
    gitignore: join(cwd, '.gitignore'),
  };
}

// ------------------------------------------------------------------ commands and recognition

/** Quotes a word for sh when it needs it. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_/.:@%+=,~-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The command a host runs for one hook: the shim by absolute path, then the hook name. */
export function hookCommand(hook: string, home = homedir()): string {
  return `${shellQuote(shimPath(home))} ${hook}`;
}

const SHIM_WORD = /(^|[\s/'"])svc-hook(?=$|[\s'"])/;
// Older installs called svc itself: `svc hook-inject`, `npx svc hook-inject`, `node …/dist/tui/cli.js hook-inject`.
const LEGACY = [/(^|[\s/'"])svc(\.js|\.cmd)?['"]?\s+hook-[a-z-]+/, /dist\/tui\/cli\.js['"]?\s+hook-[a-z-]+/];

/** Whether a hook command is one svc installed (this install or an older one). */
export function isSvcHookCommand(command: unknown): boolean {
  if (typeof command !== 'string') return false;
  return SHIM_WORD.test(command) || LEGACY.some((re) => re.test(command));
}

/** Whether the command calls through a shim (any home) rather than an older direct form. */
export function usesShim(command: string): boolean {
  return SHIM_WORD.test(command);
}

/** Whether `command` runs `hook` (the hook name as a whole word). */
export function runsHook(command: string, hook: string): boolean {
  return new RegExp(`(^|\\s)${hook.replace(/-/g, '\\-')}(?=$|\\s)`).test(command);
}

// ------------------------------------------------------------------ the MCP server entry

export interface McpEntry {
  type?: 'stdio';
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/**
 * svc's MCP server entry: the shim with `mcp` (so moving the install only needs `svc init`
 * again), SVC_PATH in env only when the user set one, plus host-specific env (Cursor: lean).
 */
export function mcpEntry(opts: { home?: string; storePath?: string; extraEnv?: Record<string, string>; stdioType?: boolean }): McpEntry {
  const env: Record<string, string> = { ...(opts.extraEnv ?? {}) };
  if (opts.storePath) env.SVC_PATH = opts.storePath;
  const entry: McpEntry = opts.stdioType ? { type: 'stdio', command: shimPath(opts.home), args: ['mcp'] } : { command: shimPath(opts.home), args: ['mcp'] };
  if (Object.keys(env).length > 0) entry.env = env;
  return entry;
}

// ------------------------------------------------------------------ the shim

export function shimScript(nodePath: string, cliPath: string, storePath?: string): string {
  return [
    '#!/bin/sh',
    '# svc hook shim, written by `svc init`. Agent hosts call it for hooks and the MCP server.',
    '# If svc moves or Node is upgraded, run `svc init` again to rewrite it.',
    // The store chosen at init (SVC_PATH) is the default for hooks too, so hooks and the MCP
    // server use one store; an SVC_PATH in the host's environment still wins.
    ...(storePath ? [`[ -n "$SVC_PATH" ] || SVC_PATH=${shellQuote(storePath)}`, 'export SVC_PATH'] : []),
    `exec ${shellQuote(nodePath)} ${shellQuote(cliPath)} "$@"`,
    '',
  ].join('\n');
}

/** The SVC_PATH default a shim carries, if any. */
export function shimStorePath(text: string): string | undefined {
  const m = /^\[ -n "\$SVC_PATH" \] \|\| SVC_PATH=(.+)$/m.exec(text);
  return m ? shellWords(m[1]!)[0] : undefined;
}

/** Reads back the node and cli.js paths of a shim written by `shimScript`. */
export function parseShim(text: string): { node: string; cli: string } | null {
  const line = text.split('\n').find((l) => l.startsWith('exec '));
  if (!line) return null;
  const words = shellWords(line.slice(5));
  if (words.length < 2) return null;
  return { node: words[0]!, cli: words[1]! };
}

/** Splits the simple sh words `shellQuote` produces (bare or single-quoted). */
function shellWords(text: string): string[] {
  const words: string[] = [];
  const re = /\s*((?:'[^']*'|\\'|[^\s'\\])+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    words.push(m[1]!.replace(/'([^']*)'|\\'/g, (all, inner: string | undefined) => (all === "\\'" ? "'" : inner ?? '')));
  }
  return words;
}
