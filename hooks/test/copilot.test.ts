import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  texts as messageTexts,
  startChatCompletionsStub,
  toolNames,
  type ChatCompletionsStub,
  type RecordedRequest,
} from './support/chat-completions-stub.js';
import { envWithout, hostProgram, type HostRun } from './support/host-program.js';
import { hookSessions, hostSandbox, type HostSandbox } from './support/host-sandbox.js';

// The real GitHub Copilot CLI (the @github/copilot devDependency) on a project after `svc init`,
// offline: COPILOT_OFFLINE with a custom provider (COPILOT_PROVIDER_BASE_URL), a loopback
// stand-in of the Chat Completions API that records every request; no GitHub sign-in. Copilot
// runs each hook to its end before it goes on and starts its MCP servers before the first model
// request, so nothing here waits on a clock.
//
// What the test does that a person does in Copilot's own screens, and nothing more: it names the
// model provider, and it trusts the project folder (Copilot's folder trust prompt, which records
// the folder in ~/.copilot/config.json), which svc never does for anyone.

const COPILOT = hostProgram('copilot');

describe.skipIf(!COPILOT.version)(COPILOT.title('GitHub Copilot CLI after svc init'), () => {
  let api: ChatCompletionsStub;
  // Each test has a home of its own (root/home-<name>): svc runs with HOME set to it.
  let s: HostSandbox;
  let root: string;
  let base: NodeJS.ProcessEnv;

  beforeAll(async () => {
    api = await startChatCompletionsStub();
    s = hostSandbox({ label: 'copilot' });
    root = s.root;
    // The host's environment, without a GitHub token or a Copilot session these tests may run in.
    base = envWithout(/^(COPILOT|GITHUB|GH_|SVC_)/);
  });

  afterAll(async () => {
    await api?.close();
  });

  const FACT = 'Deploys to production happen only on Tuesdays';
  let factId = '';

  /** A home with one memory in svc's store, and Copilot's record of the folders trusted there. */
  async function home(name: string, trusted: string[]): Promise<string> {
    const dir = join(root, name);
    mkdirSync(join(dir, '.copilot'), { recursive: true });
    writeFileSync(join(dir, '.copilot', 'config.json'), JSON.stringify({ trustedFolders: trusted }, null, 2));
    const learn = await s.json<{ id: string }>(['learn', FACT], { cwd: root, env: { HOME: dir } });
    expect(learn.run.code, learn.run.stderr).toBe(0);
    factId = learn.data.id;
    return dir;
  }

  /** A git project where `svc init` ran with `args`. */
  async function project(name: string, homeDir: string, args: string[]): Promise<string> {
    const dir = s.gitProject(name);
    const init = await s.run(['init', '--no-desktop', ...args], { cwd: dir, env: { HOME: homeDir } });
    expect(init.code, init.stderr).toBe(0);
    return dir;
  }

  function copilot(cwd: string, homeDir: string, prompt: string): Promise<HostRun> {
    const env = {
      ...base,
      HOME: homeDir,
      SVC_EMBED: 'off',
      COPILOT_OFFLINE: 'true',
      COPILOT_PROVIDER_BASE_URL: api.url,
      COPILOT_PROVIDER_API_KEY: 'test-key',
      COPILOT_MODEL: 'gpt-4.1',
      COPILOT_AUTO_UPDATE: 'false',
    };
    const args = ['-p', prompt, '--allow-all-tools', '--no-auto-update', '--disable-builtin-mcps'];
    return COPILOT.run(args, { cwd, env, killAfterMs: 90_000 });
  }

  /** The request that carried `prompt` as the user's turn (Copilot wraps it with the date and hook context). */
  const requestFor = (prompt: string): RecordedRequest => {
    const found = api.requests.find((r) => messageTexts(r).some((t) => t.includes(`\n${prompt}`) || t.startsWith(prompt)));
    if (!found) throw new Error(`no model request carried "${prompt}" (${api.requests.length} requests)`);
    return found;
  };

  it("sends the prompt's memory in the prompt's own request, lists svc's tools, returns a tool call's answer, and takes feedback", async () => {
    const dir = join(root, 'wired');
    const h = await home('home-wired', [dir]);
    await project('wired', h, ['--copilot']);
    const prompt = 'when do deploys to production happen';
    api.callOn(prompt, { name: 'svc-svc_recall', arguments: { query: 'deploys to production' } });
    // Once recall's answer is back, the task is done: the stand-in rates the engram that helped.
    api.callOn(`"statement":"${FACT}"`, { name: 'svc-svc_feedback', arguments: { id: factId, signal: 'positive' } });
    const run = await copilot(dir, h, prompt);
    expect(run.code, run.stderr).toBe(0);

    const request = requestFor(prompt);
    const texts = messageTexts(request);
    // hook-inject's answer is in the prompt's own message, not a later one.
    const promptMessage = texts.find((t) => t.includes(prompt)) ?? '';
    expect(promptMessage).toContain('Memory from svc');
    expect(promptMessage).toMatch(/- Deploys to production happen only on Tuesdays \(ENG-/);
    expect(texts.join('\n')).toContain('LEARNING PROTOCOL'); // hook-session-remind at SessionStart
    const tools = toolNames(request).filter((n) => n.startsWith('svc-'));
    expect(tools).toContain('svc-svc_recall');
    expect(tools).toHaveLength(39);

    // The stand-in called svc_recall: svc's answer is in the next request, as the tool's result.
    const next = api.requests[api.requests.indexOf(request) + 1];
    const toolResults = (r: RecordedRequest | undefined) =>
      ((r?.body.messages ?? []) as Array<{ role: string; content: unknown }>)
        .filter((m) => m.role === 'tool')
        .map((m) => String(m.content));
    expect(toolResults(next)[0]).toMatch(/Deploys to production happen only on Tuesdays/);
    // Then svc_feedback: svc recorded the rating, and its answer came back.
    const after = api.requests[api.requests.indexOf(request) + 2];
    expect(toolResults(after)[1]).toMatch(new RegExp(`"recorded":1,"engrams":\\[\\{"id":"${factId}"`));
  }, 120_000);

  it('asks the agent to record a correction before it stops; Copilot goes on, and the svc_learn it calls reaches svc and counts', async () => {
    const dir = join(root, 'correct');
    const h = await home('home-correct', [dir]);
    await project('correct', h, ['--copilot']);
    const prompt = 'no, use pnpm instead of npm for installing dependencies';
    const lesson = 'Use pnpm, not npm, to install dependencies';
    api.callOn('earlier in this session the user corrected you', { name: 'svc-svc_learn', arguments: { statement: lesson } });
    const run = await copilot(dir, h, prompt);
    expect(run.code, run.stderr).toBe(0);
    const first = api.requests.indexOf(requestFor(prompt));
    // hook-correction-detect added its note to the prompt's request.
    expect(messageTexts(api.requests[first]!).join('\n')).toContain('the user is correcting you');
    // The Stop hook blocked the stop: Copilot sent its reason to the model as the next turn.
    const later = api.requests.slice(first + 1).map((r) => messageTexts(r).join('\n'));
    expect(later.find((t) => t.includes('earlier in this session the user corrected you')) ?? '(no request after the Stop hook)').toMatch(
      /svc: earlier in this session the user corrected you \("no, use pnpm instead of npm for installing dependencies"\)/,
    );
    // The stand-in answered the reminder with svc_learn: the lesson is in svc's store, and
    // hook-observe (PostToolUse, matcher .*) counted Copilot's svc-svc_learn as the session's learn;
    // hook-session-mark saw the session start and end.
    const recall = await s.run(['recall', 'pnpm npm install dependencies', '--json'], { cwd: dir, env: { HOME: h } });
    expect(recall.stdout).toContain(lesson);
    const states = hookSessions(h);
    expect(states.find((st) => st.corrections.length > 0)).toMatchObject({
      host: 'copilot',
      starts: 1,
      end_reason: 'complete',
      corrections: [expect.anything()],
      learns: 1,
    });
  }, 120_000);

  it("loads nothing of a project the person has not trusted, and svc doctor names the fix; --global's user files need no trust", async () => {
    const h = await home('home-untrusted', []);
    const dir = await project('untrusted', h, ['--copilot']);
    const prompt = 'when do deploys to production happen, again';
    const run = await copilot(dir, h, prompt);
    expect(run.code, run.stderr).toBe(0);
    const request = requestFor(prompt);
    expect(messageTexts(request).join('\n')).not.toContain('Memory from svc');
    expect(toolNames(request).filter((n) => n.startsWith('svc-'))).toEqual([]);

    const trust = (await s.doctorChecks('copilot.', { cwd: dir, env: { HOME: h } }))['copilot.project'];
    expect(trust).toMatchObject({ status: 'warn', fix: expect.stringContaining('accept its trust prompt') });

    // The same person, svc set up for every project in ~/.copilot/: memory and tools, no trust asked.
    expect((await s.run(['init', '--global', '--no-desktop', '--copilot'], { cwd: dir, env: { HOME: h } })).code).toBe(0);
    const globalPrompt = 'when do deploys to production happen, globally';
    const again = await copilot(dir, h, globalPrompt);
    expect(again.code, again.stderr).toBe(0);
    const globalRequest = requestFor(globalPrompt);
    expect(messageTexts(globalRequest).join('\n')).toContain('Memory from svc');
    expect(toolNames(globalRequest).filter((n) => n.startsWith('svc-'))).toHaveLength(39);
  }, 120_000);
});
