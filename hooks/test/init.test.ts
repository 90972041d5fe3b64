import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { CLI } from '../../engine/test/support/run-svc.js';
import { shimScript } from '../install/wiring.js';
import { hostSandbox, snapshot, write } from './support/host-sandbox.js';

// `svc init` and `svc init-remote` as real processes, in a temporary HOME and project folder.

/** A plain project folder (no .git unless a test adds one), and no embedder settings, as on a fresh machine. */
function sandbox() {
  const s = hostSandbox({ label: 'init', git: false, env: { SVC_EMBED: '', SVC_EMBED_MODEL: '' } });
  return { ...s, shim: join(s.home, '.svc', 'bin', 'svc-hook') };
}

const readJson = (path: string): any => JSON.parse(readFileSync(path, 'utf8'));

const EXPECTED_CLAUDE = {
  SessionStart: ['hook-session-guard', 'hook-session-remind', 'hook-session-mark'],
  UserPromptSubmit: ['hook-inject', 'hook-correction-detect'],
  PostToolUse: ['hook-observe', 'hook-revert-detect'],
  Stop: ['hook-learn-check'],
  PreCompact: ['hook-session-remind'],
  SessionEnd: ['hook-session-mark'],
};

/** The svc hook names wired on each event, read back from settings.json. */
function svcHooksByEvent(settings: any): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [event, groups] of Object.entries<any[]>(settings.hooks ?? {})) {
    const names = groups
      .flatMap((g) => g.hooks ?? [])
      .filter((h: any) => /svc-hook/.test(h.command))
      .map((h: any) => h.command.split(' ').pop());
    if (names.length) out[event] = names;
  }
  return out;
}

const SHIM_CMD = '"$HOME/.svc/bin/svc-hook"';
const MCP_CLAUDE = { type: 'stdio', command: '${HOME}/.svc/bin/svc-hook', args: ['mcp'], alwaysLoad: true };

