import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startChatCompletionsStub, texts, type ChatCompletionsStub, type RecordedRequest } from './support/chat-completions-stub.js';
import { envWithout, hostProgram, type HostRun } from './support/host-program.js';
import { hookSessions, hostSandbox, type HostSandbox } from './support/host-sandbox.js';

// The real opencode CLI (the opencode-ai devDependency) on a project after `svc init`, offline: its
// model is a loopback stand-in of the Chat Completions API that records every request. opencode
// awaits svc's plugin hooks before it builds a request (chat.message, the system transform) and
// starts its MCP servers before the first one, so nothing here waits on a clock.
//
// What the test sets that a person sets in opencode's own config, and nothing more: which model
// provider to use. opencode asks no approval for a project's MCP servers or plugins. The
// OPENCODE_DISABLE_* variables keep it from fetching its model list, updates and LSP servers.

const OPENCODE = hostProgram('opencode');

/**
 * At start opencode installs its plugin package (@opencode-ai/plugin) from the npm registry into
 * every config folder (~/.config/opencode, the project's .opencode/), unless the folder already
 * holds node_modules/ and a package-lock.json whose root lists it: what that install leaves. The
 * test writes that state so opencode does not go to the registry (it would stall offline); svc's
 * plugin imports nothing from the package. A person's opencode does the install once itself.
 */
function asInstalled(dir: string): void {
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  const dependencies = { '@opencode-ai/plugin': OPENCODE.version ?? '*' };
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ dependencies }));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies } } }));
}

