import { describe, it, expect } from 'vitest';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'jsonc-parser';
import { hostSandbox, write } from './support/host-sandbox.js';

// `svc init --opencode` and svc doctor's opencode checks as real processes on the files, in a
// temporary HOME and git project. (opencode.test.ts runs the real opencode on what init writes;
// opencode-plugin.test.ts runs the plugin's hooks against a stand-in shim.)

const sandbox = () => hostSandbox({ label: 'opencode-init' });

const read = (path: string): string => readFileSync(path, 'utf8');
const SVC_ENTRY = { type: 'local', command: ['sh', '-c', 'exec "$HOME/.svc/bin/svc-hook" mcp'], enabled: true, timeout: 30000 };

describe('svc init --opencode', () => {
  it("sets opencode up where .opencode/ exists: svc's server in opencode.json, the plugin; a second run changes nothing", async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.opencode'));
    const { run, data } = await s.json(['init', '--no-desktop']);
    expect(run.code, run.stderr).toBe(0);
    const config = parse(read(join(s.project, 'opencode.json')));
    expect(config).toEqual({ $schema: 'https://opencode.ai/config.json', mcp: { svc: SVC_ENTRY } });
    const plugin = read(join(s.project, '.opencode', 'plugin', 'svc.js'));
    expect(plugin).toContain('export const SvcPlugin');
    expect(plugin).toContain('"hook-inject",10');
    // Committable: no path of this machine, and nothing opencode would have to install.
    expect(plugin + read(join(s.project, 'opencode.json'))).not.toContain(s.home);
    expect([...plugin.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1])).toEqual([
      'node:child_process',
      'node:crypto',
      'node:os',
      'node:path',
    ]);
    expect(data.notes).toContainEqual(expect.stringContaining('`opencode run` exits first'));

    const again = await s.json(['init', '--no-desktop']);
    expect(again.data.written).toEqual([]);
  });

  it("keeps the person's comments, servers and keys in opencode.json, and edits opencode.jsonc when that is the file", async () => {
    const s = sandbox();
    const path = join(s.project, 'opencode.json');
    write(
      path,
      '{\n  // our setup\n  "model": "anthropic/claude-sonnet-4-5",\n  "mcp": {\n    "docs": { "type": "remote", "url": "https://docs.example.com/mcp" },\n  },\n}\n',
    );
    expect((await s.run(['init', '--no-desktop', '--opencode'])).code).toBe(0);
    const text = read(path);
    expect(text).toContain('// our setup');
    const config = parse(text) as { model: string; mcp: Record<string, unknown> };
    expect(config.model).toBe('anthropic/claude-sonnet-4-5');
    expect(Object.keys(config.mcp)).toEqual(['docs', 'svc']);
    expect(config.mcp.svc).toEqual(SVC_ENTRY);

    const other = sandbox();
    write(join(other.project, 'opencode.jsonc'), '{\n  // mine\n  "theme": "dark"\n}\n');
    expect((await other.run(['init', '--no-desktop', '--opencode'])).code).toBe(0);
    expect(existsSync(join(other.project, 'opencode.json'))).toBe(false);
    expect(parse(read(join(other.project, 'opencode.jsonc')))).toEqual({ theme: 'dark', mcp: { svc: SVC_ENTRY } });
  });

  it('--no-opencode skips it even where .opencode/ exists; no folder, no opencode files', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.opencode'));
    const skipped = await s.json(['init', '--no-desktop', '--no-opencode']);
    expect(skipped.data.skipped).toContainEqual({ what: 'opencode', reason: '--no-opencode' });
    expect(existsSync(join(s.project, 'opencode.json'))).toBe(false);

    const bare = sandbox();
    const none = await bare.json(['init', '--no-desktop']);
    expect(none.data.skipped).toContainEqual({ what: 'opencode', reason: expect.stringContaining('use --opencode to set it up') });
    expect(existsSync(join(bare.project, '.opencode'))).toBe(false);
  });

  it('--global writes ~/.config/opencode/opencode.json and its plugin/svc.js, nothing in the project', async () => {
    const s = sandbox();
    const { run } = await s.json(['init', '--global', '--no-desktop', '--opencode']);
    expect(run.code, run.stderr).toBe(0);
    const dir = join(s.home, '.config', 'opencode');
    expect((parse(read(join(dir, 'opencode.json'))) as { mcp: unknown }).mcp).toEqual({ svc: SVC_ENTRY });
    expect(read(join(dir, 'plugin', 'svc.js'))).toContain('export const SvcPlugin');
    expect(existsSync(join(s.project, 'opencode.json'))).toBe(false);
    expect(existsSync(join(s.project, '.opencode'))).toBe(false);
  });

  it('stops on an opencode.json that is not JSON, naming it, and writes nothing', async () => {
    const s = sandbox();
    write(join(s.project, 'opencode.json'), '{ "mcp": { "svc": ');
    const r = await s.run(['init', '--no-desktop', '--opencode', '--no-json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(join(s.project, 'opencode.json'));
    expect(r.stderr).toMatch(/is not valid JSON/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(join(s.project, '.opencode', 'plugin', 'svc.js'))).toBe(false);
    expect(existsSync(join(s.home, '.svc', 'bin', 'svc-hook'))).toBe(false);
  });
});

describe('svc doctor: opencode', () => {
  it('passes after init, and names the fix when the server entry or the plugin is missing or not current', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.opencode'));
    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    const checks = () => s.doctorChecks('opencode.');

    let c = await checks();
    expect(c['opencode.mcp'].status).toBe('ok');
    expect(c['opencode.plugin'].status).toBe('ok');

    const configPath = join(s.project, 'opencode.json');
    const pluginPath = join(s.project, '.opencode', 'plugin', 'svc.js');
    writeFileSync(configPath, read(configPath).replace('"enabled": true', '"enabled": false'));
    writeFileSync(pluginPath, read(pluginPath).replace('"hook-inject",10', '"hook-inject",1'));
    c = await checks();
    expect(c['opencode.mcp']).toMatchObject({ status: 'fail', message: expect.stringContaining('disabled'), fix: 'svc init --opencode' });
    expect(c['opencode.plugin']).toMatchObject({ status: 'warn', fix: 'svc init --opencode' });

    writeFileSync(configPath, '{}\n');
    rmSync(pluginPath);
    c = await checks();
    expect(c['opencode.mcp']).toMatchObject({ status: 'fail', fix: 'svc init --opencode' });
    expect(c['opencode.plugin']).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('no svc hook runs'),
      fix: 'svc init --opencode',
    });

    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    c = await checks();
    expect(c['opencode.mcp'].status).toBe('ok');
    expect(c['opencode.plugin'].status).toBe('ok');
  });
});
