import { existsSync } from 'node:fs';
import { homedir, platform } from 'node:os';
import { join, resolve } from 'node:path';
import { codeFile } from '../../engine/package-info.js';
import { shellQuote } from '../../engine/text.js';
import { HOST_TIMEOUT_S, type HookName } from '../hook-names.js';
import type { HostId } from '../hosts.js';

// What `svc init` writes and `svc doctor` checks, in one place: the hook tables for each host,
// where each host keeps its settings, the shim, and how svc's own entries are recognised among
// the user's. Changing an event name or a hook here changes both the installer and the doctor.

// ------------------------------------------------------------------ hook tables

/**
 * Claude Code: settings.json `hooks` -> event -> matcher group -> `{type: "command", ...}`. Codex
 * CLI reads the same shape from its hooks.json.
 */
export interface ClaudeHookSpec {
  event: string;
  hook: HookName;
  /** Tool-name pattern for tool events (PostToolUse); omitted for events without matchers. */
  matcher?: string;
  /** Seconds before Claude Code cancels the hook (its default for command hooks is 600). */
  timeout: number;
  /** Run in the background: the turn does not wait; output arrives on the next turn. */
  async?: boolean;
}

const claude = (event: string, hook: HookName, matcher?: string): ClaudeHookSpec => ({
  event,
  hook,
  ...(matcher ? { matcher } : {}),
  timeout: HOST_TIMEOUT_S[hook],
});

// hook-inject runs synchronously: Claude Code hands an asynchronous hook's context to the model
// only with the next request, so the memory for a prompt would arrive one prompt late (and never
// in `claude -p`). It answers in ~0.2 s and gives way to BM25 within its limit.
export const CLAUDE_HOOKS: readonly ClaudeHookSpec[] = [
  claude('SessionStart', 'hook-session-guard'),
  claude('SessionStart', 'hook-session-remind'),
  claude('SessionStart', 'hook-session-mark'),
  claude('UserPromptSubmit', 'hook-inject'),
  claude('UserPromptSubmit', 'hook-correction-detect'),
  claude('PostToolUse', 'hook-observe', '*'),
  claude('PostToolUse', 'hook-revert-detect', '*'),
  claude('Stop', 'hook-learn-check'),
  claude('PreCompact', 'hook-session-remind'),
  claude('SessionEnd', 'hook-session-mark'),
];

/** `svc init --async-inject`: the spec's asynchronous install of hook-inject (90 s ceiling), memory one prompt late. */
export const ASYNC_INJECT = { timeout: 90, async: true } as const;

/** The hook table as installed, with hook-inject asynchronous when asked. */
export function claudeHooks(opts: { asyncInject?: boolean } = {}): ClaudeHookSpec[] {
  return CLAUDE_HOOKS.map((h) => (opts.asyncInject && h.hook === 'hook-inject' ? { ...h, ...ASYNC_INJECT } : h));
}

/**
 * Codex CLI: `.codex/hooks.json` (project) or `~/.codex/hooks.json`, in Claude Code's shape, and
 * the same event JSON and answers, so the same handlers serve it. Codex has no SessionEnd (the
 * session's corrections are still reminded at Stop) and nothing is wired on its compaction
 * events, whose answers it does not document. Each command names the host (`--host codex`).
 */
export const CODEX_HOOKS: readonly ClaudeHookSpec[] = CLAUDE_HOOKS.filter((h) => h.event !== 'SessionEnd' && h.event !== 'PreCompact');

/**
 * GitHub Copilot CLI: `.github/hooks/svc.json` (project) or `~/.copilot/hooks/svc.json`, in Claude
 * Code's shape, which Copilot takes as is: PascalCase events switch its event JSON to Claude's
 * snake_case fields, and `timeout` is in seconds. Its matcher is a regular expression (anchored),
 * so "all tools" is `.*`, not `*`. PreCompact is not wired: what Copilot does with its answer is
 * not known. Its answers differ from Claude's (handlers/host-adapters.ts).
 */
export const COPILOT_HOOKS: readonly ClaudeHookSpec[] = CLAUDE_HOOKS.filter((h) => h.event !== 'PreCompact').map((h) =>
  h.matcher === '*' ? { ...h, matcher: '.*' } : h,
);

/**
 * opencode: no command hooks. svc's plugin (.opencode/plugin/svc.js, opencode-plugin.ts) sends
 * Claude Code's events to these hooks from its plugin hooks (PreCompact from its compaction hook);
 * opencode has no event when a session ends.
 */
