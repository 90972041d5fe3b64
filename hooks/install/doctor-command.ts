import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/store/store-root.js';
import { isObject, readJsonObject, type JsonObject } from './config-files.js';
import {
  CLAUDE_HOOKS,
  CURSOR_DYNAMIC_RULES_GLOB,
  CURSOR_HOOKS,
  LEAN_TOOL_COUNT,
  MCP_SERVER_KEY,
  claudePaths,
  cursorPaths,
  desktopConfigDir,
  desktopConfigPath,
  hookCommand,
  isSvcHookCommand,
  parseShim,
  runsHook,
  shellQuote,
  shimPath,
  shimStorePath,
  thisCliPath,
  usesShim,
} from './wiring.js';

const HELP = `
  Usage
    svc doctor [--no-handshake]

  Checks the wiring: the hook shim, the MCP registration and hooks of Claude Code (project and
  global), Claude Desktop, the store, the embedder (probed in a separate process) and, when a
  .cursor/ folder exists, Cursor's MCP config, hooks and rules with a live MCP handshake.
  Each failing line names the command that fixes it; exit 1 when anything fails.

  Flags
    --no-handshake     skip the live MCP handshake with the editor's configured server`;

export type Status = 'ok' | 'warn' | 'fail';

export interface Check {
  check: string;
  status: Status;
  message: string;
  /** For failures (and some warnings): the command, or the step, that fixes it. */
  fix?: string;
}

/** How long the embedder probe may take (loading a real model takes a few seconds). */
const EMBED_PROBE_TIMEOUT_MS = 90_000;
const HANDSHAKE_TIMEOUT_MS = 20_000;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { handshake: { type: 'boolean' } });
  const out = makeOutput(cli.flags);
  const home = homedir();
  const cwd = process.cwd();
  // The store the hooks use: --path or SVC_PATH here, else the default the shim carries from `svc init`.
  const shimStore = readShimStore(home);
  const storeRoot = resolveStoreRoot(cli.flags.path ?? (process.env.SVC_PATH || shimStore));

  const checks: Check[] = [];
  checks.push(checkShim(home));
  const scopeFix = initCommandFor(cwd, home);
  checks.push(checkClaudeMcp(cwd, home, scopeFix));
  checks.push(...checkClaudeHooks(cwd, home, scopeFix));
  checks.push(checkDesktop(home));
  // The two slow probes run side by side.
  const cursor = isDir(cursorPaths(cwd).dir);
  const [storage, embedder, cursorChecks] = await Promise.all([
    checkStorage(storeRoot),
    checkEmbedder(storeRoot),
    cursor ? checkCursor(cwd, home, cli.flags.handshake !== false) : Promise.resolve([]),
  ]);
  checks.push(...storage, embedder, ...cursorChecks);

  const failed = checks.filter((c) => c.status === 'fail').length;
  out.result(checks, () => render(checks));
  return failed > 0 ? 1 : 0;
}

// ------------------------------------------------------------------ shim

function readShimStore(home: string): string | undefined {
  try {
    return shimStorePath(readFileSync(shimPath(home), 'utf8'));
  } catch {
    return undefined;
  }
}

function checkShim(home: string): Check {
  const path = shimPath(home);
  const fail = (message: string): Check => ({ check: 'shim', status: 'fail', message, fix: 'svc init' });
  if (!existsSync(path)) return fail(`hook shim ${path} is missing: every hook and MCP entry calls it`);
  let text: string;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return fail(`hook shim ${path} is not executable`);
  }
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return fail(`hook shim ${path} cannot be read: ${(err as Error).message}`);
  }
  const target = parseShim(text);
  if (!target) return fail(`${path} is not an svc hook shim (no exec line)`);
  if (!existsSync(target.node)) return fail(`hook shim runs ${target.node}, which no longer exists (Node moved or was upgraded)`);
  if (!existsSync(target.cli)) return fail(`hook shim points at ${target.cli}, which no longer exists (svc moved or was removed)`);
  if (target.cli !== thisCliPath()) {
    return {
      check: 'shim',
      status: 'warn',
      message: `hook shim points at another install (${target.cli}); this svc is ${thisCliPath()}`,
      fix: 'svc init (from the install the hosts should use)',
    };
  }
  const store = shimStorePath(text);
  const shellStore = process.env.SVC_PATH ? resolveStoreRoot(process.env.SVC_PATH) : undefined;
  if (store && shellStore && store !== shellStore) {
    return {
      check: 'shim',
      status: 'warn',
      message: `hooks default to the store ${store} (set at svc init) but this shell's SVC_PATH is ${shellStore}`,
      fix: 'svc init (with the SVC_PATH the hosts should use)',
    };
  }
  return { check: 'shim', status: 'ok', message: `${path} -> ${target.node} ${target.cli}${store ? ` (store ${store})` : ''}` };
}

