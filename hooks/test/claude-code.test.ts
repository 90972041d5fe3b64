import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellQuote } from '../../engine/text.js';
import { Terminal } from '@xterm/headless';
import { envWithout, hostProgram, type HostRun } from './support/host-program.js';
import { hookSessions, hostSandbox } from './support/host-sandbox.js';
import { startMessagesApiStub, textsOf, type MessagesApiStub, type RecordedRequest } from './support/messages-api-stub.js';

// The real Claude Code CLI (the @anthropic-ai/claude-code devDependency) on a project after
// `svc init`, offline: its model API is a loopback stand-in that records every request. This is
// what a user's agent host does with the files svc writes: it loads the settings, fires the
// hooks, starts the MCP server and sends the model what the hooks added.
//
// Which checks depend on timing, and what each waits for instead of a clock:
// - Hooks (the memory in the prompt, the session reminder, the Stop hook's request) are not
//   timed: Claude Code runs a hook to its end before it goes on (bounded only by the hook's
//   timeout in the settings svc init writes).
// - svc's tools in the first model request are timed by default: in print mode Claude Code
//   connects MCP servers without waiting (2.1.197), so the first request carries whatever was
//   listed by then. That check runs with MCP_CONNECTION_NONBLOCKING=0, under which Claude Code
//   waits for each server's handshake before its first request, for MCP_CONNECT_TIMEOUT_MS at
//   most (set far above any load here): the signal is svc's tools/list answer, not a sleep.
// - `claude mcp list` connects each server and calls it failed after MCP_TIMEOUT: set generously.
// - `claude doctor` is read once its screen says "Enter to close".

