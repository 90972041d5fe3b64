import { describe, it, expect } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parse } from 'jsonc-parser';
import { hostSandbox, write } from './support/host-sandbox.js';
import schema from './support/vscode-mcp-schema.json' with { type: 'json' };

// VS Code has no headless agent to drive, so what `svc init --vscode` writes is checked the other
// ways: mcp.json against the shape VS Code accepts, svc's server started from that very entry by
// the official MCP Inspector (a devDependency), the instructions block, svc doctor, and the hook
// handlers fed VS Code's event fields.

const INSPECTOR = fileURLToPath(new URL('../../node_modules/.bin/mcp-inspector', import.meta.url));
const run = promisify(execFile);

const sandbox = () => hostSandbox({ label: 'vscode' });

const read = (path: string): string => readFileSync(path, 'utf8');
type Checks = Array<{ check: string; status: string; fix?: string }>;

describe('svc init --vscode', () => {
  it("writes an mcp.json VS Code accepts, keeping the person's comments, servers and inputs; the Inspector starts svc from that entry", async () => {
    const s = sandbox();
    const mcpPath = join(s.project, '.vscode', 'mcp.json');
    write(
      mcpPath,
      '{\n  // our servers\n  "inputs": [{ "id": "token", "type": "promptString", "password": true }],\n  "servers": {\n    "docs": { "type": "http", "url": "https://docs.example.com/mcp" },\n  },\n}\n',
    );
    const { run: init } = await s.json(['init', '--no-desktop']); // .vscode/ exists: set up without the flag
    expect(init.code, init.stderr).toBe(0);
    const text = read(mcpPath);
    expect(text).toContain('// our servers');
    const config = parse(text) as { servers: Record<string, unknown>; inputs: unknown[] };
    expect(Object.keys(config.servers)).toEqual(['docs', 'svc']);
    expect(config.servers.svc).toEqual({ type: 'stdio', command: 'sh', args: ['-c', 'exec "$HOME/.svc/bin/svc-hook" mcp'] });
    expect(config.inputs).toHaveLength(1);
    const validate = new Ajv({ allErrors: true }).compile(schema);
    expect(validate(config), JSON.stringify(validate.errors)).toBe(true);

    // The Inspector reads Claude-style `mcpServers`; VS Code's entry goes in unchanged.
    const inspectorConfig = join(s.home, 'inspector.json');
    writeFileSync(inspectorConfig, JSON.stringify({ mcpServers: { svc: config.servers.svc } }));
    const listed = await run(INSPECTOR, ['--cli', '--config', inspectorConfig, '--server', 'svc', '--method', 'tools/list'], {
      timeout: 60_000,
      env: { ...process.env, ...s.env },
    });
    expect((JSON.parse(listed.stdout) as { tools: unknown[] }).tools).toHaveLength(39);

    const again = await s.json(['init', '--no-desktop']);
    expect((again.data as { written: string[] }).written).toEqual([]);
  }, 90_000);

  it("adds svc's instructions block once, replaces only that block, and keeps the rest of the file", async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.vscode'));
    const path = join(s.project, '.github', 'copilot-instructions.md');
    write(path, '# House rules\n\nUse tabs.\n');
    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    const first = read(path);
    expect(first.startsWith('# House rules\n\nUse tabs.\n\n<!-- svc:begin')).toBe(true);
    expect(first).toContain('call `svc_inject` with the task');
    expect(first).toContain('`svc_learn`');
    expect(first).toContain('`svc_feedback`');

    // A hand-edited block is put back; what follows it stays.
    writeFileSync(path, first.replace('call `svc_inject`', 'maybe call `svc_inject`') + '\nMore of ours.\n');
    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    const second = read(path);
    expect(second).toBe(first + '\nMore of ours.\n');
    expect(second.match(/svc:begin/g)).toHaveLength(1);
  });

  it('--global writes the user profile: mcp.json and an instructions file of its own; --no-vscode skips', async () => {
    const s = sandbox();
    const user = join(s.home, '.config', 'Code', 'User');
    expect((await s.run(['init', '--global', '--no-desktop', '--vscode'])).code).toBe(0);
    expect((parse(read(join(user, 'mcp.json'))) as { servers: Record<string, unknown> }).servers.svc).toBeTruthy();
    expect(read(join(user, 'prompts', 'svc.instructions.md'))).toMatch(/^---\napplyTo: "\*\*"/);

    const other = sandbox();
    mkdirSync(join(other.project, '.vscode'));
    const { data } = await other.json(['init', '--no-desktop', '--no-vscode']);
    expect((data as { skipped: unknown[] }).skipped).toContainEqual({ what: 'VS Code', reason: '--no-vscode' });
    expect(existsSync(join(other.project, '.vscode', 'mcp.json'))).toBe(false);
  });

  it('stops on an mcp.json that does not parse, naming it, with nothing written', async () => {
    const s = sandbox();
    write(join(s.project, '.vscode', 'mcp.json'), '{ "servers": { "a": ');
    const r = await s.run(['init', '--no-desktop', '--no-json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(join(s.project, '.vscode', 'mcp.json'));
    expect(r.stderr).toContain('is not valid JSON');
    expect(existsSync(join(s.project, '.github', 'copilot-instructions.md'))).toBe(false);
  });
});

describe('svc doctor and the hooks: VS Code', () => {
  it('passes after init, with a live handshake; warns when the instructions block is gone', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.vscode'));
    expect((await s.run(['init', '--no-desktop'])).code).toBe(0);
    let checks = (await s.json(['doctor'])).data as Checks;
    const vs = (name: string) => checks.find((c) => c.check === name);
    expect(vs('vscode.mcp')?.status).toBe('ok');
    expect(vs('vscode.instructions')?.status).toBe('ok');
    expect(vs('vscode.handshake')?.status).toBe('ok');

    writeFileSync(join(s.project, '.github', 'copilot-instructions.md'), '# ours only\n');
    checks = (await s.json(['doctor', '--no-handshake'])).data as Checks;
    expect(vs('vscode.instructions')).toMatchObject({ status: 'warn', fix: 'svc init --vscode' });
  }, 90_000);

  it("reads VS Code's event fields in the hooks of .claude/settings.json, and answers a stop in VS Code's shape", async () => {
    const s = sandbox();
    expect((await s.run(['learn', 'Deploys to production happen only on Tuesdays'])).code).toBe(0);
    // A hook's stdin: the event as VS Code sends it.
    const event = (name: string, extra: object) => ({
      input: JSON.stringify({ timestamp: '2026-11-27T10:00:00Z', cwd: s.project, sessionId: 'vs-1', hookEventName: name, ...extra }),
    });
    const injected = await s.run(['hook-inject'], event('UserPromptSubmit', { prompt: 'when do deploys to production happen' }));
    expect(JSON.parse(injected.stdout).hookSpecificOutput.additionalContext).toContain('Deploys to production happen only on Tuesdays');

    await s.run(
      ['hook-correction-detect'],
      event('UserPromptSubmit', { prompt: 'no, use pnpm instead of npm for installing dependencies' }),
    );
    const stop = await s.run(['hook-learn-check'], event('Stop', { stop_hook_active: false }));
    expect(JSON.parse(stop.stdout)).toMatchObject({
      hookSpecificOutput: { hookEventName: 'Stop', decision: 'block', reason: expect.stringContaining('corrected you') },
    });
  });
});