// ------------------------------------------------------------------ Claude Code

/** `svc init` or `svc init --global`, whichever scope the user installed hooks in. */
function initCommandFor(cwd: string, home: string): string {
  const project = svcHookCount(claudePaths('project', cwd, home).claudeSettings);
  const global = svcHookCount(claudePaths('global', cwd, home).claudeSettings);
  return project === 0 && global > 0 ? 'svc init --global' : 'svc init';
}

function svcHookCount(path: string): number {
  try {
    return hookEntries(readJsonObject(path).data).filter((e) => isSvcHookCommand(e.command)).length;
  } catch {
    return 0;
  }
}

interface HookEntry {
  event: string;
  command: string;
  entry: JsonObject;
}

function hookEntries(settings: JsonObject): HookEntry[] {
  const out: HookEntry[] = [];
  if (!isObject(settings.hooks)) return out;
  for (const [event, groups] of Object.entries(settings.hooks)) {
    if (!Array.isArray(groups)) continue;
    for (const g of groups) {
      if (!isObject(g) || !Array.isArray(g.hooks)) continue;
      for (const h of g.hooks) if (isObject(h) && typeof h.command === 'string') out.push({ event, command: h.command, entry: h });
    }
  }
  return out;
}

function checkClaudeMcp(cwd: string, home: string, fix: string): Check {
  const name = 'claude.mcp';
  const project = claudePaths('project', cwd, home).claudeMcp;
  const user = claudePaths('global', cwd, home).claudeMcp;
  const found: { where: string; entry: unknown }[] = [];
  for (const path of [project, user]) {
    let data: JsonObject;
    try {
      data = readJsonObject(path).data;
    } catch (err) {
      return { check: name, status: 'fail', message: (err as Error).message.replace(/; fix it by hand.*$/, ''), fix: `fix the JSON in ${path} by hand, then ${fix}` };
    }
    if (isObject(data.mcpServers) && MCP_SERVER_KEY in data.mcpServers) found.push({ where: path, entry: data.mcpServers[MCP_SERVER_KEY] });
    // `claude mcp add` without --scope keeps a project's servers in ~/.claude.json under projects.<path>.
    if (path === user && isObject(data.projects)) {
      const p = data.projects[cwd];
      if (isObject(p) && isObject(p.mcpServers) && MCP_SERVER_KEY in p.mcpServers) found.push({ where: `${path} (projects.${cwd})`, entry: p.mcpServers[MCP_SERVER_KEY] });
    }
  }
  if (found.length === 0) {
    return { check: name, status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is not registered for Claude Code (looked in ${project} and ${user})`, fix };
  }
  const problems = found.map((f) => ({ ...f, problem: entryProblem(f.entry, home) }));
  const good = problems.filter((p) => !p.problem);
  if (good.length === 0) return { check: name, status: 'fail', message: `${problems[0]!.where}: ${problems[0]!.problem}`, fix };
  const stale = problems.find((p) => p.problem);
  if (stale) return { check: name, status: 'warn', message: `registered in ${good.map((g) => g.where).join(', ')}; ${stale.where}: ${stale.problem}`, fix };
  return { check: name, status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" registered in ${good.map((g) => g.where).join(', ')}` };
}

/** Why an MCP entry cannot start svc's server, or null when it can. */
function entryProblem(entry: unknown, home: string): string | null {
  if (!isObject(entry) || typeof entry.command !== 'string') return 'the entry has no command';
  const args = Array.isArray(entry.args) ? entry.args.map(String) : [];
  if (!args.includes('mcp')) return `the entry does not run "mcp" (args ${JSON.stringify(args)})`;
  const command = entry.command;
  if (command.includes('/') && !existsSync(command)) return `its command ${command} does not exist`;
  if (command.includes('/') && command !== shimPath(home) && /svc-hook$/.test(command)) return `its command ${command} is another home's shim`;
  return null;
}

function checkClaudeHooks(cwd: string, home: string, fix: string): Check[] {
  const sources: { label: string; path: string; entries: HookEntry[]; disabled: boolean }[] = [];
  const checks: Check[] = [];
  for (const scope of ['project', 'global'] as const) {
    const path = claudePaths(scope, cwd, home).claudeSettings;
    if (sources.some((s) => s.path === path)) continue; // a project in the home folder: one file
    try {
      const data = readJsonObject(path).data;
      sources.push({ label: scope, path, entries: hookEntries(data), disabled: data.disableAllHooks === true });
    } catch (err) {
      checks.push({ check: `hooks`, status: 'fail', message: (err as Error).message.replace(/; fix it by hand.*$/, ''), fix: `fix the JSON in ${path} by hand, then ${fix}` });
    }
  }
  for (const s of sources.filter((x) => x.disabled)) {
    checks.push({ check: 'hooks', status: 'fail', message: `${s.path} sets disableAllHooks: no hook runs, svc's included`, fix: `remove "disableAllHooks" from ${s.path}` });
  }
  const ours = sources.filter((s) => s.entries.some((e) => isSvcHookCommand(e.command)));
  if (ours.length === 0) {
    checks.push({
      check: 'hooks',
      status: 'fail',
      message: `no svc hooks in ${sources.map((s) => s.path).join(' or ')}: nothing injects memory before prompts or learns after them`,
      fix,
    });
    return checks;
  }
  if (ours.length > 1) {
    checks.push({
      check: 'hooks',
      status: 'warn',
      message: `svc hooks are in both ${ours.map((s) => s.path).join(' and ')}: each runs twice`,
      fix: `remove svc's entries from one of the two files, then ${fix}`,
    });
  }
  const events = [...new Set(CLAUDE_HOOKS.map((h) => h.event))];
  for (const event of events) {
    const problems: { status: Status; text: string }[] = [];
    const wired: string[] = [];
    for (const spec of CLAUDE_HOOKS.filter((h) => h.event === event)) {
      const hits = ours.flatMap((s) => s.entries.filter((e) => e.event === event && isSvcHookCommand(e.command) && runsHook(e.command, spec.hook)).map((e) => ({ ...e, label: s.label })));
      if (hits.length === 0) {
        problems.push({ status: 'fail', text: `${spec.hook} is not wired` });
        continue;
      }
      const current = hits.find((h) => h.command === hookCommand(spec.hook, home));
      if (!current) {
        const h = hits[0]!;
        problems.push({
          status: 'warn',
          text: usesShim(h.command) ? `${spec.hook} calls another shim (${h.command})` : `${spec.hook} uses an older install's command (${h.command})`,
        });
        continue;
      }
      if (spec.async && (current.entry.async !== true || current.entry.timeout !== spec.timeout)) {
        problems.push({ status: 'warn', text: `${spec.hook} should run async with timeout ${spec.timeout} (older install)` });
        continue;
      }
      wired.push(`${spec.hook} (${current.label})`);
    }
    const worst: Status = problems.some((p) => p.status === 'fail') ? 'fail' : problems.length > 0 ? 'warn' : 'ok';
    checks.push({
      check: `hooks.${event}`,
      status: worst,
      message: worst === 'ok' ? `${wired.join(', ')} wired to the shim` : problems.map((p) => p.text).join('; '),
      ...(worst === 'ok' ? {} : { fix }),
    });
  }
  return checks;
}

// ------------------------------------------------------------------ Claude Desktop

function checkDesktop(home: string): Check {
  const dir = desktopConfigDir(home);
  if (!isDir(dir)) return { check: 'desktop', status: 'ok', message: `Claude Desktop not installed (no ${dir}): nothing to check` };
  const path = desktopConfigPath(home);
  let data: JsonObject;
  try {
    data = readJsonObject(path).data;
  } catch (err) {
    return { check: 'desktop', status: 'fail', message: (err as Error).message.replace(/; fix it by hand.*$/, ''), fix: `fix the JSON in ${path} by hand, then svc init` };
  }
  const entry = isObject(data.mcpServers) ? data.mcpServers[MCP_SERVER_KEY] : undefined;
  if (entry === undefined) {
    return { check: 'desktop', status: 'warn', message: `Claude Desktop is installed but "${MCP_SERVER_KEY}" is not in ${path}`, fix: 'svc init' };
  }
  const problem = entryProblem(entry, home);
  if (problem) return { check: 'desktop', status: 'fail', message: `${path}: ${problem}`, fix: 'svc init' };
  return { check: 'desktop', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" registered in ${path}` };
}

// ------------------------------------------------------------------ storage

async function checkStorage(root: string): Promise<Check[]> {
  const name = 'storage';
  if (!existsSync(join(root, 'local.yaml')) && !existsSync(join(root, 'index.db'))) {
    return [{ check: name, status: 'warn', message: `no store at ${root} yet: the first svc learn creates it`, fix: 'svc learn "<something worth remembering>"' }];
  }
  const { LocalStore } = await import('../../engine/store/local-store.js');
  let store;
  try {
    store = await LocalStore.open(root, 'full');
  } catch (err) {
    return [
      {
        check: name,
        status: 'fail',
        message: `the store at ${root} does not open: ${oneLine(err)}`,
        fix: 'svc sync --full',
      },
    ];
  }
  try {
    const stats = await store.stats();
    const { selectedModel } = await import('../../engine/embed/fastembed-embedder.js');
    const vectors = (() => {
      try {
        return store.vectorStats(selectedModel()).vectors;
      } catch {
        return undefined;
      }
    })();
    const checks: Check[] = [
      {
        check: name,
        status: 'ok',
        message: `${root}: ${stats.engrams} engrams, ${stats.episodes} episodes, ${stats.packs} packs${vectors === undefined ? '' : `, ${vectors} vectors`}`,
      },
    ];
    const quarantined = store.quarantined();
    for (const w of store.warnings.splice(0)) if (!/^quarantined /.test(w)) checks.push({ check: name, status: 'warn', message: w });
    if (quarantined.length > 0) {
      checks.push({
        check: 'storage.quarantine',
        status: 'warn',
        message: `${quarantined.length} quarantined file(s) kept aside, e.g. ${quarantined[0]!.file}: ${quarantined[0]!.reason}`,
        fix: `repair each file and move it back into ${join(root, 'engrams')} (dropping the timestamp suffix), or delete it`,
      });
    }
    return checks;
  } finally {
    store.close();
  }
}

// ------------------------------------------------------------------ embedder

// Runs in a child process: a crash of the model loader (ONNX runtime) must not take doctor down.
const EMBED_PROBE = `
const [moduleUrl, root] = process.argv.slice(1);
let out;
try {
  const m = await import(moduleUrl);
  const s = await m.loadEmbedder(root, { download: false, progress: false });
  out = s.state === 'ready'
    ? { state: 'ready', model: s.model, dimensions: s.embedder.dimensions }
    : { state: 'unavailable', model: s.model, reason: s.reason };
} catch (e) {
  out = { state: 'error', reason: String((e && e.message) || e).split('\\n')[0] };
}
process.stdout.write(JSON.stringify(out) + '\\n');
process.exit(0);
`;

async function checkEmbedder(root: string): Promise<Check> {
  const name = 'embedder';
  const m = await import('../../engine/embed/fastembed-embedder.js');
  let model;
  try {
    model = m.selectedModel();
  } catch (err) {
    return { check: name, status: 'fail', message: oneLine(err), fix: 'unset SVC_EMBED_MODEL' };
  }
  if (process.env.SVC_EMBED?.trim().toLowerCase() === 'off') {
    return { check: name, status: 'warn', message: 'vectors disabled by SVC_EMBED=off: recall is BM25 only', fix: 'unset SVC_EMBED' };
  }
  const folder = m.modelFolder(root, model);
  if (!m.modelPresent(root, model)) {
    return {
      check: name,
      status: 'warn',
      message: `model ${model} is not in ${folder} yet: recall is BM25 only until the first hybrid recall downloads it`,
      fix: `svc recall "test" (with network access), or place the model folder in ${folder} by hand`,
    };
  }
  const moduleUrl = new URL('../../engine/embed/fastembed-embedder.js', import.meta.url).href;
  const r = await runProbe([process.execPath, '--input-type=module', '-e', EMBED_PROBE, moduleUrl, root], EMBED_PROBE_TIMEOUT_MS);
  return embedderVerdict(r, model, folder);
}

/** Reads the probe's last stdout line; a crash, a timeout or no answer is a failure naming how. */
export function embedderVerdict(r: ProbeRun, model: string, folder: string): Check {
  const name = 'embedder';
  const refetch = `rm -rf ${shellQuote(folder)} && svc recall "test"`;
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let state: { state: string; model?: string; dimensions?: number; reason?: string } | undefined;
  try {
    state = JSON.parse(line);
  } catch {
    state = undefined;
  }
  if (!state || typeof state.state !== 'string') {
    const how = r.timedOut ? `did not finish within ${EMBED_PROBE_TIMEOUT_MS / 1000} s` : r.signal ? `crashed (${r.signal})` : `crashed (exit ${r.code})`;
    const err = r.stderr.trim().split('\n').filter(Boolean).pop();
    return { check: name, status: 'fail', message: `loading model ${model} from ${folder} ${how}${err ? `: ${err.slice(0, 200)}` : ''}`, fix: refetch };
  }
  if (state.state === 'ready') return { check: name, status: 'ok', message: `hybrid search: ${model} loads and runs (${state.dimensions} dimensions, probed in a separate process)` };
  return { check: name, status: 'fail', message: `vectors unavailable, recall is BM25 only: ${state.reason}`, fix: refetch };
}

export interface ProbeRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export function runProbe(argv: string[], timeoutMs: number): Promise<ProbeRun> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, stdout, stderr: stderr + String(err), timedOut });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