const CLAUDE = hostProgram('claude');
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!CLAUDE.version)(CLAUDE.title('Claude Code after svc init'), () => {
  let api: MessagesApiStub;
  let home: string;
  let project: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    api = await startMessagesApiStub();
    const s = hostSandbox({ label: 'claude-code' });
    ({ home, project } = s);
    env = {
      // The host's environment, without anything of a Claude Code session these tests may run in.
      ...envWithout(/^(CLAUDE|ANTHROPIC|AI_AGENT|SVC_)/),
      HOME: home,
      ANTHROPIC_BASE_URL: api.url,
      ANTHROPIC_API_KEY: 'sk-ant-test-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      // A bound, not a wait: how long `claude mcp list` gives a server to connect.
      MCP_TIMEOUT: '60000',
    };
    const init = await s.run(['init', '--no-desktop']);
    expect(init.code, init.stderr).toBe(0);
    const learn = await s.run(['learn', 'Deploys to production happen only on Tuesdays']);
    expect(learn.code, learn.stderr).toBe(0);
  });

  afterAll(async () => {
    await api?.close();
  });

  const claude = (args: string[], cwd = project, extraEnv: NodeJS.ProcessEnv = {}): Promise<HostRun> =>
    CLAUDE.run(args, { cwd, env: { ...env, SVC_EMBED: 'off', ...extraEnv }, killAfterMs: 90_000 });

  /**
   * `claude doctor` is a screen for a terminal: run it on one (util-linux `script`, 120×60) until it
   * has drawn its report, and read that screen as a terminal shows it (xterm's headless emulator
   * applies the cursor moves and partial redraws that plain text would garble).
   */
  function doctorScreen(cwd: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const term = new Terminal({ cols: 120, rows: 60, scrollback: 1000, allowProposedApi: true });
      const screen = () => {
        const b = term.buffer.active;
        return Array.from({ length: b.length }, (_, i) => b.getLine(i)?.translateToString(true) ?? '').join('\n');
      };
      const child = spawn('script', ['-qec', `stty cols 120 rows 60; ${shellQuote(CLAUDE.path)} doctor`, '/dev/null'], {
        cwd,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.stdout.on('data', (d: Buffer) =>
        term.write(d, () => {
          if (screen().includes('Enter to close')) child.kill('SIGKILL');
        }),
      );
      child.on('error', reject);
      child.on('close', () => {
        clearTimeout(timer);
        term.write('', () => resolve(screen()));
      });
    });
  }

  const sessionStates = () => hookSessions(home).length;
  /** The request that carried `prompt` as the user's turn. */
  const requestFor = (prompt: string): RecordedRequest => {
    const found = api.requests.find((r) => textsOf(r).some((t) => t === prompt));
    if (!found) throw new Error(`no model request carried "${prompt}" (${api.requests.length} requests)`);
    return found;
  };

  it("connects the project's MCP server once svc init approved it, and lists it as pending without that", async () => {
    const before = sessionStates();
    const listed = await claude(['mcp', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^svc: \$\{HOME\}\/\.svc\/bin\/svc-hook mcp - ✔ Connected$/m);
    // `claude mcp list` ends a session it never started: no stray session record.
    expect(sessionStates()).toBe(before);

    const local = join(project, '.claude', 'settings.local.json');
    renameSync(local, `${local}.off`);
    try {
      expect((await claude(['mcp', 'list'])).stdout).toMatch(/^svc: .* - ⏸ Pending approval/m);
    } finally {
      renameSync(`${local}.off`, local);
    }
  }, 120_000);

  it.skipIf(!hasScript)(
    "passes claude doctor's settings check, which reports a deliberately wrong file",
    async () => {
      const screen = await doctorScreen(project);
      expect(screen).toContain('Diagnostics');
      expect(screen).toContain('Enter to close');
      expect(screen).not.toContain('Invalid settings');

      const broken = mkdtempSync(join(tmpdir(), 'svc-claude-broken-'));
      cpSync(join(project, '.claude'), join(broken, '.claude'), { recursive: true });
      writeFileSync(
        join(broken, '.claude', 'settings.json'),
        JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'true', timeout: 'soon' }] }] } }),
      );
      const reported = await doctorScreen(broken);
      expect(reported).toContain('Invalid settings');
      expect(reported).toContain('timeout');
    },
    120_000,
  );

  it('sends the model the memory for a prompt with that same prompt, and the tools of svc mcp once it waits for MCP servers', async () => {
    const prompt = 'when do deploys to production happen';
    // Claude Code waits for svc's handshake (see the top of this file): without that, whether the
    // first request lists svc's tools is a race between svc mcp's start-up and the hooks.
    const run = await claude(['-p', prompt], project, { MCP_CONNECTION_NONBLOCKING: '0', MCP_CONNECT_TIMEOUT_MS: '60000' });
    expect(run.code, run.stderr).toBe(0);
    const request = requestFor(prompt);
    const context = textsOf(request).join('\n');
    expect(context).toContain('Memory from svc');
    expect(context).toMatch(/- Deploys to production happen only on Tuesdays \(ENG-/);
    const tools = (request.body.tools as Array<{ name: string }>).filter((t) => t.name.startsWith('mcp__svc__'));
    expect(tools).toHaveLength(39);
    expect(context).toContain('LEARNING PROTOCOL'); // hook-session-remind at SessionStart
  }, 120_000);

  it('asks the agent to record a correction before it stops, as context rather than a hook error', async () => {
    const prompt = 'no, use pnpm instead of npm for installing dependencies';
    const run = await claude(['-p', prompt]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toMatch(/hook error/i);
    const first = api.requests.indexOf(requestFor(prompt));
    // The Stop hook's feedback continues the conversation: the next request carries it.
    const later = api.requests.slice(first + 1).map((r) => textsOf(r).join('\n'));
    expect(later.find((t) => t.includes('Stop hook additional context')) ?? '(no request after the Stop hook)').toMatch(
      /Stop hook additional context: svc: earlier in this session the user corrected you \("no, use pnpm instead of npm for installing dependencies"\)/,
    );
  }, 120_000);
});