describe.skipIf(!OPENCODE.version)(OPENCODE.title('opencode after svc init'), () => {
  let api: ChatCompletionsStub;
  let s: HostSandbox;
  let home: string;
  let env: NodeJS.ProcessEnv;
  const servers: ChildProcess[] = [];

  beforeAll(async () => {
    api = await startChatCompletionsStub();
    s = hostSandbox({ label: 'opencode' });
    home = s.home;
    // A person's opencode config before svc: the model provider (here the stand-in).
    const config = join(home, '.config', 'opencode');
    mkdirSync(config, { recursive: true });
    writeFileSync(
      join(config, 'opencode.json'),
      JSON.stringify({
        autoupdate: false,
        share: 'disabled',
        model: 'stand-in/test-model',
        small_model: 'stand-in/test-model',
        provider: {
          'stand-in': {
            npm: '@ai-sdk/openai-compatible',
            options: { baseURL: api.url, apiKey: 'test-key' },
            models: { 'test-model': { tool_call: true, limit: { context: 128000, output: 4096 } } },
          },
        },
      }),
    );
    asInstalled(config);
    env = {
      ...envWithout(/^(OPENCODE|XDG_|SVC_)/),
      HOME: home,
      SVC_EMBED: 'off',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_SHARE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_EMBEDDED_WEB_UI: '1',
    };
    const learn = await s.run(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: s.root });
    expect(learn.code, learn.stderr).toBe(0);
  });

  afterAll(async () => {
    for (const s of servers) s.kill('SIGKILL');
    await api?.close();
    if (s) rmSync(s.root, { recursive: true, force: true });
  });

  /** A git project where `svc init --opencode` ran. */
  async function project(name: string): Promise<string> {
    const dir = s.gitProject(name);
    const init = await s.run(['init', '--no-desktop', '--opencode'], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    asInstalled(join(dir, '.opencode'));
    return dir;
  }

  /**
   * opencode in `cwd`. It takes its folder from $PWD when set (the test runner's own), so PWD goes
   * with cwd. `opencode run` quotes an argument holding a space: the prompt goes as separate words.
   */
  const opencode = (cwd: string, args: string[]): Promise<HostRun> =>
    OPENCODE.run(args, { cwd, env: { ...env, PWD: cwd }, killAfterMs: 60_000 });

  /** `opencode serve` in `cwd`, as the TUI runs it: resolves with its URL once it listens. */
  function serve(cwd: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(OPENCODE.path, ['serve', '--hostname', '127.0.0.1'], {
        cwd,
        env: { ...env, PWD: cwd },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      servers.push(child);
      let out = '';
      const onData = (d: Buffer) => {
        out += d;
        const m = /https?:\/\/127\.0\.0\.1:\d+/.exec(out);
        if (m) resolve(m[0]);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('error', reject);
      child.on('close', (code) => reject(new Error(`opencode serve exited (${code}): ${out}`)));
    });
  }

  const words = (prompt: string) => prompt.split(' ');
  const userText = (r: RecordedRequest) => texts(r, 'user').join('\n');
  const requestFor = (prompt: string): RecordedRequest => {
    const found = api.requests.find((r) => texts(r, 'user').some((t) => t.includes(prompt)) && Array.isArray(r.body.tools));
    if (!found) throw new Error(`no model request carried "${prompt}" (${api.requests.length} requests)`);
    return found;
  };

  it("sends the prompt's memory in the prompt's own request, lists svc's tools, and returns a tool call's answer", async () => {
    const dir = await project('wired');
    const prompt = 'when do deploys to production happen';
    api.callOn(prompt, { name: 'svc_svc_recall', arguments: { query: 'deploys to production' } });
    const run = await opencode(dir, ['run', ...words(prompt)]);
    expect(run.code, run.stderr).toBe(0);

    // chat.message -> hook-inject: the memory is a second part of the prompt's own message.
    const request = requestFor(prompt);
    const user = texts(request, 'user').find((t) => t.includes(prompt)) ?? '';
    expect(user).toContain('Memory from svc');
    expect(user).toMatch(/- Deploys to production happen only on Tuesdays \(ENG-/);
    // session.created -> hook-session-remind, through the system transform.
    expect(texts(request, 'system').join('\n')).toContain('LEARNING PROTOCOL');
    const tools = (request.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(tools).toContain('svc_svc_recall');
    expect(tools.filter((t) => t.startsWith('svc_svc_'))).toHaveLength(39);

    // The stand-in called svc_recall: svc's answer is in the session's next request (the title
    // request, sent beside the first, may come between).
    const next = api.requests.slice(api.requests.indexOf(request) + 1).find((r) => texts(r, 'tool').length > 0);
    expect(next && texts(next, 'tool').join('\n')).toMatch(/Deploys to production happen only on Tuesdays/);
  }, 60_000);

  it('asks the agent to record a correction when the session goes idle, as a new prompt (opencode serve, as the TUI runs it)', async () => {
    const dir = await project('correct');
    const url = await serve(dir);
    const prompt = 'no, use pnpm instead of npm for installing dependencies';
    const lesson = 'Install dependencies with pnpm, not npm';
    api.callOn('earlier in this session the user corrected you', { name: 'svc_svc_learn', arguments: { statement: lesson } });
    const run = await opencode(dir, ['run', '--attach', url, ...words(prompt)]);
    expect(run.code, run.stderr).toBe(0);
    // chat.message -> hook-correction-detect added its note to the prompt's request.
    expect(userText(requestFor(prompt))).toContain('the user is correcting you');
    // session.idle -> hook-learn-check: its reason came back as the session's next prompt.
    const reminder = await api.waitFor((r) => userText(r).includes('earlier in this session the user corrected you'));
    expect(userText(reminder)).toMatch(
      /svc: earlier in this session the user corrected you \("no, use pnpm instead of npm for installing dependencies"\)/,
    );
    // The agent records it with svc_learn, and it is in the store.
    await api.waitFor((r) => texts(r, 'tool').some((t) => t.includes('created')));
    const recall = await s.run(['recall', 'pnpm', '--json'], { cwd: dir });
    expect(recall.stdout).toContain(lesson);
    // The hooks' record of the session: its start, the correction (reminded) and the learn, seen
    // after the tool call (tool.execute.after -> hook-observe, under Claude Code's tool name).
    const states = hookSessions(home);
    const state = states.find((st) => JSON.stringify(st.corrections).includes('use pnpm instead of npm'));
    expect(state).toMatchObject({ starts: 1, learns: 1, corrections: [expect.objectContaining({ reminded: true })] });
  }, 60_000);
});