// ------------------------------------------------------------------ Cursor

async function checkCursor(cwd: string, home: string, handshake: boolean): Promise<Check[]> {
  const c = cursorPaths(cwd);
  const fix = 'svc init --cursor';
  const checks: Check[] = [];

  let entry: JsonObject | undefined;
  try {
    const data = readJsonObject(c.mcp).data;
    const e = isObject(data.mcpServers) ? data.mcpServers[MCP_SERVER_KEY] : undefined;
    entry = isObject(e) ? e : undefined;
    const env = entry && isObject(entry.env) ? entry.env : {};
    const problem = entry ? entryProblem(entry, home) : null;
    if (!entry) checks.push({ check: 'cursor.mcp', status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is not in ${c.mcp}`, fix });
    else if (problem) checks.push({ check: 'cursor.mcp', status: 'fail', message: `${c.mcp}: ${problem}`, fix });
    else if (env.SVC_TOOL_PROFILE !== 'lean') {
      checks.push({ check: 'cursor.mcp', status: 'fail', message: `${c.mcp} does not set SVC_TOOL_PROFILE=lean: Cursor gets the full tool surface`, fix });
    } else if (entry.command !== shimPath(home)) {
      checks.push({ check: 'cursor.mcp', status: 'warn', message: `${c.mcp} runs ${String(entry.command)}, not the shim ${shimPath(home)}`, fix });
    } else checks.push({ check: 'cursor.mcp', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" (lean profile) in ${c.mcp}` });
  } catch (err) {
    checks.push({ check: 'cursor.mcp', status: 'fail', message: (err as Error).message.replace(/; fix it by hand.*$/, ''), fix: `fix the JSON in ${c.mcp} by hand, then ${fix}` });
  }

  try {
    const data = readJsonObject(c.hooks).data;
    const hooks = isObject(data.hooks) ? data.hooks : {};
    const missing: string[] = [];
    const stale: string[] = [];
    for (const spec of CURSOR_HOOKS) {
      const list = Array.isArray(hooks[spec.event]) ? (hooks[spec.event] as unknown[]) : [];
      const commands = list.filter(isObject).map((h) => h.command).filter((x): x is string => typeof x === 'string');
      const mine = commands.filter((cmd) => isSvcHookCommand(cmd) && runsHook(cmd, spec.hook));
      if (mine.length === 0) missing.push(`${spec.event} -> ${spec.hook}`);
      else if (!mine.includes(hookCommand(spec.hook, home))) stale.push(`${spec.event} -> ${mine[0]}`);
    }
    if (missing.length > 0) checks.push({ check: 'cursor.hooks', status: 'fail', message: `not wired in ${c.hooks}: ${missing.join(', ')}`, fix });
    else if (stale.length > 0) checks.push({ check: 'cursor.hooks', status: 'warn', message: `older commands in ${c.hooks}: ${stale.join(', ')}`, fix });
    else if (data.version !== 1) checks.push({ check: 'cursor.hooks', status: 'warn', message: `${c.hooks} has version ${JSON.stringify(data.version)}, expected 1`, fix });
    else checks.push({ check: 'cursor.hooks', status: 'ok', message: `${CURSOR_HOOKS.map((h) => h.event).join(', ')} wired to the shim` });
  } catch (err) {
    checks.push({ check: 'cursor.hooks', status: 'fail', message: (err as Error).message.replace(/; fix it by hand.*$/, ''), fix: `fix the JSON in ${c.hooks} by hand, then ${fix}` });
  }

  checks.push(
    existsSync(c.rules)
      ? { check: 'cursor.rules', status: 'ok', message: `${c.rules} present` }
      : { check: 'cursor.rules', status: 'warn', message: `${c.rules} is missing: the agent is not told how to use svc`, fix },
  );
  const gitignore = existsSync(c.gitignore) ? readFileSync(c.gitignore, 'utf8') : '';
  checks.push(
    gitignore.split(/\r?\n/).some((l) => l.trim() === CURSOR_DYNAMIC_RULES_GLOB || l.trim() === `/${CURSOR_DYNAMIC_RULES_GLOB}`)
      ? { check: 'cursor.gitignore', status: 'ok', message: `${CURSOR_DYNAMIC_RULES_GLOB} is gitignored` }
      : { check: 'cursor.gitignore', status: 'warn', message: `${CURSOR_DYNAMIC_RULES_GLOB} is not in ${c.gitignore}: run-time rules files could be committed`, fix },
  );

  if (handshake && entry && typeof entry.command === 'string') {
    const { mcpHandshake } = await import('./mcp-probe.js');
    const server = {
      command: entry.command,
      args: Array.isArray(entry.args) ? entry.args.map(String) : [],
      env: isObject(entry.env) ? Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, String(v)])) : {},
      cwd,
    };
    const r = await mcpHandshake(server, HANDSHAKE_TIMEOUT_MS);
    const shown = [server.command, ...server.args].map(shellQuote).join(' ');
    if (!r.ok) {
      const err = r.stderr.split('\n').filter(Boolean).pop();
      checks.push({
        check: 'cursor.handshake',
        status: 'fail',
        message: `MCP handshake with \`${shown}\` failed: ${r.error}${err ? ` (stderr: ${err.slice(0, 200)})` : ''}`,
        fix: `${fix}; if it still fails, run SVC_TOOL_PROFILE=lean ${shown} to see why it does not start`,
      });
    } else if (r.tools.length !== LEAN_TOOL_COUNT) {
      checks.push({
        check: 'cursor.handshake',
        status: 'fail',
        message: `live MCP server lists ${r.tools.length} tools, expected ${LEAN_TOOL_COUNT} for the lean profile`,
        fix,
      });
    } else {
      checks.push({ check: 'cursor.handshake', status: 'ok', message: `live MCP handshake: ${r.tools.length} tools (lean profile), ready in ${Math.round(r.ms)} ms` });
    }
  }
  return checks;
}

// ------------------------------------------------------------------ helpers

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return (text.split('\n').find((l) => l.trim()) ?? 'unknown error').trim().slice(0, 300);
}

function render(checks: Check[]): string {
  const width = Math.max(...checks.map((c) => c.check.length));
  const lines = checks.map((c) => `${c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.message}${c.fix ? `\n        ${' '.repeat(width)}fix: ${c.fix}` : ''}`);
  const count = (s: Status) => checks.filter((c) => c.status === s).length;
  lines.push(`${count('ok')} ok, ${count('warn')} warning(s), ${count('fail')} failure(s)`);
  return lines.join('\n');
}
