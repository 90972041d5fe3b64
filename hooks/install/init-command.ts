import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { invalid } from '../../engine/errors.js';
import { checkScope } from '../../engine/model/scope.js';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { applyPlan, formatJson, readJsonObject, readTextOrNull, withGitignoreLine, type PlannedFile } from './config-files.js';
import { svcHooksInFile, withClaudeHooks, withCursorHooks, withMcpApproval, withMcpServer } from './host-config.js';
import { claudeLocalSettings, isTrusted } from './claude-state.js';
import { svcYamlWith } from './dot-svc-yaml.js';
import { CURSOR_STATIC_RULES_TEXT } from './cursor-rules.js';
import { HOSTS } from '../hosts.js';
import { OPTIONAL_HOSTS } from './optional-hosts.js';
import { projectRootOf } from '../../engine/ops/host-memory.js';
import {
  CLAUDE_HOOKS,
  CURSOR_DYNAMIC_RULES_GLOB,
  CURSOR_HOOKS,
  MCP_SERVER_KEY,
  claudePaths,
  cursorPaths,
  desktopConfigDir,
  desktopConfigPath,
  mcpEntry,
  shimPath,
  shimScript,
  thisCliPath,
} from './wiring.js';

const HELP = `
  Usage
    svc init [flags]

  Wires svc into the agent host (Claude Code), the desktop assistant (Claude Desktop) and, when
  asked or when its folder exists here, each other host below (its folder in the home with
  --global). Safe to re-run: it replaces only its own entries and keeps everything else in those
  files, comments included.

  Flags
    --project          hooks in ./.claude/settings.json, MCP server in ./.mcp.json (default)
    --global           hooks in ~/.claude/settings.json, MCP server in ~/.claude.json (all projects)
    --no-desktop       do not register in the desktop assistant's config
    --scope <s>        write scope into ./.svc.yaml (other keys kept)
    --domain <d>       write domain into ./.svc.yaml (other keys kept)
    --cursor           set up Cursor here (.cursor/mcp.json, hooks.json, rules)
    --no-cursor        skip Cursor even when .cursor/ exists
${OPTIONAL_HOSTS.map((h) => `    --${h.flag.padEnd(17)}${h.help}\n`).join('')}    --no-<host>        skip that host even when its folder exists
    --no-approve       leave approvals to the hosts' own prompts: Claude Code's for the project's
                       MCP server, Codex CLI's review of new hooks (and other hosts' approvals)
    --async-inject     run hook-inject in the background (90 s ceiling): memory arrives one
                       prompt late, and never in claude -p

  The project files name the shim through $HOME, not this machine's paths, so they can be
  committed: each teammate runs svc init once. Init approves the svc server for you in
  .claude/settings.local.json (machine-local, gitignored) and says what Claude Code still needs.
  Init does not repair storage: run svc doctor.`;

export interface InitSummary {
  scope: 'project' | 'global';
  cwd: string;
  files: { path: string; role: string; status: string }[];
  written: string[];
  skipped: { what: string; reason: string }[];
  notes: string[];
}

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    global: { type: 'boolean' },
    project: { type: 'boolean' },
    desktop: { type: 'boolean' },
    domain: { type: 'string' },
    scope: { type: 'string' },
    cursor: { type: 'boolean' },
    ...Object.fromEntries(OPTIONAL_HOSTS.map((h) => [h.flag, { type: 'boolean' as const }])),
    approve: { type: 'boolean' },
    asyncInject: { type: 'boolean' },
  });
  const out = makeOutput(cli.flags);
  const f = cli.flags;
  if (cli.input.length > 0) throw invalid(`svc init takes no arguments (got "${cli.input.join(' ')}")`);
  if (f.global && f.project) throw invalid('--global and --project exclude each other');
  if (f.scope !== undefined) {
    const problem = checkScope(f.scope.trim());
    if (problem) throw invalid(`--${problem}`);
  }
  if (f.domain !== undefined && (f.domain.trim() === '' || /\s/.test(f.domain.trim()))) {
    throw invalid(`--domain must be a non-empty word without spaces (got "${f.domain}")`);
  }

  const home = homedir();
  const cwd = process.cwd();
  const scope: 'project' | 'global' = f.global ? 'global' : 'project';
  const storePath = f.path ?? process.env.SVC_PATH;
  const ctx: PlanContext = {
    home,
    cwd,
    scope,
    storePath: storePath ? resolve(storePath) : undefined,
    desktop: f.desktop !== false,
    cursor: f.cursor === true || (f.cursor !== false && isDir(join(cwd, '.cursor'))),
    cursorAuto: f.cursor === undefined,
    optional: OPTIONAL_HOSTS.map((h) => {
      const flag = (f as Record<string, unknown>)[h.flag];
      return { host: h, on: flag === true || (flag !== false && isDir(h.dir(scope, cwd, home))), auto: flag === undefined };
    }),
    svcYaml: { scope: f.scope?.trim(), domain: f.domain?.trim() },
    approve: f.approve !== false,
    asyncInject: f.asyncInject === true,
  };

  // Every file is read and checked before anything is written: a malformed one stops the run
  // with every file as it was.
  const plan = await planInit(ctx);
  const written = applyPlan(plan.files);
  const summary: InitSummary = {
    scope,
    cwd,
    files: written,
    written: written.filter((w) => w.status !== 'unchanged').map((w) => w.path),
    skipped: plan.skipped,
    notes: plan.notes,
  };
  out.result(summary, () => render(summary, home));
  return 0;
}

