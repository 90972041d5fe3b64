import { describe, it, expect } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { svc, type SvcRun } from '../../engine/test/support/run-svc.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';
import { embedderVerdict, runProbe } from '../install/doctor/embedder.js';

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
  // Claude Code has been run here once and told to trust the folder (claude.trust checks it).
  writeFileSync(join(home, '.claude.json'), JSON.stringify({ projects: { [project]: { hasTrustDialogAccepted: true } } }));
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
      'claude.approval',
      'claude.trust',
      'hooks.SessionStart',
      'hooks.UserPromptSubmit',
      'hooks.PostToolUse',
      'hooks.Stop',
      'hooks.PreCompact',
      'hooks.SessionEnd',
      'desktop',
      'cursor.mcp',
      'cursor.hooks',
      'cursor.rules',
      'cursor.gitignore',
      'storage',
      'hooks.failures',
      'embedder',
    ]);
    expect(byName(checks, 'storage').message).toMatch(/1 engrams/);
    expect(byName(checks, 'embedder').message).toMatch(/bge-small-en-v1\.5 loads and runs/);

    const text = await s.run(['doctor', '--no-handshake', '--no-json']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ok {4}shim/m);
    expect(text.stdout).toMatch(/18 ok, 0 warning\(s\), 0 failure\(s\)/);
  });

  it('a deleted shim fails with its fix, and the fix works', async () => {
    const s = await installed();
    rmSync(s.shim);
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(byName(checks, 'shim')).toMatchObject({ status: 'fail', fix: 'svc init' });
    expect(byName(checks, 'shim').message).toMatch(/missing/);
    expect(byName(checks, 'claude.mcp')).toMatchObject({ status: 'fail', fix: 'svc init' });
    // The hooks point at the missing shim: they run nothing, and doctor does not call them wired.
    expect(byName(checks, 'hooks.UserPromptSubmit')).toMatchObject({ status: 'fail', fix: 'svc init' });
    expect(byName(checks, 'hooks.UserPromptSubmit').message).toBe(
      `hook-inject (project), hook-correction-detect (project) wired to ${s.shim}, which is missing: no hook runs`,
    );
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

  it('a shim an older svc init wrote is a warning naming the fix', async () => {
    const s = await installed();
    // The shim before hooks handed NODE_EXTRA_CA_CERTS to svc: the same targets, without the case.
    writeFileSync(s.shim, readFileSync(s.shim, 'utf8').replace(/^case .*\n.*\nfi ;; esac\n/m, ''));
    const { checks } = await s.doctor();
    expect(byName(checks, 'shim')).toEqual({
      check: 'shim',
      status: 'warn',
      message: `hook shim ${s.shim} was written by another version of svc init`,
      fix: 'svc init (rewrites it for this version)',
    });
  });

  it('a removed hook entry fails on its event, naming the hook', async () => {
    const s = await installed();
    const path = join(s.project, '.claude', 'settings.json');
    const settings = readJson(path);
    settings.hooks.UserPromptSubmit[0].hooks = settings.hooks.UserPromptSubmit[0].hooks.filter(
      (h: any) => !h.command.endsWith('hook-inject'),
    );
    writeJson(path, settings);
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(1);
    expect(failures(checks).map((c) => c.check)).toEqual(['hooks.UserPromptSubmit']);
    expect(byName(checks, 'hooks.UserPromptSubmit')).toMatchObject({
      status: 'fail',
      message: 'hook-inject is not wired',
      fix: 'svc init',
    });

    // With no svc hooks at all, one line says so.
    writeJson(path, { hooks: {} });
    const none = await s.doctor();
    expect(byName(none.checks, 'hooks')).toMatchObject({ status: 'fail', fix: 'svc init' });
  });

  it('an older install (svc hook-… called directly) is a warning to re-run init', async () => {
    const s = await installed();
    const path = join(s.project, '.claude', 'settings.json');
    writeFileSync(path, readFileSync(path, 'utf8').replaceAll('\\"$HOME/.svc/bin/svc-hook\\" hook-', 'svc hook-'));
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(0);
    expect(byName(checks, 'hooks.Stop')).toMatchObject({ status: 'warn', fix: 'svc init' });
    expect(byName(checks, 'hooks.Stop').message).toMatch(/older install/);
  });

  it("files that name this machine's paths (an older svc init) are a warning, and init rewrites them", async () => {
    const s = await installed();
    const settings = join(s.project, '.claude', 'settings.json');
    writeFileSync(settings, readFileSync(settings, 'utf8').replaceAll('\\"$HOME/.svc/bin/svc-hook\\"', s.shim));
    const mcp = join(s.project, '.mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: { svc: { type: 'stdio', command: s.shim, args: ['mcp'] } } }));
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(0);
    expect(byName(checks, 'claude.mcp')).toMatchObject({ status: 'warn', message: expect.stringMatching(/names this machine's paths/) });
    expect(byName(checks, 'hooks.UserPromptSubmit').message).toMatch(/hook-inject names this machine's path/);
    expect((await s.run(['init'])).code).toBe(0);
    const again = await s.doctor();
    expect(again.checks.filter((c) => c.status !== 'ok' && c.check !== 'embedder')).toEqual([]);
    expect(readFileSync(settings, 'utf8')).not.toContain(s.home);
  });

  it("sees what Claude Code decides itself: the server's approval and the folder's trust", async () => {
    const s = await installed();
    const local = join(s.project, '.claude', 'settings.local.json');
    writeFileSync(local, JSON.stringify({ disabledMcpjsonServers: ['svc'] }));
    let r = await s.doctor();
    expect(r.run.code).toBe(1);
    expect(byName(r.checks, 'claude.approval')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/was rejected/),
      fix: expect.stringMatching(/^svc init/),
    });
    writeFileSync(local, '{}');
    r = await s.doctor();
    expect(byName(r.checks, 'claude.approval')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/awaits approval: Claude Code shows it as pending/),
    });
    // Approval in the user's own settings counts too.
    mkdirSync(join(s.home, '.claude'), { recursive: true });
    writeFileSync(join(s.home, '.claude', 'settings.json'), JSON.stringify({ enabledMcpjsonServers: ['svc'] }));
    r = await s.doctor();
    expect(byName(r.checks, 'claude.approval')).toMatchObject({
      status: 'ok',
      message: expect.stringContaining(join(s.home, '.claude', 'settings.json')),
    });

    writeFileSync(join(s.home, '.claude.json'), JSON.stringify({ projects: {} }));
    r = await s.doctor();
    expect(r.run.code).toBe(0); // a warning: claude -p still runs the hooks
    expect(byName(r.checks, 'claude.trust')).toMatchObject({
      status: 'warn',
      fix: `run claude in ${s.project} once and accept the trust dialog`,
    });
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

  it('SVC_PATH pointing at a file fails storage with the fix, and learn says the same', async () => {
    const s = await installed();
    const file = join(s.home, 'not-a-folder');
    writeFileSync(file, 'x');
    const r = await s.run(['doctor', '--no-handshake', '--json'], { SVC_PATH: file });
    const checks = JSON.parse(r.stdout) as Check[];
    expect(byName(checks, 'storage')).toMatchObject({ status: 'fail', fix: expect.stringMatching(/point SVC_PATH .* at a folder/) });
    expect(byName(checks, 'storage').message).toMatch(/is a file, not a folder/);
    const learned = await s.run(['learn', 'x', '--no-json'], { SVC_PATH: file });
    expect(learned.code).toBe(1);
    expect(learned.stderr).toBe(`svc: the store path ${file} is a file, not a folder: point SVC_PATH or --path at a folder\n`);
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
    const crashed = await runProbe(
      [process.execPath, '-e', 'process.stderr.write("loader died\\n"); process.kill(process.pid, "SIGSEGV")'],
      10_000,
    );
    expect(crashed.signal).toBe('SIGSEGV');
    const verdict = embedderVerdict(crashed, 'bge-small-en-v1.5', '/store/models/fast-bge-small-en-v1.5');
    expect(verdict).toMatchObject({
      check: 'embedder',
      status: 'fail',
      fix: 'rm -rf /store/models/fast-bge-small-en-v1.5 && svc recall "test"',
    });
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

  it('handshakes with the real `svc mcp` as init configured it, for Claude Code and Cursor', async () => {
    const s = await installed({ cursor: true });
    const { run, checks } = await s.doctor([]);
    expect(run.code, JSON.stringify(checks, null, 2)).toBe(0);
    expect(byName(checks, 'claude.handshake')).toMatchObject({
      status: 'ok',
      message: expect.stringMatching(/^live MCP handshake: 39 tools \(full profile\), ready in \d+ ms$/),
    });
    expect(byName(checks, 'cursor.handshake')).toMatchObject({
      status: 'ok',
      message: expect.stringMatching(/ 11 tools \(lean profile\)/),
    });

    // A Claude Code entry whose server does not start fails its handshake, naming the command.
    const mcpPath = join(s.project, '.mcp.json');
    const mcp = readJson(mcpPath);
    mcp.mcpServers.svc = { command: process.execPath, args: ['-e', 'process.exit(3)', 'mcp'] };
    writeJson(mcpPath, mcp);
    const broken = await s.doctor([]);
    expect(broken.run.code).toBe(1);
    expect(byName(broken.checks, 'claude.handshake')).toMatchObject({
      status: 'fail',
      fix: expect.stringMatching(/^svc init; if it still fails, run /),
    });
    expect(byName(broken.checks, 'claude.handshake').message).toMatch(/^MCP handshake with `.*process\.exit\(3\).*` failed: /);
  });

  it("shows the hooks' recent failures, which the host never sees", async () => {
    const s = await installed();
    const event = JSON.stringify({
      session_id: 's1',
      hook_event_name: 'UserPromptSubmit',
      prompt: 'when do deploys happen',
      cwd: s.project,
    });
    // Out of time: the hook answers nothing and exits 0, as the host needs; the failure is logged.
    const hook = await svc(['hook-inject'], {
      cwd: s.project,
      input: event,
      env: { HOME: s.home, SVC_PATH: '', SVC_HOOK_TIMEOUT_MS: '1' },
    });
    expect({ code: hook.code, stdout: hook.stdout, stderr: hook.stderr }).toEqual({ code: 0, stdout: '', stderr: '' });
    const { run, checks } = await s.doctor();
    expect(run.code).toBe(0); // a warning
    const f = byName(checks, 'hooks.failures') as Check & { details: string[] };
    expect(f).toMatchObject({ status: 'warn', fix: expect.stringContaining(join(s.store, 'logs', 'hook-failures.jsonl')) });
    expect(f.details).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\dT.* hook-inject: hook-inject ran out of time$/)]);
    const text = await s.run(['doctor', '--no-handshake', '--no-json']);
    expect(text.stdout).toMatch(
      /^warn {2}hooks\.failures .*not shown to the host; newest first:\n\s+\d{4}-.* hook-inject: hook-inject ran out of time\n\s+fix: the full log is /m,
    );
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