describe('svc init', () => {
  it('wires Claude Code in the project: shim, synchronous hooks, MCP server, approval; no file names this machine', async () => {
    const s = sandbox();
    const { run, data } = await s.json(['init']);
    expect(run.code, run.stderr).toBe(0);

    // The shim: executable sh that execs this node with this install's cli.js.
    const shim = readFileSync(s.shim, 'utf8');
    expect(shim.startsWith('#!/bin/sh\n')).toBe(true);
    expect(shim).toContain(`exec ${process.execPath} ${CLI} "$@"`);
    expect(statSync(s.shim).mode & 0o111).toBe(0o111);

    const settings = readJson(join(s.project, '.claude', 'settings.json'));
    expect(svcHooksByEvent(settings)).toEqual(EXPECTED_CLAUDE);
    const inject = settings.hooks.UserPromptSubmit[0].hooks[0];
    // Synchronous, so the memory reaches the prompt it was asked for; the host's limit is the outer one.
    expect(inject).toEqual({ type: 'command', command: `${SHIM_CMD} hook-inject`, timeout: 10 });
    expect(settings.hooks.PostToolUse[0].matcher).toBe('*');
    for (const h of Object.values<any[]>(settings.hooks).flatMap((g) => g.flatMap((x) => x.hooks))) expect(h.async).toBeUndefined();
    expect(settings.hooks.Stop[0].hooks[0].timeout).toBe(30);

    const mcp = readJson(join(s.project, '.mcp.json'));
    expect(mcp.mcpServers.svc).toEqual(MCP_CLAUDE);
    // The committed files work on any teammate's machine: no path of this one in them.
    for (const f of ['.mcp.json', join('.claude', 'settings.json')]) expect(readFileSync(join(s.project, f), 'utf8')).not.toContain(s.home);
    // The server is approved for this person, in the local (gitignored) settings.
    expect(readJson(join(s.project, '.claude', 'settings.local.json'))).toEqual({ enabledMcpjsonServers: ['svc'] });
    expect(readFileSync(join(s.project, '.gitignore'), 'utf8')).toBe('.claude/settings.local.json\n');

    // Nothing user-global in project mode, no desktop (not installed), no editor (no .cursor/).
    expect(existsSync(join(s.home, '.claude.json'))).toBe(false);
    expect(existsSync(join(s.home, '.claude', 'settings.json'))).toBe(false);
    expect(existsSync(join(s.project, '.cursor'))).toBe(false);
    expect(data.written.sort()).toEqual(
      [
        s.shim,
        join(s.project, '.claude', 'settings.json'),
        join(s.project, '.mcp.json'),
        join(s.project, '.claude', 'settings.local.json'),
        join(s.project, '.gitignore'),
      ].sort(),
    );
    // Claude Code has not been told to trust the folder yet: init says what is left to do.
    expect(data.notes).toContainEqual(expect.stringMatching(/^Claude Code has not been told to trust .*accept the trust dialog/));
    expect(data.skipped.map((k: any) => k.what).sort()).toEqual([
      'Claude Desktop',
      'Codex CLI',
      'Cursor',
      'Gemini CLI',
      'GitHub Copilot CLI',
      'VS Code',
      'opencode',
    ]);

    const text = await s.run(['init', '--no-json']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/unchanged\s+~\/\.svc\/bin\/svc-hook/);
    expect(text.stdout).toMatch(/skipped\s+Claude Desktop: not installed/);
  });

  it("--async-inject installs the spec's background inject; --no-approve leaves approval to Claude Code; a rejection is lifted by init", async () => {
    const s = sandbox();
    const { run, data } = await s.json(['init', '--async-inject', '--no-approve']);
    expect(run.code, run.stderr).toBe(0);
    const settings = readJson(join(s.project, '.claude', 'settings.json'));
    expect(settings.hooks.UserPromptSubmit[0].hooks[0]).toEqual({
      type: 'command',
      command: `${SHIM_CMD} hook-inject`,
      timeout: 90,
      async: true,
    });
    expect(existsSync(join(s.project, '.claude', 'settings.local.json'))).toBe(false);
    expect(data.notes).toContainEqual(expect.stringMatching(/pending until you approve it/));

    write(
      join(s.project, '.claude', 'settings.local.json'),
      JSON.stringify({ permissions: { allow: ['Bash(ls)'] }, disabledMcpjsonServers: ['svc', 'other'] }),
    );
    expect((await s.run(['init'])).code).toBe(0);
    expect(readJson(join(s.project, '.claude', 'settings.local.json'))).toEqual({
      permissions: { allow: ['Bash(ls)'] },
      disabledMcpjsonServers: ['other'],
      enabledMcpjsonServers: ['svc'],
    });
    expect(readJson(join(s.project, '.claude', 'settings.json')).hooks.UserPromptSubmit[0].hooks[0].async).toBeUndefined();
  });

  it('is idempotent: a second run leaves every file byte-identical and writes nothing', async () => {
    const s = sandbox();
    mkdirSync(join(s.home, '.config', 'Claude'), { recursive: true });
    mkdirSync(join(s.project, '.cursor'));
    write(join(s.project, '.gitignore'), 'node_modules\ndist');
    expect((await s.run(['init', '--scope', 'project:demo', '--domain', 'lang.ts'])).code).toBe(0);
    const first = snapshot(s.home, s.project);
    const again = await s.json(['init', '--scope', 'project:demo', '--domain', 'lang.ts']);
    expect(again.run.code).toBe(0);
    expect(again.data.written).toEqual([]);
    expect(again.data.files.every((f: any) => f.status === 'unchanged')).toBe(true);
    expect(snapshot(s.home, s.project)).toEqual(first);
    expect(readFileSync(join(s.project, '.gitignore'), 'utf8')).toBe(
      'node_modules\ndist\n.claude/settings.local.json\n.cursor/rules/svc-dynamic*.mdc\n',
    );
  });

  it('keeps every entry the user had and migrates older svc entries', async () => {
    const s = sandbox();
    const userSettings = {
      model: 'opus',
      permissions: { allow: ['Bash(npm test:*)'] },
      hooks: {
        UserPromptSubmit: [
          {
            hooks: [
              { type: 'command', command: 'echo prompt >> /tmp/log' },
              { type: 'command', command: 'svc hook-inject', timeout: 30 }, // an older svc install
            ],
          },
        ],
        PostToolUse: [{ matcher: 'Edit|Write', hooks: [{ type: 'command', command: 'npx prettier --write .' }] }],
        Notification: [{ hooks: [{ type: 'command', command: 'notify-send claude' }] }],
        SubagentStop: [{ hooks: [{ type: 'command', command: 'npx svc hook-observe' }] }], // older svc, event no longer used
      },
      env: { FOO: '1' },
    };
    write(join(s.project, '.claude', 'settings.json'), JSON.stringify(userSettings, null, 4));
    write(
      join(s.project, '.mcp.json'),
      JSON.stringify({ mcpServers: { github: { command: 'npx', args: ['-y', 'gh-mcp'] }, svc: { command: 'svc', args: ['mcp'] } } }),
    );
    mkdirSync(join(s.home, '.config', 'Claude'), { recursive: true });
    write(
      join(s.home, '.config', 'Claude', 'claude_desktop_config.json'),
      JSON.stringify({ mcpServers: { files: { command: 'fs-mcp' } }, globalShortcut: 'Ctrl+Space' }),
    );

    expect((await s.run(['init'])).code).toBe(0);
    const settings = readJson(join(s.project, '.claude', 'settings.json'));
    expect(Object.keys(settings)).toEqual(['model', 'permissions', 'hooks', 'env']);
    expect(settings.model).toBe('opus');
    expect(settings.permissions).toEqual(userSettings.permissions);
    expect(settings.env).toEqual({ FOO: '1' });
    expect(settings.hooks.UserPromptSubmit[0]).toEqual({ hooks: [{ type: 'command', command: 'echo prompt >> /tmp/log' }] });
    expect(settings.hooks.PostToolUse[0]).toEqual(userSettings.hooks.PostToolUse[0]);
    expect(settings.hooks.Notification).toEqual(userSettings.hooks.Notification);
    expect(settings.hooks.SubagentStop).toBeUndefined();
    expect(svcHooksByEvent(settings)).toEqual(EXPECTED_CLAUDE);
    expect(JSON.stringify(settings)).not.toMatch(/"svc hook-|npx svc/);
    // Two-space JSON, whatever the user's file used.
    expect(readFileSync(join(s.project, '.claude', 'settings.json'), 'utf8')).toBe(JSON.stringify(settings, null, 2) + '\n');

    const mcp = readJson(join(s.project, '.mcp.json'));
    expect(Object.keys(mcp.mcpServers)).toEqual(['github', 'svc']);
    expect(mcp.mcpServers.github).toEqual({ command: 'npx', args: ['-y', 'gh-mcp'] });
    expect(mcp.mcpServers.svc).toEqual(MCP_CLAUDE);

    const desktop = readJson(join(s.home, '.config', 'Claude', 'claude_desktop_config.json'));
    expect(desktop.globalShortcut).toBe('Ctrl+Space');
    expect(desktop.mcpServers.files).toEqual({ command: 'fs-mcp' });
    expect(desktop.mcpServers.svc).toEqual({ command: s.shim, args: ['mcp'] });
  });

  it('--global writes the user-level settings and ~/.claude.json, keeping their other keys', async () => {
    const s = sandbox();
    write(join(s.home, '.claude.json'), JSON.stringify({ numStartups: 4, projects: { '/x': { allowedTools: [] } } }, null, 2));
    chmodSync(join(s.home, '.claude.json'), 0o600);
    const { run } = await s.json(['init', '--global', '--no-desktop']);
    expect(run.code, run.stderr).toBe(0);
    const settings = readJson(join(s.home, '.claude', 'settings.json'));
    expect(svcHooksByEvent(settings)).toEqual(EXPECTED_CLAUDE);
    const state = readJson(join(s.home, '.claude.json'));
    expect(state.numStartups).toBe(4);
    expect(state.projects).toEqual({ '/x': { allowedTools: [] } });
    expect(state.mcpServers.svc).toEqual(MCP_CLAUDE);
    expect(statSync(join(s.home, '.claude.json')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(s.project, '.claude'))).toBe(false); // nothing to approve: user-scope servers load as they are
    expect(existsSync(join(s.project, '.mcp.json'))).toBe(false);
    expect((await s.run(['init', '--global', '--project'])).code).toBe(1);
  });

  it('registers in the desktop assistant when it is installed, unless --no-desktop; SVC_PATH goes into the shim only', async () => {
    const s = sandbox();
    const desktopConfig = join(s.home, '.config', 'Claude', 'claude_desktop_config.json');
    mkdirSync(join(s.home, '.config', 'Claude'), { recursive: true });
    const skipped = await s.json(['init', '--no-desktop']);
    expect(skipped.data.skipped).toContainEqual({ what: 'Claude Desktop', reason: '--no-desktop' });
    expect(existsSync(desktopConfig)).toBe(false);

    const store = join(s.home, 'elsewhere', 'store');
    const { run } = await s.json(['init'], { env: { SVC_PATH: store } });
    expect(run.code).toBe(0);
    // The desktop's config is this machine's own file: the shim's absolute path.
    expect(readJson(desktopConfig).mcpServers.svc).toEqual({ command: s.shim, args: ['mcp'] });
    expect(readJson(join(s.project, '.mcp.json')).mcpServers.svc).toEqual(MCP_CLAUDE);
    // Hooks and servers get the store from the shim (the host's own SVC_PATH still wins): no project file names it.
    expect(readFileSync(s.shim, 'utf8')).toContain(`[ -n "$SVC_PATH" ] || SVC_PATH=${store}\nexport SVC_PATH\n`);
  });

  it('sets up Cursor with --cursor, when .cursor/ exists, and not with --no-cursor', async () => {
    const s = sandbox();
    const cursor = join(s.project, '.cursor');

    // Auto-detection off: no .cursor/ folder.
    await s.run(['init', '--no-desktop']);
    expect(existsSync(cursor)).toBe(false);

    // --no-cursor wins over an existing folder.
    mkdirSync(cursor);
    write(
      join(cursor, 'hooks.json'),
      JSON.stringify({
        version: 1,
        hooks: { afterFileEdit: [{ command: './format.sh' }], beforeShellExecution: [{ command: './guard.sh' }] },
      }),
    );
    await s.run(['init', '--no-cursor', '--no-desktop']);
    expect(existsSync(join(cursor, 'mcp.json'))).toBe(false);
    expect(readJson(join(cursor, 'hooks.json')).hooks.sessionStart).toBeUndefined();

    // Auto-detected.
    const { run, data } = await s.json(['init', '--no-desktop']);
    expect(run.code).toBe(0);
    expect(readJson(join(cursor, 'mcp.json')).mcpServers.svc).toEqual({
      command: 'sh',
      args: ['-c', 'exec "$HOME/.svc/bin/svc-hook" mcp'],
      env: { SVC_TOOL_PROFILE: 'lean' },
    });
    const hooks = readJson(join(cursor, 'hooks.json'));
    expect(hooks.version).toBe(1);
    expect(hooks.hooks.beforeShellExecution).toEqual([{ command: './guard.sh' }]);
    expect(hooks.hooks.afterFileEdit).toEqual([{ command: './format.sh' }, { command: `${SHIM_CMD} hook-cursor-after-edit` }]);
    expect(hooks.hooks.sessionStart).toEqual([{ command: `${SHIM_CMD} hook-cursor-session-start` }]);
    expect(hooks.hooks.beforeSubmitPrompt).toEqual([{ command: `${SHIM_CMD} hook-cursor-prompt` }]);
    expect(hooks.hooks.stop).toEqual([{ command: `${SHIM_CMD} hook-cursor-stop` }]);
    for (const f of ['mcp.json', 'hooks.json']) expect(readFileSync(join(cursor, f), 'utf8')).not.toContain(s.home);
    const rules = readFileSync(join(cursor, 'rules', 'svc.mdc'), 'utf8');
    expect(rules).toMatch(/^---\ndescription: .+\nalwaysApply: true\n---\n/);
    expect(readFileSync(join(s.project, '.gitignore'), 'utf8')).toBe('.claude/settings.local.json\n.cursor/rules/svc-dynamic*.mdc\n');
    expect(data.written).toContain(join(cursor, 'rules', 'svc.mdc'));

    // --cursor creates the folder where there was none.
    const t = sandbox();
    expect((await t.run(['init', '--cursor', '--no-desktop'])).code).toBe(0);
    expect(existsSync(join(t.project, '.cursor', 'hooks.json'))).toBe(true);
    expect(existsSync(join(t.project, '.cursor', 'mcp.json'))).toBe(true);
  });

  it('--scope and --domain write .svc.yaml here, keeping the keys and comments already there', async () => {
    const s = sandbox();
    const path = join(s.project, '.svc.yaml');
    write(path, '# team settings\nremote_url: https://hub.example\nscope: project:old\n');
    const { run } = await s.json(['init', '--no-desktop', '--scope', 'project:new', '--domain', 'lang.typescript']);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(path, 'utf8')).toBe(
      '# team settings\nremote_url: https://hub.example\nscope: project:new\ndomain: lang.typescript\n',
    );

    const bad = await s.run(['init', '--scope', 'has space']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/scope/);
  });

  it('a malformed settings file is a clear error: exit 1, that file and every other untouched', async () => {
    const s = sandbox();
    const path = join(s.project, '.claude', 'settings.json');
    const broken = '{\n  "hooks": {\n    "Stop": [\n';
    write(path, broken);
    const r = await s.run(['init', '--no-json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(path);
    expect(r.stderr).toMatch(/not valid JSON/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(path, 'utf8')).toBe(broken);
    expect(existsSync(s.shim)).toBe(false);
    expect(existsSync(join(s.project, '.mcp.json'))).toBe(false);

    write(path, JSON.stringify({ hooks: { Stop: { command: 'x' } } }));
    const shape = await s.run(['init', '--no-json']);
    expect(shape.code).toBe(1);
    expect(shape.stderr).toMatch(/hooks\.Stop" must be an array/);
  });
});

describe('svc init-remote', () => {
  const GOOD = 'svc_sk_good';
  let server: Server;
  let url: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/api/v1/me' && req.headers.authorization === `Bearer ${GOOD}`) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ user: { email: 'ada@example.com' }, scopes: ['global', 'group:eng'] }));
        return;
      }
      res.writeHead(401, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'unauthorized', status: 401 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('tests the token, then writes remote_url and remote_scopes to .svc.yaml and the token to .svc.local.yaml (0600, gitignored)', async () => {
    const s = sandbox();
    write(join(s.project, '.svc.yaml'), 'scope: project:demo\n');
    write(join(s.project, '.gitignore'), 'dist/\n');
    const { run, data } = await s.json(['init-remote', '--url', `${url}/`, '--token', GOOD, '--scopes', 'global,group:eng']);
    expect(run.code, run.stderr).toBe(0);
    expect(data.identity).toBe('ada@example.com');
    const yaml = readFileSync(join(s.project, '.svc.yaml'), 'utf8');
    expect(yaml).toBe(`scope: project:demo\nremote_url: ${url}\nremote_scopes:\n  - global\n  - group:eng\n`);
    expect(readFileSync(join(s.project, '.svc.local.yaml'), 'utf8')).toBe(`remote_token: ${GOOD}\n`);
    expect(statSync(join(s.project, '.svc.local.yaml')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(s.project, '.gitignore'), 'utf8')).toBe('dist/\n.svc.local.yaml\n');
    expect(run.stdout).not.toContain(GOOD);
  });

  it('a rejected token or an unreachable server exits 1 and writes nothing', async () => {
    const s = sandbox();
    const bad = await s.run(['init-remote', '--url', url, '--token', 'svc_sk_wrong', '--no-json']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/rejected the token \(HTTP 401/);
    expect(readdirSync(s.project)).toEqual([]);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = await s.run(['init-remote', '--url', `http://127.0.0.1:${port}`, '--token', GOOD, '--no-json']);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach/);
    expect(readdirSync(s.project)).toEqual([]);

    expect((await s.run(['init-remote', '--token', GOOD])).code).toBe(1);
  });

  it('--no-gitignore leaves .gitignore alone', async () => {
    const s = sandbox();
    const r = await s.run(['init-remote', '--url', url, '--token', GOOD, '--no-gitignore']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(s.project, '.svc.yaml'))).toBe(true);
    expect(existsSync(join(s.project, '.svc.local.yaml'))).toBe(true);
    expect(existsSync(join(s.project, '.gitignore'))).toBe(false);
    expect(r.stderr).toMatch(/not gitignored/);
  });

  it('--verify reads the nearest .svc.yaml up to the repository root: exit 0 when the server accepts, 2 when not', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.git'));
    const sub = join(s.project, 'src', 'deep');
    mkdirSync(sub, { recursive: true });

    const none = await s.run(['init-remote', '--verify'], { cwd: sub });
    expect(none.code).toBe(2);

    expect((await s.run(['init-remote', '--url', url, '--token', GOOD])).code).toBe(0);
    const ok = await s.json(['init-remote', '--verify'], { cwd: sub });
    expect(ok.run.code).toBe(0);
    expect(ok.data).toMatchObject({ ok: true, path: join(s.project, '.svc.yaml'), remote_url: url });

    // Running it again from the subfolder updates the same file rather than shadowing it.
    expect((await s.run(['init-remote', '--url', url, '--token', GOOD], { cwd: sub })).code).toBe(0);
    expect(existsSync(join(sub, '.svc.yaml'))).toBe(false);

    writeFileSync(join(s.project, '.svc.local.yaml'), `remote_token: svc_sk_revoked\n`);
    const rejected = await s.run(['init-remote', '--verify', '--no-json'], { cwd: sub });
    expect(rejected.code).toBe(2);
    expect(rejected.stderr).toMatch(/rejected the token/);

    writeFileSync(join(s.project, '.svc.yaml'), `remote_url: http://127.0.0.1:1\n`);
    writeFileSync(join(s.project, '.svc.local.yaml'), `remote_token: ${GOOD}\n`);
    expect((await s.run(['init-remote', '--verify'], { cwd: sub })).code).toBe(2);
  });
});

describe('the hook shim', () => {
  // The shim as svc init writes it, run by sh, with a script in Node's place that prints what it was given.
  const dir = mkdtempSync(join(tmpdir(), 'svc-shim-'));
  const probe = join(dir, 'probe.sh');
  writeFileSync(probe, 'echo "$1 NODE=$NODE_EXTRA_CA_CERTS SVC=$SVC_EXTRA_CA_CERTS"\n');
  const shim = join(dir, 'svc-hook');
  writeFileSync(shim, shimScript('/bin/sh', probe));
  const run = (arg: string, env: Record<string, string>) => {
    const base = { ...process.env };
    delete base.NODE_EXTRA_CA_CERTS;
    delete base.SVC_EXTRA_CA_CERTS;
    return execFileSync('sh', [shim, arg], { env: { ...base, ...env }, encoding: 'utf8' }).trim();
  };

  it('hands NODE_EXTRA_CA_CERTS to svc for hooks, which Node would read at every start, and leaves it to the MCP server', () => {
    expect(run('hook-inject', { NODE_EXTRA_CA_CERTS: '/corp/ca.pem' })).toBe('hook-inject NODE= SVC=/corp/ca.pem');
    expect(run('mcp', { NODE_EXTRA_CA_CERTS: '/corp/ca.pem' })).toBe('mcp NODE=/corp/ca.pem SVC=');
    // One the person set themselves is theirs: nothing moves.
    expect(run('hook-inject', { NODE_EXTRA_CA_CERTS: '/corp/ca.pem', SVC_EXTRA_CA_CERTS: '/own.pem' })).toBe(
      'hook-inject NODE=/corp/ca.pem SVC=/own.pem',
    );
    expect(run('hook-inject', {})).toBe('hook-inject NODE= SVC=');
  });
});
