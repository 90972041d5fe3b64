import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { envWithout, hostProgram, type HostRun } from './support/host-program.js';
import { hostSandbox, type HostSandbox } from './support/host-sandbox.js';
import { inputTexts, startResponsesApiStub, type RecordedRequest, type ResponsesApiStub } from './support/responses-api-stub.js';

// The real Codex CLI (the @openai/codex devDependency) on a project after `svc init`, offline: its
// model provider is a loopback stand-in of the Responses API that records every request. Codex
// runs each hook to its end before it goes on and starts its MCP servers before the first model
// request, so nothing here waits on a clock.
//
// What the test does that a person does in Codex's own screens, and nothing more: it says which
// model provider to use, and it trusts the project folder (Codex's "Trust this folder?"), which
// svc never does for anyone. The trust of svc's own hooks is what `svc init` writes.

const CODEX = hostProgram('codex');

describe.skipIf(!CODEX.version)(CODEX.title('Codex CLI after svc init'), () => {
  let api: ResponsesApiStub;
  let s: HostSandbox;
  let home: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    api = await startResponsesApiStub();
    s = hostSandbox({ label: 'codex' });
    home = s.home;
    mkdirSync(join(home, '.codex'));
    // A person's Codex config before svc: a provider (here the stand-in), with a comment of theirs.
    writeFileSync(
      join(home, '.codex', 'config.toml'),
      [
        '# my codex settings',
        'model = "gpt-test"',
        'model_provider = "stand-in"',
        '',
        '[model_providers.stand-in]',
        'name = "stand-in"',
        `base_url = "${api.url}"`,
        'env_key = "STAND_IN_KEY"',
        'wire_api = "responses"',
        '',
      ].join('\n'),
    );
    env = { ...envWithout(/^(CODEX|OPENAI|SVC_)/), HOME: home, STAND_IN_KEY: 'test-key', SVC_EMBED: 'off' };
    const learn = await s.run(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: s.root });
    expect(learn.code, learn.stderr).toBe(0);
  });

  afterAll(async () => {
    await api?.close();
  });

  /** A git project where `svc init` ran with `args`, trusted in Codex as a person would. */
  async function project(name: string, args: string[]): Promise<string> {
    const dir = s.gitProject(name);
    const init = await s.run(['init', '--no-desktop', '--codex', ...args], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    appendFileSync(join(home, '.codex', 'config.toml'), `\n[projects."${dir}"]\ntrust_level = "trusted"\n`);
    return dir;
  }

  function codex(cwd: string, prompt: string): Promise<HostRun> {
    const args = ['exec', '--skip-git-repo-check', prompt];
    return CODEX.run(args, { cwd, env, killAfterMs: 90_000 });
  }

  const requestFor = (prompt: string): RecordedRequest => {
    const found = api.requests.find((r) => inputTexts(r).some((t) => t === prompt));
    if (!found) throw new Error(`no model request carried "${prompt}" (${api.requests.length} requests)`);
    return found;
  };

  it("sends the prompt's memory in the prompt's own request, lists svc's tools, and returns a tool call's answer", async () => {
    const dir = await project('wired', []);
    const prompt = 'when do deploys to production happen';
    api.callOn(prompt, { namespace: 'mcp__svc', name: 'svc_recall', arguments: { query: 'deploys to production' } });
    const run = await codex(dir, prompt);
    expect(run.code, run.stderr).toBe(0);

    const request = requestFor(prompt);
    const context = inputTexts(request).join('\n');
    expect(context).toContain('Memory from svc');
    expect(context).toMatch(/- Deploys to production happen only on Tuesdays \(ENG-/);
    expect(context).toContain('LEARNING PROTOCOL'); // hook-session-remind at SessionStart
    const tools = (request.body.tools as Array<{ name: string; tools?: Array<{ name: string }> }>).find((t) => t.name === 'mcp__svc');
    expect(tools?.tools?.map((t) => t.name)).toContain('svc_recall');
    expect(tools?.tools).toHaveLength(39);

    // The stand-in called svc_recall: svc's answer is in the next request.
    const next = api.requests[api.requests.indexOf(request) + 1];
    const answer = next ? inputTexts(next).join('\n') : '';
    expect(answer).toMatch(/Deploys to production happen only on Tuesdays/);
    // Codex passed SVC_EMBED on to the server (env_vars in svc's entry): no model was fetched.
    expect(answer).toContain('disabled by SVC_EMBED=off');
  }, 120_000);

  it('asks the agent to record a correction before it stops, and Codex goes on with that request', async () => {
    const dir = await project('correct', []);
    const prompt = 'no, use pnpm instead of npm for installing dependencies';
    const run = await codex(dir, prompt);
    expect(run.code, run.stderr).toBe(0);
    const first = api.requests.indexOf(requestFor(prompt));
    // hook-correction-detect added its note to the prompt's request.
    expect(inputTexts(api.requests[first]!).join('\n')).toContain('the user is correcting you');
    // The Stop hook blocked the stop: Codex sent its reason to the model as the next turn.
    const later = api.requests.slice(first + 1).map((r) => inputTexts(r).join('\n'));
    expect(later.find((t) => t.includes('earlier in this session the user corrected you')) ?? '(no request after the Stop hook)').toMatch(
      /svc: earlier in this session the user corrected you \("no, use pnpm instead of npm for installing dependencies"\)/,
    );
  }, 120_000);

  it('runs none of the hooks Codex was not told to trust (--no-approve), and svc doctor names the fix', async () => {
    const dir = await project('untrusted', ['--no-approve']);
    const prompt = 'when do deploys to production happen, again';
    const run = await codex(dir, prompt);
    expect(run.code, run.stderr).toBe(0);
    expect(inputTexts(requestFor(prompt)).join('\n')).not.toContain('Memory from svc');

    const trust = (await s.doctorChecks('codex.', { cwd: dir }))['codex.trust'];
    expect(trust).toMatchObject({ status: 'fail', fix: expect.stringContaining('svc init --codex') });
  }, 120_000);
});
