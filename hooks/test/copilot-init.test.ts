import { describe, it, expect } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostSandbox, write } from './support/host-sandbox.js';

// `svc init --copilot` and svc doctor's GitHub Copilot CLI checks as real processes on the files,
// in a temporary HOME and git project. (copilot.test.ts runs the real Copilot CLI on what init writes.)

const sandbox = () => hostSandbox({ label: 'copilot-init' });

const read = (path: string): string => readFileSync(path, 'utf8');
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the files' shapes are what the tests check
const readJson = (path: string): any => JSON.parse(read(path));

const SERVER = { type: 'stdio', command: 'sh', args: ['-c', 'exec "$HOME/.svc/bin/svc-hook" mcp'], tools: ['*'] };

describe('svc init --copilot', () => {
  it("sets Copilot up where .github/hooks/ exists: hooks and MCP server, keeping the person's entries; a second run changes nothing", async () => {
    const s = sandbox();
    write(
      join(s.project, '.github', 'mcp.json'),
      JSON.stringify({ mcpServers: { docs: { type: 'local', command: 'docs-mcp', tools: ['*'] } }, extra: 1 }),
    );
    write(
      join(s.project, '.github', 'hooks', 'svc.json'),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: './notify.sh', timeout: 5 }] }] } }),
    );

    const { run, data } = await s.json(['init', '--no-desktop']);
    expect(run.code, run.stderr).toBe(0);
    const mcp = readJson(join(s.project, '.github', 'mcp.json'));
    expect(mcp).toEqual({ mcpServers: { docs: { type: 'local', command: 'docs-mcp', tools: ['*'] }, svc: SERVER }, extra: 1 });

    const hooks = readJson(join(s.project, '.github', 'hooks', 'svc.json')).hooks;
    expect(Object.keys(hooks).sort()).toEqual(['PostToolUse', 'SessionEnd', 'SessionStart', 'Stop', 'UserPromptSubmit']);
    expect(hooks.Stop[0].hooks[0].command).toBe('./notify.sh');
    expect(hooks.Stop[1].hooks[0]).toEqual({
      type: 'command',
      command: '"$HOME/.svc/bin/svc-hook" hook-learn-check --host copilot',
      timeout: 30,
    });
    // Copilot's matcher is a regular expression: every tool is `.*`.
    expect(hooks.PostToolUse[0].matcher).toBe('.*');
    expect(JSON.stringify(hooks) + JSON.stringify(mcp)).not.toContain(s.home); // committable: no machine paths
    expect(data.notes).toContainEqual(expect.stringMatching(/^GitHub Copilot CLI reads .* only in a folder you trust/));

    const again = await s.json(['init', '--no-desktop']);
    expect(again.data.written).toEqual([]);
  });

  it('--no-copilot skips it even where .github/hooks/ exists; a bare .github/ is not Copilot', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.github', 'hooks'), { recursive: true });
    const skipped = await s.json(['init', '--no-desktop', '--no-copilot']);
    expect(skipped.data.skipped).toContainEqual({ what: 'GitHub Copilot CLI', reason: '--no-copilot' });
    expect(existsSync(join(s.project, '.github', 'hooks', 'svc.json'))).toBe(false);

    const bare = sandbox();
    mkdirSync(join(bare.project, '.github', 'workflows'), { recursive: true });
    const none = await bare.json(['init', '--no-desktop']);
    expect(none.data.skipped).toContainEqual({ what: 'GitHub Copilot CLI', reason: expect.stringContaining('use --copilot to set it up') });
    expect(existsSync(join(bare.project, '.github', 'mcp.json'))).toBe(false);
  });

  it('--global writes ~/.copilot/hooks/svc.json and ~/.copilot/mcp-config.json, and nothing in the project', async () => {
    const s = sandbox();
    const { run, data } = await s.json(['init', '--global', '--no-desktop', '--copilot']);
    expect(run.code, run.stderr).toBe(0);
    expect(readJson(join(s.home, '.copilot', 'mcp-config.json')).mcpServers.svc).toEqual(SERVER);
    expect(Object.keys(readJson(join(s.home, '.copilot', 'hooks', 'svc.json')).hooks)).toHaveLength(5);
    expect(existsSync(join(s.project, '.github'))).toBe(false);
    expect(data.notes.join('\n')).not.toContain('trust');
  });

  it('stops on a malformed file, naming it, and writes nothing', async () => {
    const s = sandbox();
    write(join(s.project, '.github', 'mcp.json'), '{"mcpServers": {');
    const r = await s.run(['init', '--no-desktop', '--copilot', '--no-json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(join(s.project, '.github', 'mcp.json'));
    expect(r.stderr).toMatch(/is not valid JSON/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(join(s.project, '.github', 'hooks', 'svc.json'))).toBe(false);
    expect(existsSync(join(s.home, '.svc', 'bin', 'svc-hook'))).toBe(false);
  });
});

describe('svc doctor: GitHub Copilot CLI', () => {
  it('passes after init once the project is trusted, and names the fix for an untrusted project, a missing hook or a server Copilot cannot see', async () => {
    const s = sandbox();
    expect((await s.run(['init', '--no-desktop', '--copilot'])).code).toBe(0);
    const checks = () => s.doctorChecks('copilot.');

    let c = await checks();
    expect(c['copilot.hooks'].status).toBe('ok');
    expect(c['copilot.mcp']).toMatchObject({ status: 'ok', message: expect.stringContaining(join(s.project, '.mcp.json')) });
    expect(c['copilot.project']).toMatchObject({ status: 'warn', fix: expect.stringContaining('accept its trust prompt') });

    // What Copilot's trust prompt records (its config.json opens with comment lines); a parent folder counts.
    write(join(s.home, '.copilot', 'config.json'), `// managed by Copilot\n{\n  "trustedFolders": [${JSON.stringify(s.root)}]\n}\n`);
    const hooksPath = join(s.project, '.github', 'hooks', 'svc.json');
    const hooks = readJson(hooksPath);
    delete hooks.hooks.Stop;
    writeFileSync(hooksPath, JSON.stringify(hooks));
    // Copilot reads .mcp.json when it exists, and then not .github/mcp.json.
    writeFileSync(join(s.project, '.mcp.json'), JSON.stringify({ mcpServers: {} }));
    c = await checks();
    expect(c['copilot.project'].status).toBe('ok');
    expect(c['copilot.hooks']).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('Stop -> hook-learn-check'),
      fix: 'svc init --copilot',
    });
    expect(c['copilot.mcp']).toMatchObject({ status: 'fail', message: expect.stringContaining('which Copilot skips') });

    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    c = await checks();
    expect(c['copilot.hooks'].status).toBe('ok');
    expect(c['copilot.mcp'].status).toBe('ok');
    expect(c['copilot.duplicate']).toBeUndefined();

    // Wired for the user as well: Copilot would run every hook twice here.
    expect((await s.run(['init', '--global', '--no-desktop', '--copilot'])).code).toBe(0);
    c = await checks();
    expect(c['copilot.duplicate']).toMatchObject({ status: 'warn', fix: expect.stringContaining('keep one') });
  });
});