interface PlanContext {
  home: string;
  cwd: string;
  scope: 'project' | 'global';
  storePath?: string;
  desktop: boolean;
  cursor: boolean;
  cursorAuto: boolean;
  optional: { host: (typeof OPTIONAL_HOSTS)[number]; on: boolean; auto: boolean }[];
  svcYaml: { scope?: string; domain?: string };
  approve: boolean;
  asyncInject: boolean;
}

async function planInit(ctx: PlanContext): Promise<{ files: PlannedFile[]; skipped: InitSummary['skipped']; notes: string[] }> {
  const files: PlannedFile[] = [];
  const skipped: InitSummary['skipped'] = [];
  const notes: string[] = [];
  /** Machine-local files svc writes in the project, for its .gitignore. */
  const ignore: string[] = [];
  const { home, cwd, scope } = ctx;

  // The shim: every hook and MCP entry calls it, so moving the install only needs `svc init`.
  const shim = shimPath(home);
  const cli = thisCliPath();
  files.push({
    path: shim,
    role: `hook shim -> ${process.execPath} ${cli}`,
    content: shimScript(process.execPath, cli, ctx.storePath),
    mode: 0o755,
    forceMode: true,
  });

  // Claude Code: hooks in settings.json, the MCP server in .mcp.json (project) or ~/.claude.json (user scope).
  const paths = claudePaths(scope, cwd, home);
  const settings = readJsonObject(paths.claudeSettings);
  const events = [...new Set(CLAUDE_HOOKS.map((h) => h.event))];
  files.push({
    path: paths.claudeSettings,
    role: `Claude Code hooks (${events.join(', ')})`,
    content: formatJson(withClaudeHooks(settings.data, paths.claudeSettings, { asyncInject: ctx.asyncInject })),
  });
  const mcp = readJsonObject(paths.claudeMcp);
  files.push({
    path: paths.claudeMcp,
    role: `Claude Code MCP server "${MCP_SERVER_KEY}" (${scope === 'project' ? 'project scope' : 'user scope'})`,
    content: formatJson(withMcpServer(mcp.data, paths.claudeMcp, MCP_SERVER_KEY, mcpEntry('claude-code'))),
    // ~/.claude.json holds Claude Code's private state: never widen its mode.
    mode: scope === 'global' ? 0o600 : 0o644,
  });
  if (scope === 'global') {
    notes.push(
      'Claude Code rewrites ~/.claude.json while it runs: if it was open, restart it (and re-run svc init if the server is missing).',
    );
  }
  if (scope === 'project') {
    // A project's .mcp.json server loads only once approved (each person, on their machine).
    const local = claudeLocalSettings(cwd);
    if (ctx.approve) {
      files.push({
        path: local,
        role: `Claude Code local settings: approves the "${MCP_SERVER_KEY}" server of .mcp.json (this machine only)`,
        content: formatJson(withMcpApproval(readJsonObject(local).data, local, MCP_SERVER_KEY)),
      });
      ignore.push('.claude/settings.local.json');
    } else {
      notes.push(
        `Claude Code shows the "${MCP_SERVER_KEY}" server of .mcp.json as pending until you approve it: run claude here and accept it (or svc init without --no-approve).`,
      );
    }
    if (!isTrusted(cwd, home)) {
      notes.push(
        `Claude Code has not been told to trust ${projectRootOf(cwd)}: until you run claude there once and accept the trust dialog, interactive sessions skip the project's hooks (claude -p runs them).`,
      );
    }
  }
  const other = claudePaths(scope === 'project' ? 'global' : 'project', cwd, home).claudeSettings;
  if (other !== paths.claudeSettings && svcHooksInFile(other) > 0) {
    notes.push(`svc hooks are also installed in ${other}: each hook would run twice; remove svc's entries from one of the two files.`);
  }

  // The desktop assistant: only where the app has its config folder (it creates it on first start),
  // so a machine without it gets no stray folder; run `svc init` again after installing it.
  if (!ctx.desktop) {
    skipped.push({ what: 'Claude Desktop', reason: '--no-desktop' });
  } else if (!isDir(desktopConfigDir(home))) {
    skipped.push({
      what: 'Claude Desktop',
      reason: `not installed (no ${desktopConfigDir(home)}); run svc init again after installing it`,
    });
  } else {
    const path = desktopConfigPath(home);
    const desktop = readJsonObject(path);
    files.push({
      path,
      role: `Claude Desktop MCP server "${MCP_SERVER_KEY}"`,
      content: formatJson(withMcpServer(desktop.data, path, MCP_SERVER_KEY, mcpEntry('desktop', home))),
    });
    notes.push('Restart Claude Desktop to load the MCP server.');
  }

  // The editor (experimental): MCP with the lean tool profile, four lifecycle hooks, a static rules file.
  if (ctx.cursor) {
    const c = cursorPaths(cwd);
    const cursorMcp = readJsonObject(c.mcp);
    files.push({
      path: c.mcp,
      role: `Cursor MCP server "${MCP_SERVER_KEY}" (lean tool profile)`,
      content: formatJson(withMcpServer(cursorMcp.data, c.mcp, MCP_SERVER_KEY, mcpEntry('cursor'))),
    });
    const cursorHooks = readJsonObject(c.hooks);
    files.push({
      path: c.hooks,
      role: `Cursor hooks (${CURSOR_HOOKS.map((h) => h.event).join(', ')})`,
      content: formatJson(withCursorHooks(cursorHooks.data, c.hooks)),
    });
    files.push({ path: c.rules, role: 'Cursor rules: how to use svc memory', content: CURSOR_STATIC_RULES_TEXT });
    ignore.push(CURSOR_DYNAMIC_RULES_GLOB);
  } else {
    skipped.push({ what: 'Cursor', reason: ctx.cursorAuto ? 'no .cursor/ folder here (use --cursor to set it up)' : '--no-cursor' });
  }

  // The other hosts, each where asked or where its folder exists (optional-hosts.ts).
  for (const { host, on, auto } of ctx.optional) {
    if (on) {
      const plan = host.plan(ctx);
      files.push(...plan.files);
      notes.push(...plan.notes);
      ignore.push(...(plan.ignore ?? []));
    } else {
      const dir = host.dir(scope, cwd, home);
      const where = dir.startsWith(home + '/') ? `~${dir.slice(home.length)}` : dir;
      skipped.push({ what: HOSTS[host.id], reason: auto ? `no ${where} folder (use --${host.flag} to set it up)` : `--no-${host.flag}` });
    }
  }

  // Sessions started here default to this scope and domain.
  if (ctx.svcYaml.scope !== undefined || ctx.svcYaml.domain !== undefined) {
    const path = join(cwd, '.svc.yaml');
    files.push({
      path,
      role: `.svc.yaml: ${[ctx.svcYaml.scope && `scope ${ctx.svcYaml.scope}`, ctx.svcYaml.domain && `domain ${ctx.svcYaml.domain}`].filter(Boolean).join(', ')}`,
      content: await svcYamlWith(path, { scope: ctx.svcYaml.scope, domain: ctx.svcYaml.domain }),
    });
  }
  if (ignore.length > 0) {
    const gitignore = join(cwd, '.gitignore');
    const content = ignore.reduce<string>((text, line) => withGitignoreLine(text, line), readTextOrNull(gitignore) ?? '');
    files.push({ path: gitignore, role: `.gitignore: ${ignore.join(', ')} (machine-local)`, content });
  }
  notes.push('Run svc doctor to check the wiring.');
  return { files, skipped, notes };
}

function isDir(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function render(s: InitSummary, home: string): string {
  const short = (p: string) => (p.startsWith(home + '/') ? '~' + p.slice(home.length) : p);
  const width = Math.max(...s.files.map((f) => short(f.path).length));
  const lines = [`svc init (${s.scope === 'project' ? `project ${s.cwd}` : 'global'})`];
  for (const f of s.files) lines.push(`  ${f.status.padEnd(9)}  ${short(f.path).padEnd(width)}  ${f.role}`);
  for (const k of s.skipped) lines.push(`  ${'skipped'.padEnd(9)}  ${k.what}: ${k.reason}`);
  for (const n of s.notes) lines.push(`Note: ${n}`);
  return lines.join('\n');
}