export const OPENCODE_HOOKS: readonly ClaudeHookSpec[] = CLAUDE_HOOKS.filter((h) => h.event !== 'SessionEnd');

/**
 * Gemini CLI: settings.json `hooks`, Claude Code's shape under its own event names, with timeouts
 * in milliseconds. Nothing on PreCompress, whose answer it only shows; each command names the
 * host (`--host gemini`), whose adapter maps the events back (handlers/host-adapters.ts).
 */
const GEMINI_EVENT: Readonly<Record<string, string>> = {
  SessionStart: 'SessionStart',
  UserPromptSubmit: 'BeforeAgent',
  PostToolUse: 'AfterTool',
  Stop: 'AfterAgent',
  SessionEnd: 'SessionEnd',
};
export const GEMINI_HOOKS: readonly ClaudeHookSpec[] = CLAUDE_HOOKS.filter((h) => h.event in GEMINI_EVENT).map((h) => ({
  ...h,
  event: GEMINI_EVENT[h.event]!,
  timeout: h.timeout * 1000,
}));

/** Cursor: `.cursor/hooks.json` `{version: 1, hooks: {eventName: [{command}]}}`. */
export interface CursorHookSpec {
  event: string;
  hook: HookName;
}

export const CURSOR_HOOKS: readonly CursorHookSpec[] = [
  { event: 'sessionStart', hook: 'hook-cursor-session-start' },
  { event: 'beforeSubmitPrompt', hook: 'hook-cursor-prompt' },
  { event: 'afterFileEdit', hook: 'hook-cursor-after-edit' },
  { event: 'stop', hook: 'hook-cursor-stop' },
];

/** The key under `mcpServers` that is svc's in every host's config. */
export const MCP_SERVER_KEY = 'svc';
export const CURSOR_MCP_ENV = { SVC_TOOL_PROFILE: 'lean' } as const;

/** Dynamic rules files written at run time by the Cursor hooks: never committed. */
export const CURSOR_DYNAMIC_RULES_GLOB = '.cursor/rules/svc-dynamic*.mdc';
export const CURSOR_STATIC_RULES = join('.cursor', 'rules', 'svc.mdc');

// ------------------------------------------------------------------ paths

/** The compiled entry point of this install. */
export function thisCliPath(): string {
  return codeFile('bin/svc.js');
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

/**
 * Codex CLI: the project's `.codex/` (loaded only once the person trusts the project in Codex) or
 * `~/.codex/` with --global; `userConfig` is always `~/.codex/config.toml`, where Codex keeps the
 * hashes of the hooks the person trusted.
 */
export function codexPaths(
  scope: 'project' | 'global',
  cwd: string,
  home = homedir(),
): { dir: string; hooks: string; config: string; userConfig: string } {
  const dir = scope === 'project' ? join(cwd, '.codex') : join(home, '.codex');
  return { dir, hooks: join(dir, 'hooks.json'), config: join(dir, 'config.toml'), userConfig: join(home, '.codex', 'config.toml') };
}

/**
 * opencode: `opencode.json` at the project's root (or its `opencode.jsonc` when that is the one
 * there) and svc's plugin in `.opencode/plugin/`; with --global, both in ~/.config/opencode/
 * (XDG_CONFIG_HOME is honoured, as opencode does). `dir` is the folder that says opencode is used.
 */
export function opencodePaths(
  scope: 'project' | 'global',
  cwd: string,
  home = homedir(),
  env: NodeJS.ProcessEnv = process.env,
): { dir: string; config: string; plugin: string } {
  const dir =
    scope === 'project'
      ? join(cwd, '.opencode')
      : join(env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(home, '.config'), 'opencode');
  const configDir = scope === 'project' ? cwd : dir;
  const json = join(configDir, 'opencode.json');
  const jsonc = join(configDir, 'opencode.jsonc');
  return { dir, config: !existsSync(json) && existsSync(jsonc) ? jsonc : json, plugin: join(dir, 'plugin', 'svc.js') };
}

/** VS Code's user folder (its user-profile mcp.json and prompts/ live there) for this platform. */
export function vscodeUserDir(home = homedir(), env: NodeJS.ProcessEnv = process.env): string {
  switch (platform()) {
    case 'darwin':
      return join(home, 'Library', 'Application Support', 'Code', 'User');
    case 'win32':
      return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'Code', 'User');
    default:
      return join(env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(home, '.config'), 'Code', 'User');
  }
}

/**
 * VS Code: the workspace's `.vscode/mcp.json` and the instructions its agent reads on every
 * request (`.github/copilot-instructions.md`); with --global, the user profile's mcp.json and an
 * instructions file of svc's own in its prompts/ folder.
 */
