import { describe, it, expect } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, moduleByModule, tempStore } from '../../engine/test/support/run-svc.js';
import { fileReadLog } from '../../engine/test/support/file-reads.js';
import { describeProfile } from '../../engine/mcp/describe-tool.js';
import { TOOL_PROFILES } from '../../engine/mcp/profiles.js';

// `svc mcp` answers initialize and tools/list from the SDK and the tool list the build wrote,
// before any tool, zod schema of ours, store or embedder loads: `claude -p` does not wait for its
// MCP servers, so whatever is not listed by its first model request is not there for the model.
// What loaded is read from a module-load trace, not from a clock.

const GENERATED = fileURLToPath(new URL('../../dist/engine/mcp/tool-list.gen.json', import.meta.url));

describe('svc mcp start-up', () => {
  it("the tool list the build writes is what the tools' zod schemas describe, for every profile", () => {
    const generated = JSON.parse(readFileSync(GENERATED, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(generated).sort()).toEqual([...TOOL_PROFILES].sort());
    for (const profile of TOOL_PROFILES) expect(generated[profile], profile).toEqual(describeProfile(profile));
  });

  it('answers initialize and tools/list before loading the tools, the engine or the store; they load for the first call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-mcp-trace-'));
    const trace = join(dir, 'trace.txt');
    // Preloaded into the server: a loader hook writes each module it loads to the trace, and a
    // line goes there when the tools/list answer is written, so the order tells what came first.
    const hooks = join(dir, 'hooks.mjs');
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { appendFileSync(${JSON.stringify(trace)}, url + '\\n'); return next(url, context); }
`,
    );
    const preload = join(dir, 'preload.mjs');
    writeFileSync(
      preload,
      `import { register } from 'node:module';
import { appendFileSync } from 'node:fs';
register(${JSON.stringify(pathToFileURL(hooks).href)});
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  if (String(chunk).includes('"tools":[')) appendFileSync(${JSON.stringify(trace)}, '--- tools/list answered\\n');
  return write(chunk, ...rest);
};
`,
    );
    writeFileSync(trace, '');
    const store = tempStore('mcp-trace');
    // Module by module, not from the bundle, so that the trace sees each module.
    const child = spawn(process.execPath, ['--import', preload, ...moduleByModule(['mcp'])], {
      env: { ...process.env, SVC_PATH: store },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const answers = new Map<number, any>(); // eslint-disable-line @typescript-eslint/no-explicit-any
    const waiting = new Map<number, () => void>();
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const msg = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        answers.set(msg.id, msg);
        waiting.get(msg.id)?.();
      }
    });
    const ask = (id: number, method: string, params: object = {}) =>
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      new Promise<any>((resolve, reject) => {
        waiting.set(id, () => resolve(answers.get(id)));
        void exited.then((code) => reject(new Error(`svc mcp exited ${code} before answering ${method}: ${stderr}`)));
        child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
      });

    await ask(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'trace', version: '0' } });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    const listed = await ask(2, 'tools/list');
    expect(listed.result.tools).toHaveLength(39);
    const called = await ask(3, 'tools/call', { name: 'svc_status', arguments: {} });
    expect(called.result.isError, called.result.content?.[0]?.text).toBeFalsy();
    child.stdin.end();
    expect(await exited, stderr).toBe(0);

    const lines = readFileSync(trace, 'utf8').split('\n').filter(Boolean);
    const cut = lines.indexOf('--- tools/list answered');
    expect(cut, 'the tools/list answer was seen').toBeGreaterThan(0);
    const dist = new URL('../../dist/', import.meta.url).href;
    const ours = (urls: string[]) => urls.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length));
    const before = ours(lines.slice(0, cut));
    const after = ours(lines.slice(cut + 1));
    // Before the answer: the command, the server, the SDK, the profiles, the generated list, the version and the output writer (with its pause); nothing else of ours.
    expect(
      before.filter(
        (m) =>
          !/^(bin\/dispatch\.mjs|(tui\/commands\/mcp|engine\/(errors|package-info|cli\/std-write|sleep-sync)|hooks\/hook-names|engine\/mcp\/(server|profiles|tool-listing|sdk-deps))\.js)$/.test(
            m,
          ),
      ),
    ).toEqual([]);
    expect(lines.slice(0, cut).some((u) => u.includes('better-sqlite3'))).toBe(false);
    // For the call: the tools, the dispatcher and the store.
    for (const m of ['engine/mcp/tools.js', 'engine/mcp/memory-tools.js', 'engine/mcp/dispatch.js', 'engine/store/open-store.js'])
      expect(after, m).toContain(m);
  }, 60_000);

  it('runs the MCP SDK and zod from their code-cached bundle: no file of either is read from node_modules', async () => {
    const reads = fileReadLog();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--require', reads.preload, CLI, 'mcp'],
      env: { ...stringEnv(), SVC_PATH: tempStore('mcp-reads') },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'reads', version: '0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools).toHaveLength(39);
      const r = (await client.callTool({ name: 'svc_learn', arguments: { statement: 'Deploys happen on Tuesdays' } })) as {
        isError?: boolean;
      };
      expect(r.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    const files = reads.files();
    expect(files.filter((f) => /node_modules[\\/](@modelcontextprotocol|zod)[\\/]/.test(f))).toEqual([]);
    expect(files.some((f) => f.endsWith('mcp-deps.cjs.v8cache'))).toBe(true);
  }, 60_000);

  it('lists its tools even when the project file is broken, and fails each call with one line naming it', async () => {
    const project = mkdtempSync(join(tmpdir(), 'svc-mcp-badyaml-'));
    writeFileSync(join(project, '.svc.yaml'), 'scope: [unclosed\n');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      cwd: project,
      env: { ...stringEnv(), SVC_PATH: tempStore('mcp-badyaml') },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d) => (stderr += d));
    const client = new Client({ name: 'bad-yaml', version: '0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools).toHaveLength(39);
      const r = (await client.callTool({ name: 'svc_status', arguments: {} })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(r.isError).toBe(true);
      expect(r.content[0]!.text).toMatch(/\.svc\.yaml is not valid YAML/);
      expect(r.content[0]!.text).not.toMatch(/\n/);
      expect(stderr).toMatch(/^svc mcp: .*\.svc\.yaml is not valid YAML/m);
    } finally {
      await client.close();
    }
  }, 60_000);
});

function stringEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
