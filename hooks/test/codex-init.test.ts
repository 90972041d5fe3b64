import { describe, it, expect } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from '@decimalturn/toml-patch';
import { hostSandbox, write } from './support/host-sandbox.js';

// `svc init --codex` and svc doctor's Codex CLI checks as real processes on the files, in a
// temporary HOME and git project. (codex.test.ts runs the real Codex CLI on what init writes.)

const sandbox = () => hostSandbox({ label: 'codex-init' });

const read = (path: string): string => readFileSync(path, 'utf8');
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed TOML of the files under test
const toml = (path: string): any => parse(read(path));

describe('svc init --codex', () => {
  it("sets Codex up where .codex/ exists: hooks, MCP server, the hooks' trust; keeps the person's entries and comments; a second run changes nothing", async () => {
    const s = sandbox();
    write(
      join(s.project, '.codex', 'config.toml'),
      '# project settings\nmodel = "o3" # ours\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n',
    );
    write(
      join(s.project, '.codex', 'hooks.json'),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: './notify.sh', timeout: 5 }] }] } }),
    );
    write(join(s.home, '.codex', 'config.toml'), '# mine\n[projects."/elsewhere"]\ntrust_level = "trusted"\n');

    const { run, data } = await s.json(['init', '--no-desktop']);
    expect(run.code, run.stderr).toBe(0);
    const config = read(join(s.project, '.codex', 'config.toml'));
    expect(config).toContain('# project settings');
    expect(config).toContain('model = "o3" # ours');
    expect(toml(join(s.project, '.codex', 'config.toml')).mcp_servers).toEqual({
      docs: { command: 'docs-mcp' },
      svc: { command: 'sh', args: ['-c', 'exec "$HOME/.svc/bin/svc-hook" mcp'], env_vars: ['SVC_PATH', 'SVC_EMBED'] },
    });

    const hooks = JSON.parse(read(join(s.project, '.codex', 'hooks.json'))).hooks;
    expect(Object.keys(hooks).sort()).toEqual(['PostToolUse', 'SessionStart', 'Stop', 'UserPromptSubmit']);
    // The person's Stop hook stays first; svc's comes after it, naming the host.
    expect(hooks.Stop[0].hooks[0].command).toBe('./notify.sh');
    expect(hooks.Stop[1].hooks[0]).toEqual({
      type: 'command',
      command: '"$HOME/.svc/bin/svc-hook" hook-learn-check --host codex',
      timeout: 30,
    });
    expect(JSON.stringify(hooks)).not.toContain(s.home); // committable: no machine paths

    // Trust for svc's eight hooks only, keyed by their positions; the person's own hook is left to Codex's review.
    const user = read(join(s.home, '.codex', 'config.toml'));
    expect(user).toContain('# mine');
    const state = toml(join(s.home, '.codex', 'config.toml')).hooks.state;
    const hooksPath = join(s.project, '.codex', 'hooks.json');
    expect(Object.keys(state).sort()).toEqual(
      [
        'post_tool_use:0:0',
        'post_tool_use:0:1',
        'session_start:0:0',
        'session_start:0:1',
        'session_start:0:2',
        'stop:1:0',
        'user_prompt_submit:0:0',
        'user_prompt_submit:0:1',
      ].map((k) => `${hooksPath}:${k}`),
    );
    for (const v of Object.values(state) as Array<{ trusted_hash: string }>) expect(v.trusted_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(data.notes).toContainEqual(expect.stringMatching(/^Codex CLI reads .* only once you trust /));

    const again = await s.json(['init', '--no-desktop']);
    expect(again.data.written).toEqual([]);
  });

  it('--no-codex skips it even where .codex/ exists; no folder, no Codex files', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.codex'));
    const skipped = await s.json(['init', '--no-desktop', '--no-codex']);
    expect(skipped.data.skipped).toContainEqual({ what: 'Codex CLI', reason: '--no-codex' });
    expect(existsSync(join(s.project, '.codex', 'hooks.json'))).toBe(false);

    const bare = sandbox();
    const none = await bare.json(['init', '--no-desktop']);
    expect(none.data.skipped).toContainEqual({ what: 'Codex CLI', reason: expect.stringContaining('use --codex to set it up') });
    expect(existsSync(join(bare.home, '.codex'))).toBe(false);
  });

  it('--global writes ~/.codex/hooks.json and one ~/.codex/config.toml with the server and the trust', async () => {
    const s = sandbox();
    const { run } = await s.json(['init', '--global', '--no-desktop', '--codex']);
    expect(run.code, run.stderr).toBe(0);
    const config = toml(join(s.home, '.codex', 'config.toml'));
    expect(config.mcp_servers.svc.args).toEqual(['-c', 'exec "$HOME/.svc/bin/svc-hook" mcp']);
    expect(Object.keys(config.hooks.state)).toHaveLength(8);
    expect(existsSync(join(s.home, '.codex', 'hooks.json'))).toBe(true);
    expect(existsSync(join(s.project, '.codex'))).toBe(false);
  });

  it('stops on a config.toml that is not TOML, naming it, and writes nothing', async () => {
    const s = sandbox();
    write(join(s.project, '.codex', 'config.toml'), 'model = "o3\n[broken\n');
    const r = await s.run(['init', '--no-desktop', '--no-json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(join(s.project, '.codex', 'config.toml'));
    expect(r.stderr).toMatch(/is not valid TOML/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(join(s.project, '.codex', 'hooks.json'))).toBe(false);
    expect(existsSync(join(s.home, '.svc', 'bin', 'svc-hook'))).toBe(false);
  });
});

describe('svc doctor: Codex CLI', () => {
  it('passes after init once the project is trusted, and names the fix for an untrusted project or a hook changed by hand', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.codex'));
    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    const checks = () => s.doctorChecks('codex.');

    let c = await checks();
    expect(c['codex.hooks'].status).toBe('ok');
    expect(c['codex.trust'].status).toBe('ok');
    expect(c['codex.mcp'].status).toBe('ok');
    expect(c['codex.project']).toMatchObject({ status: 'warn', fix: expect.stringContaining('Trust this folder') });

    writeFileSync(
      join(s.home, '.codex', 'config.toml'),
      `${read(join(s.home, '.codex', 'config.toml'))}\n[projects."${s.project}"]\ntrust_level = "trusted"\n`,
    );
    // A hook edited by hand is no longer the one that was trusted.
    const hooksPath = join(s.project, '.codex', 'hooks.json');
    writeFileSync(hooksPath, read(hooksPath).replace('"timeout": 30', '"timeout": 31'));
    c = await checks();
    expect(c['codex.project'].status).toBe('ok');
    expect(c['codex.trust']).toMatchObject({ status: 'fail', fix: expect.stringContaining('svc init --codex') });

    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    c = await checks();
    expect(c['codex.trust'].status).toBe('ok');
  });
});