export function vscodePaths(
  scope: 'project' | 'global',
  cwd: string,
  home = homedir(),
): { dir: string; mcp: string; instructions: string } {
  if (scope === 'project') {
    return {
      dir: join(cwd, '.vscode'),
      mcp: join(cwd, '.vscode', 'mcp.json'),
      instructions: join(cwd, '.github', 'copilot-instructions.md'),
    };
  }
  const dir = vscodeUserDir(home);
  return { dir, mcp: join(dir, 'mcp.json'), instructions: join(dir, 'prompts', 'svc.instructions.md') };
}

/**
 * GitHub Copilot CLI: svc's hooks file and MCP config, in the project's `.github/` or, with
 * --global, in `~/.copilot/`; `userConfig` is `~/.copilot/config.json`, where Copilot keeps the
 * folders the person trusted. In a project, Copilot reads `.mcp.json` (Claude Code's, which svc
 * also writes) and only without one `.github/mcp.json`: svc writes its entry to both.
 */
export function copilotPaths(
  scope: 'project' | 'global',
  cwd: string,
  home = homedir(),
): { dir: string; hooks: string; mcp: string; sharedMcp?: string; userConfig: string } {
  const userConfig = join(home, '.copilot', 'config.json');
  return scope === 'project'
    ? {
        dir: join(cwd, '.github', 'hooks'),
        hooks: join(cwd, '.github', 'hooks', 'svc.json'),
        mcp: join(cwd, '.github', 'mcp.json'),
        sharedMcp: join(cwd, '.mcp.json'),
        userConfig,
      }
    : {
        dir: join(home, '.copilot'),
        hooks: join(home, '.copilot', 'hooks', 'svc.json'),
        mcp: join(home, '.copilot', 'mcp-config.json'),
        userConfig,
      };
}

/**
 * Gemini CLI: the project's `.gemini/settings.json` (read only in a folder the person trusted) or
 * the user's with --global; `trustedFolders` is the person's own list of trusted folders, which svc
 * reads and never writes. The user's folder is under $GEMINI_CLI_HOME when set, as Gemini CLI has it.
 */
export function geminiPaths(
  scope: 'project' | 'global',
  cwd: string,
  home = homedir(),
  env: NodeJS.ProcessEnv = process.env,
): { dir: string; settings: string; trustedFolders: string } {
  const user = join(env.GEMINI_CLI_HOME || home, '.gemini');
  const dir = scope === 'project' ? join(cwd, '.gemini') : user;
  return { dir, settings: join(dir, 'settings.json'), trustedFolders: join(user, 'trustedFolders.json') };
}

// ------------------------------------------------------------------ commands and recognition

/**
 * The shim as the hosts' files name it: under $HOME, so a project file committed with it works on
 * every teammate's machine (each runs `svc init` once for their own shim). Claude Code runs hook
 * commands through a shell and expands ${HOME} in .mcp.json.
 */
export const SHIM_FROM_HOME = '.svc/bin/svc-hook';

/**
 * The command a host runs for one hook: the shim through $HOME, then the hook name and, for hosts
 * whose events do not say who sent them, `--host <id>`.
 */
export function hookCommand(hook: HookName, host?: HostId): string {
  return `"$HOME/${SHIM_FROM_HOME}" ${hook}${host ? ` --host ${host}` : ''}`;
}

/** `$HOME` and `${HOME}` in a command as the host's shell would expand them. */
export function expandHomeVariable(text: string, home = homedir()): string {
  return text.replace(/\$\{HOME\}|\$HOME\b/g, home);
}

