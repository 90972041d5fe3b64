import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import {
  lastUserParts,
  startGeminiApiStub,
  textsOf,
  toolNames,
  type GeminiApiStub,
  type RecordedRequest,
} from './support/gemini-api-stub.js';
import { envWithout, hostProgram, type HostRun } from './support/host-program.js';
import { hookSessions, hostSandbox, type HostSandbox } from './support/host-sandbox.js';

// The real Gemini CLI (the @google/gemini-cli devDependency) on a project after `svc init
// --gemini`, offline: its model API is a loopback stand-in that records every request
// (GOOGLE_GEMINI_BASE_URL with an API key). This is what a user's Gemini CLI does with the file
// svc writes: it loads .gemini/settings.json, fires svc's hooks, starts svc's MCP server and sends
// the model what the hooks added.
//
// Nothing here is timed: Gemini CLI runs each hook to its end before it goes on, lists the tools
// of the MCP servers it connected before its first request, and `gemini -p` exits after the
// turn. The one exception is SessionEnd, which Gemini CLI fires without waiting for it: its
// record is awaited (the session file saying it ended), with a bound, not a sleep.

const FACT = 'Deploys to production happen only on Tuesdays';
const GEMINI = hostProgram('gemini');

describe.skipIf(!GEMINI.version)(GEMINI.title('Gemini CLI after svc init --gemini'), () => {
  let api: GeminiApiStub;
  let s: HostSandbox;
  let home: string;
  let project: string;
  let env: NodeJS.ProcessEnv;
  let factId = '';

  beforeAll(async () => {
    api = await startGeminiApiStub();
    s = hostSandbox({ label: 'gemini' });
    ({ home, project } = s);
    mkdirSync(join(home, '.gemini'));
    // The person's own Gemini CLI settings: sign-in with an API key (no login), and nothing
    // sent anywhere but the stand-in (usage statistics, telemetry and update checks off).
    writeFileSync(
      join(home, '.gemini', 'settings.json'),
      JSON.stringify({
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        ide: { enabled: false, hasSeenNudge: true },
      }),
    );
    // What a person does once in Gemini CLI's own dialog, "Trust folder": svc never does it
    // for them, and without it gemini -p stops (exit 55) and reads nothing of .gemini/.
    writeFileSync(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }));
    env = {
      ...envWithout(/^(GEMINI|GOOGLE|CLAUDE|AI_AGENT|SVC_)/),
      HOME: home,
      GEMINI_API_KEY: 'gemini-test-key',
      GOOGLE_GEMINI_BASE_URL: api.url,
      SVC_EMBED: 'off',
    };
    const init = await s.run(['init', '--no-desktop', '--gemini']);
    expect(init.code, init.stderr).toBe(0);
    const learn = await s.json<{ id: string }>(['learn', FACT]);
    expect(learn.run.code, learn.run.stderr).toBe(0);
    factId = learn.data.id;
  });

  afterAll(async () => {
    await api?.close();
  });

  // -m pins the model, so no routing request goes out before the agent's own.
  const gemini = (prompt: string, cwd = project): Promise<HostRun> =>
    GEMINI.run(['-p', prompt, '-m', 'gemini-2.5-flash'], { cwd, env, killAfterMs: 50_000 });

  /** The requests whose last user turn is `prompt` (Gemini CLI puts the SessionStart context before it). */
  const requestsFor = (prompt: string): RecordedRequest[] =>
    api.requests.filter((r) => lastUserParts(r).some((p) => p.text === prompt || p.text?.endsWith(`</hook_context>\n\n${prompt}`)));

  /** The session files the hooks keep, once one says its session ended (SessionEnd runs after gemini exits). */
  async function endedSessions(): Promise<Array<Record<string, unknown>>> {
    for (let i = 0; i < 200; i++) {
      const states = hookSessions(home);
      if (states.some((s) => s.ended_at)) return states;
      await sleep(50);
    }
    return [];
  }

  it("sends svc's memory for a prompt in the same request, lists svc's tools, returns svc_recall's answer, and takes feedback", async () => {
    const prompt = 'When do deploys to production happen?';
    api.callOn(prompt, { name: 'mcp_svc_svc_recall', args: { query: 'deploys to production' } });
    // Once recall's answer is back, the task is done: the stand-in rates the engram that helped.
    api.callOn(FACT, { name: 'mcp_svc_svc_feedback', args: { id: factId, signal: 'positive' } });
    const run = await gemini(prompt);
    expect(run.code, run.stderr).toBe(0);
    const [first] = requestsFor(prompt);
    expect(first, `no request carried the prompt (${api.requests.length} requests)\n${run.stderr}`).toBeDefined();

    // BeforeAgent (hook-inject): a part of the prompt's own user turn, once (Gemini CLI does
    // not also run the Claude Code hooks svc init wrote in .claude/).
    const turn = lastUserParts(first!).map((p) => p.text ?? '');
    const memory = turn.filter((t) => t.startsWith('<hook_context>Memory from svc'));
    expect(memory[0], turn.join('\n---\n')).toMatch(/- Deploys to production happen only on Tuesdays \(ENG-/);
    expect(memory).toHaveLength(1);
    expect(memory[0]!.match(/Memory from svc/g)).toHaveLength(1);
    // SessionStart (hook-session-remind): the Learning Protocol, before the prompt.
    expect(textsOf(first!).join('\n')).toContain('LEARNING PROTOCOL');

    // svc's MCP server, trusted by svc init: all its tools, under Gemini CLI's names.
    const tools = toolNames(first!).filter((n) => n.startsWith('mcp_svc_'));
    expect(tools).toHaveLength(39);
    expect(tools).toContain('mcp_svc_svc_recall');

    // The stand-in called svc_recall; svc's answer came back in the next request.
    const at = api.requests.indexOf(first!);
    /** The tool result a request carries: the tool's name and the output Gemini CLI passes on. */
    const result = (r: RecordedRequest | undefined) => {
      const part = lastUserParts(r ?? { url: '', body: {} }).find((p) => p.functionResponse);
      return { name: part?.functionResponse?.name, output: String(part?.functionResponse?.response?.output ?? '') };
    };
    expect(result(api.requests[at + 1])).toMatchObject({ name: 'mcp_svc_svc_recall', output: expect.stringContaining(FACT) });
    // Then svc_feedback: svc recorded the rating, and its answer came back.
    expect(result(api.requests[at + 2])).toMatchObject({
      name: 'mcp_svc_svc_feedback',
      output: expect.stringContaining(`"recorded":1,"engrams":[{"id":"${factId}"`),
    });

    // SessionStart and SessionEnd (hook-session-mark): the session is recorded as Gemini CLI's, and ended.
    const sessions = await endedSessions();
    expect(sessions.find((s) => s.ended_at)).toMatchObject({ host: 'gemini', starts: 1 });
  }, 60_000);

  it('asks the agent to record a correction before it stops; Gemini CLI goes on, and the svc_learn it calls reaches svc and counts', async () => {
    const prompt = 'no, use pnpm instead of npm for installing dependencies';
    const lesson = 'Use pnpm, not npm, to install dependencies';
    api.callOn('earlier in this session the user corrected you', { name: 'mcp_svc_svc_learn', args: { statement: lesson } });
    const run = await gemini(prompt);
    expect(run.code, run.stderr).toBe(0);
    const first = api.requests.indexOf(requestsFor(prompt)[0]!);
    expect(first, `no request carried the prompt (${api.requests.length} requests)\n${run.stderr}`).toBeGreaterThanOrEqual(0);
    // BeforeAgent (hook-correction-detect): its note is in the prompt's own turn.
    expect(
      lastUserParts(api.requests[first]!)
        .map((p) => p.text ?? '')
        .join('\n'),
    ).toContain('the user is correcting you');
    // AfterAgent (hook-learn-check) answered deny: its reason is the next user turn, once.
    const later = api.requests.slice(first + 1).map((r) =>
      lastUserParts(r)
        .map((p) => p.text ?? '')
        .join('\n'),
    );
    expect(later.find((t) => t.includes('svc: earlier')) ?? '(no request after AfterAgent)').toMatch(
      /^svc: earlier in this session the user corrected you \("no, use pnpm instead of npm for installing dependencies"\)/,
    );
    expect(later.filter((t) => t.includes('svc: earlier'))).toHaveLength(1);

    // The stand-in answered the reminder with svc_learn: the lesson is in svc's store, and
    // AfterTool (hook-observe, hook-session-mark) counted Gemini CLI's mcp_svc_svc_learn as the session's learn.
    const recall = await s.run(['recall', 'pnpm npm install dependencies', '--json']);
    expect(recall.stdout).toContain(lesson);
    const states = await endedSessions();
    expect(states.find((st) => Array.isArray(st.corrections) && st.corrections.length > 0)).toMatchObject({
      host: 'gemini',
      starts: 1,
      corrections: [expect.anything()],
      learns: 1,
    });
  }, 60_000);

  it('stops in a folder the person has not trusted, which svc doctor names with its fix', async () => {
    const other = s.gitProject('untrusted');
    expect((await s.run(['init', '--no-desktop', '--gemini'], { cwd: other })).code).toBe(0);
    const prompt = 'what is in this folder';
    const run = await gemini(prompt, other);
    // Gemini CLI's own rule: headless in an untrusted folder is fatal (exit 55), and no request goes out.
    expect(run.code).toBe(55);
    expect(requestsFor(prompt)).toEqual([]);
    const folder = (await s.doctorChecks('gemini.', { cwd: other }))['gemini.folder'];
    expect(folder).toMatchObject({ status: 'warn', fix: expect.stringContaining('"Trust folder"') });
  }, 60_000);
});
