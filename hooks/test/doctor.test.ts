import { describe, it, expect } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { svc, type SvcRun } from '../../tui/test/run-svc.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';
import { embedderVerdict, runProbe } from '../install/doctor-command.js';

// `svc doctor` after a real `svc init`, then with each wire broken on purpose: every failure is
// named with the command that fixes it, and doctor exits 1.

interface Check {
  check: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  fix?: string;
}

interface Installed {
  home: string;
  project: string;
  shim: string;
  store: string;
  run(args: string[], env?: NodeJS.ProcessEnv): Promise<SvcRun>;
  doctor(args?: string[]): Promise<{ run: SvcRun; checks: Check[] }>;
}

/** A temp HOME and project with svc initialised (Claude Code, Claude Desktop, optionally Cursor), a store and a model. */
async function installed(opts: { cursor?: boolean; global?: boolean } = {}): Promise<Installed> {
  const root = mkdtempSync(join(tmpdir(), 'svc-doctor-'));
  const home = join(root, 'home');
  const project = join(root, 'project');
  mkdirSync(join(home, '.config', 'Claude'), { recursive: true });
  mkdirSync(project);
  if (opts.cursor) mkdirSync(join(project, '.cursor'));
  const baseEnv = { HOME: home, SVC_PATH: '', XDG_CONFIG_HOME: '', SVC_EMBED: '', SVC_EMBED_MODEL: '', SVC_TOOL_PROFILE: '' };
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) => svc(args, { cwd: project, env: { ...baseEnv, ...env } });
  const init = await run(['init', ...(opts.global ? ['--global'] : [])]);
  expect(init.code, init.stderr).toBe(0);
  const learn = await run(['learn', 'Deploys happen on Tuesdays']);
  expect(learn.code, learn.stderr).toBe(0);
  const store = join(home, '.svc');
  writeTinyModel(join(store, 'models', 'fast-bge-small-en-v1.5'));
  return {
    home,
    project,
    store,
    shim: join(home, '.svc', 'bin', 'svc-hook'),
    run,
    async doctor(args = ['--no-handshake']) {
      const r = await run(['doctor', ...args, '--json']);
      let checks: Check[];
      try {
        checks = JSON.parse(r.stdout);
      } catch {
        throw new Error(`svc doctor printed no JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
      }
      return { run: r, checks };
    },
  };
}

const failures = (checks: Check[]) => checks.filter((c) => c.status === 'fail');
const byName = (checks: Check[], name: string): Check => {
  const c = checks.find((x) => x.check === name);
  if (!c) throw new Error(`no check "${name}" in ${JSON.stringify(checks.map((x) => x.check))}`);
  return c;
};
const readJson = (path: string): any => JSON.parse(readFileSync(path, 'utf8'));
const writeJson = (path: string, data: unknown) => writeFileSync(path, JSON.stringify(data, null, 2) + '\n');

describe('svc doctor', () => {
  it('after init everything is ok', async () => {
    const s = await installed({ cursor: true });
    const { run, checks } = await s.doctor();
    expect(run.code, JSON.stringify(checks, null, 2)).toBe(0);
    expect(checks.filter((c) => c.status !== 'ok')).toEqual([]);
    expect(checks.map((c) => c.check)).toEqual([
      'shim',
      'claude.mcp',
      'hooks.SessionStart',
      'hooks.UserPromptSubmit',
      'hooks.PostToolUse',
      'hooks.Stop',
      'hooks.PreCompact',
      'hooks.SessionEnd',
      'desktop',
      'storage',
      'embedder',
      'cursor.mcp',
      'cursor.hooks',
      'cursor.rules',
      'cursor.gitignore',
    ]);
    expect(byName(checks, 'storage').message).toMatch(/1 engrams/);
    expect(byName(checks, 'embedder').message).toMatch(/bge-small-en-v1\.5 loads and runs/);

    const text = await s.run(['doctor', '--no-handshake', '--no-json']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ok {4}shim/m);
    expect(text.stdout).toMatch(/15 ok, 0 warning\(s\), 0 failure\(s\)/);
  });

  it('a deleted shim fails with its fix, and the fix works', async () => {
    const s = await installed();
    rmSync(s.shim);
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'shim')).toMatchObject({ status: 'fail', fix: 'svc init' });
    expect(byName(checks, 'shim').message).toMatch(/missing/);
    expect(byName(checks, 'claude.mcp')).toMatchObject({ status: 'fail', fix: 'svc init' });
    const text = await s.run(['doctor', '--no-handshake', '--no-json']);
    expect(text.stdout).toMatch(/^fail {2}shim .*missing.*\n\s+fix: svc init$/m);

    expect((await s.run(['init'])).code).toBe(0);
    const again = await s.doctor();
    expect(failures(again.checks)).toEqual([]);
    expect(again.run.code).toBe(0);
  });

  it('a shim that is not executable fails', async () => {
    const s = await installed();
    chmodSync(s.shim, 0o644);
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'shim')).toMatchObject({ status: 'fail', fix: 'svc init' });
    expect(byName(checks, 'shim').message).toMatch(/not executable/);
  });

  it('a removed hook entry fails on its event, naming the hook', async () => {
    const s = await installed();
    const path = join(s.project, '.claude', 'settings.json');
    const settings = readJson(path);
    settings.hooks.UserPromptSubmit[0].hooks = settings.hooks.UserPromptSubmit[0].hooks.filter((h: any) => !h.command.endsWith('hook-inject'));
    writeJson(path, settings);
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(failures(checks).map((c) => c.check)).toEqual(['hooks.UserPromptSubmit']);
    expect(byName(checks, 'hooks.UserPromptSubmit')).toMatchObject({ status: 'fail', message: 'hook-inject is not wired', fix: 'svc init' });

    // With no svc hooks at all, one line says so.
    writeJson(path, { hooks: {} });
    const none = await s.doctor();
    expect(byName(none.checks, 'hooks')).toMatchObject({ status: 'fail', fix: 'svc init' });
  });

  it('an older install (svc hook-… called directly) is a warning to re-run init', async () => {
    const s = await installed();
    const path = join(s.project, '.claude', 'settings.json');
    writeFileSync(path, readFileSync(path, 'utf8').replaceAll(`${s.shim} hook-`, 'svc hook-'));
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(0);
    expect(byName(checks, 'hooks.Stop')).toMatchObject({ status: 'warn', fix: 'svc init' });
    expect(byName(checks, 'hooks.Stop').message).toMatch(/older install/);
  });

  it('a removed MCP registration fails; a global install is told to use --global', async () => {
    const s = await installed();
    const path = join(s.project, '.mcp.json');
    const mcp = readJson(path);
    delete mcp.mcpServers.svc;
    writeJson(path, mcp);
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'claude.mcp')).toMatchObject({ status: 'fail', fix: 'svc init' });
    expect(byName(checks, 'claude.mcp').message).toMatch(/not registered/);

    const g = await installed({ global: true });
    const ok = await g.doctor();
    expect(failures(ok.checks)).toEqual([]);
    expect(byName(ok.checks, 'claude.mcp').message).toContain(join(g.home, '.claude.json'));
    const state = readJson(join(g.home, '.claude.json'));
    delete state.mcpServers.svc;
    writeJson(join(g.home, '.claude.json'), state);
    expect(byName((await g.doctor()).checks, 'claude.mcp')).toMatchObject({ status: 'fail', fix: 'svc init --global' });
  });

  it('a desktop config without svc is a warning; a broken one fails', async () => {
    const s = await installed();
    const path = join(s.home, '.config', 'Claude', 'claude_desktop_config.json');
    writeJson(path, { mcpServers: {} });
    expect(byName((await s.doctor()).checks, 'desktop')).toMatchObject({ status: 'warn', fix: 'svc init' });
    writeFileSync(path, '{ nope');
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'desktop').status).toBe('fail');
    expect(byName(checks, 'desktop').message).toContain(path);
  });

  it('a corrupted store index is set aside and rebuilt, and doctor says so', async () => {
    const s = await installed();
    writeFileSync(join(s.store, 'index.db'), Buffer.alloc(8192, 0x5a));
    rmSync(join(s.store, 'index.db-wal'), { force: true });
    rmSync(join(s.store, 'index.db-shm'), { force: true });
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(0);
    const storage = checks.filter((c) => c.check === 'storage');
    expect(storage.map((c) => c.status)).toEqual(['ok', 'warn']);
    expect(storage[1]!.message).toMatch(/index was damaged .*rebuilt it from the YAML files/);
    // The other checks still ran.
    expect(byName(checks, 'embedder').status).toBe('ok');
  });

  it('a store that cannot be opened fails storage and names the fix', async () => {
    const s = await installed();
    rmSync(join(s.store, 'engrams'), { recursive: true, force: true });
    writeFileSync(join(s.store, 'engrams'), 'a file where the engrams folder should be');
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'storage')).toMatchObject({ status: 'fail', fix: 'svc sync --full' });
    expect(byName(checks, 'storage').message).toMatch(/does not open/);
  });

  it('quarantined files are reported', async () => {
    const s = await installed();
    writeFileSync(join(s.store, 'engrams', 'ENG-ZZZZ-2026-0101-001.yaml'), 'id: [not valid\n');
    const { checks } = await s.doctor();
    expect(byName(checks, 'storage.quarantine').status).toBe('warn');
    expect(byName(checks, 'storage.quarantine').message).toMatch(/1 quarantined file/);
  });

  it('a broken model folder fails the embedder probe without crashing doctor', async () => {
    const s = await installed();
    const folder = join(s.store, 'models', 'fast-bge-small-en-v1.5');
    writeFileSync(join(folder, 'model_optimized.onnx'), 'not an onnx graph');
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    const e = byName(checks, 'embedder');
    expect(e.status).toBe('fail');
    expect(e.message).toContain(folder);
    expect(e.fix).toBe(`rm -rf ${folder} && svc recall "test"`);

    rmSync(folder, { recursive: true });
    const missing = byName((await s.doctor()).checks, 'embedder');
    expect(missing.status).toBe('warn');
    expect(missing.message).toMatch(/BM25 only/);
  });

  it('a crash of the probe process is a failing line, not a crash of doctor', async () => {
    const crashed = await runProbe([process.execPath, '-e', 'process.stderr.write("loader died\\n"); process.kill(process.pid, "SIGSEGV")'], 10_000);
    expect(crashed.signal).toBe('SIGSEGV');
    const verdict = embedderVerdict(crashed, 'bge-small-en-v1.5', '/store/models/fast-bge-small-en-v1.5');
    expect(verdict).toMatchObject({ check: 'embedder', status: 'fail', fix: 'rm -rf /store/models/fast-bge-small-en-v1.5 && svc recall "test"' });
    expect(verdict.message).toMatch(/crashed \(SIGSEGV\): loader died/);
  });

  it('checks the editor wiring when .cursor/ exists', async () => {
    const s = await installed({ cursor: true });
    const mcpPath = join(s.project, '.cursor', 'mcp.json');
    const mcp = readJson(mcpPath);
    delete mcp.mcpServers.svc.env;
    writeJson(mcpPath, mcp);
    const hooksPath = join(s.project, '.cursor', 'hooks.json');
    const hooks = readJson(hooksPath);
    delete hooks.hooks.beforeSubmitPrompt;
    writeJson(hooksPath, hooks);
    rmSync(join(s.project, '.gitignore'));
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'cursor.mcp')).toMatchObject({ status: 'fail', fix: 'svc init --cursor' });
    expect(byName(checks, 'cursor.mcp').message).toMatch(/SVC_TOOL_PROFILE=lean/);
    expect(byName(checks, 'cursor.hooks')).toMatchObject({ status: 'fail', fix: 'svc init --cursor' });
    expect(byName(checks, 'cursor.hooks').message).toMatch(/beforeSubmitPrompt -> hook-cursor-prompt/);
    expect(byName(checks, 'cursor.gitignore')).toMatchObject({ status: 'warn', fix: 'svc init --cursor' });

    expect((await s.run(['init'])).code).toBe(0);
    expect(failures((await s.doctor()).checks)).toEqual([]);
  });

  it('the live handshake counts the tools of the configured server', async () => {
    const s = await installed({ cursor: true });
    const fake = join(s.project, 'fake-mcp.mjs');
    writeFileSync(fake, FAKE_MCP_SERVER);
    const mcpPath = join(s.project, '.cursor', 'mcp.json');
    const point = (tools: number) => {
      const mcp = readJson(mcpPath);
      mcp.mcpServers.svc = { command: process.execPath, args: [fake, 'mcp', String(tools)], env: { SVC_TOOL_PROFILE: 'lean' } };
      writeJson(mcpPath, mcp);
    };

    point(11);
    const ok = await s.doctor([]);
    expect(byName(ok.checks, 'cursor.handshake')).toMatchObject({ status: 'ok' });
    expect(byName(ok.checks, 'cursor.handshake').message).toMatch(/11 tools/);
    expect(byName(ok.checks, 'cursor.mcp').status).toBe('warn'); // not the shim
    expect(ok.run.code).toBe(0);

    point(39);
    const full = await s.doctor([]);
    expect(full.run.code).toBe(1);
    expect(byName(full.checks, 'cursor.handshake')).toMatchObject({ status: 'fail', fix: 'svc init --cursor' });
    expect(byName(full.checks, 'cursor.handshake').message).toMatch(/lists 39 tools, expected 11/);

    // --no-handshake skips it.
    expect((await s.doctor()).checks.some((c) => c.check === 'cursor.handshake')).toBe(false);
  });

  it('handshakes with the real `svc mcp` as init configured it', async () => {
    const s = await installed({ cursor: true });
    const { checks } = await s.doctor([]);
    const h = byName(checks, 'cursor.handshake');
    if (h.status === 'ok') {
      expect(h.message).toMatch(/ 11 tools/);
    } else {
      // Until `svc mcp` serves the lean profile this is a correct failing line.
      expect(h.status).toBe('fail');
      expect(h.fix).toMatch(/^svc init --cursor/);
      expect(h.message).toContain(s.shim);
    }
  });
});

/** A minimal stdio MCP server (newline-delimited JSON-RPC) with N tools: argv[3]. */
const FAKE_MCP_SERVER = `
const count = Number(process.argv[3] ?? 11);
let buffer = '';
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\\n');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  for (let i = buffer.indexOf('\\n'); i >= 0; i = buffer.indexOf('\\n')) {
    const line = buffer.slice(0, i);
    buffer = buffer.slice(i + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.id === undefined) continue;
    if (msg.method === 'initialize') {
      send({ id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '1' } } });
    } else if (msg.method === 'tools/list') {
      send({ id: msg.id, result: { tools: Array.from({ length: count }, (_, k) => ({ name: 'tool_' + k, inputSchema: { type: 'object' } })) } });
    } else {
      send({ id: msg.id, error: { code: -32601, message: 'method not found' } });
    }
  }
});
`;