const SHIM_WORD = /(^|[\s/'"])svc-hook(?=$|[\s'"])/;
// Older installs called svc itself: `svc hook-inject`, `npx svc hook-inject`, `node …/dist/bin/svc.js hook-inject`.
const LEGACY = [/(^|[\s/'"])svc(\.js|\.cmd)?['"]?\s+hook-[a-z-]+/, /dist\/(tui\/cli|bin\/svc)\.js['"]?\s+hook-[a-z-]+/];

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

/** The hosts whose MCP entry svc writes. */
export type McpHost = 'claude-code' | 'cursor' | 'codex' | 'copilot' | 'vscode' | 'gemini' | 'desktop';

export interface McpEntry {
  type?: 'stdio';
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** Claude Code waits for this server before its first model request, `claude -p` included. */
  alwaysLoad?: boolean;
  /** GitHub Copilot CLI: which of the server's tools the agent gets (`*`: all). */
  tools?: string[];
  /** Codex CLI: variables of its own environment to pass on to the server. */
  env_vars?: string[];
  /** Gemini CLI: calls need no confirmation (and `gemini -p` lists the tools at all). */
  trust?: boolean;
}

/**
 * svc's MCP server entry for each host: always the shim with `mcp` (so moving the install only
 * needs `svc init` again, and the shim carries the store). Claude Code's names the shim through
 * ${HOME}, which it expands; Cursor's starts it through `sh`, which expands $HOME on any machine;
 * Claude Desktop's config is this machine's own file and names the shim's absolute path.
 */
export function mcpEntry(host: McpHost, home = homedir()): McpEntry {
  switch (host) {
    case 'claude-code':
      // alwaysLoad: in print mode Claude Code sends its first request with only the tools of the
      // servers that answered by then; with it, it waits for svc (at most MCP_CONNECT_TIMEOUT_MS).
      return { type: 'stdio', command: `\${HOME}/${SHIM_FROM_HOME}`, args: ['mcp'], alwaysLoad: true };
    case 'cursor':
      return { command: 'sh', args: ['-c', `exec "$HOME/${SHIM_FROM_HOME}" mcp`], env: { ...CURSOR_MCP_ENV } };
    case 'codex':
      // Codex starts the command itself (no shell, no $HOME expansion): sh expands it. It hands an
      // MCP server only a few variables of its environment: these two are forwarded by name, so
      // the server uses the store and embedding setting the hooks use.
      return { command: 'sh', args: ['-c', `exec "$HOME/${SHIM_FROM_HOME}" mcp`], env_vars: ['SVC_PATH', 'SVC_EMBED'] };
    case 'vscode':
      return { type: 'stdio', command: 'sh', args: ['-c', `exec "$HOME/${SHIM_FROM_HOME}" mcp`] };
    case 'copilot':
      // Codex's form: sh expands $HOME, whatever the host does with a command's variables.
      return { type: 'stdio', command: 'sh', args: ['-c', `exec "$HOME/${SHIM_FROM_HOME}" mcp`], tools: ['*'] };
    case 'gemini':
      // Gemini CLI expands $HOME in its settings before it starts the command.
      return { command: `$HOME/${SHIM_FROM_HOME}`, args: ['mcp'] };
    case 'desktop':
      return { command: shimPath(home), args: ['mcp'] };
  }
}

/**
 * opencode's `mcp.svc`: a local server whose command is one array, started without a shell (sh
 * expands $HOME). `timeout` (ms) bounds every tool call too; opencode's default, 5 s, is less than
 * svc's first dense search can take while it loads the embedding model.
 */
export function opencodeMcpEntry(): { type: 'local'; command: string[]; enabled: true; timeout: number } {
  const { command, args } = mcpEntry('codex');
  return { type: 'local', command: [command, ...args], enabled: true, timeout: 30_000 };
}

/** Whether an entry is exactly what `svc init` writes for `host` now (older ones named this machine's paths). */
export function isCurrentMcpEntry(entry: unknown, host: McpHost, home = homedir()): boolean {
  if (typeof entry !== 'object' || entry === null) return false;
  const want = mcpEntry(host, home);
  const e = entry as Record<string, unknown>;
  return (
    e.command === want.command &&
    JSON.stringify(e.args) === JSON.stringify(want.args) &&
    (want.alwaysLoad === undefined || e.alwaysLoad === want.alwaysLoad)
  );
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
    '# Hooks run on every prompt, and Node reads NODE_EXTRA_CA_CERTS at every start (0.1 s with a',
    '# system bundle): a hook hands it to svc, which reads it only to reach a hub over https.',
    'case "$1" in hook-*) if [ -n "$NODE_EXTRA_CA_CERTS" ] && [ -z "$SVC_EXTRA_CA_CERTS" ]; then',
    '  SVC_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS; export SVC_EXTRA_CA_CERTS; unset NODE_EXTRA_CA_CERTS',
    'fi ;; esac',
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

/** Splits the simple sh words `shellQuote` produces (bare, single- or double-quoted without escapes). */
function shellWords(text: string): string[] {
  const words: string[] = [];
  const re = /\s*((?:'[^']*'|"[^"]*"|\\'|[^\s'"\\])+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    words.push(
      m[1]!.replace(/'([^']*)'|"([^"]*)"|\\'/g, (all, single?: string, double?: string) =>
        all === "\\'" ? "'" : (single ?? double ?? ''),
      ),
    );
  }
  return words;
}
