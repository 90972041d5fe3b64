import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { svc } from '../../engine/test/support/run-svc.js';
import { inputTexts, startResponsesApiStub, type ResponsesApiStub } from './support/responses-api-stub.js';
import type { RecordedRequest } from './support/messages-api-stub.js';

// The real Codex CLI (the @openai/codex devDependency) on a project after `svc init`, offline: its
// model provider is a loopback stand-in of the Responses API that records every request. Codex
// runs each hook to its end before it goes on and starts its MCP servers before the first model
// request, so nothing here waits on a clock.
//
// What the test does that a person does in Codex's own screens, and nothing more: it says which
// model provider to use, and it trusts the project folder (Codex's "Trust this folder?"), which
// svc never does for anyone. The trust of svc's own hooks is what `svc init` writes.

const CODEX = fileURLToPath(new URL('../../node_modules/.bin/codex', import.meta.url));
const probe = existsSync(CODEX) ? spawnSync(CODEX, ['--version'], { encoding: 'utf8', timeout: 30_000 }) : undefined;
const version = probe?.status === 0 ? probe.stdout.trim() : undefined;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe.skipIf(!version)(
  `Codex CLI after svc init${version ? ` (${version})` : ': skipped, the codex CLI (node_modules/.bin/codex) does not run on this machine'}`,
  () => {
    let api: ResponsesApiStub;
    let root: string;
    let home: string;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      api = await startResponsesApiStub();
      root = mkdtempSync(join(tmpdir(), 'svc-codex-'));
      home = join(root, 'home');
      mkdirSync(join(home, '.codex'), { recursive: true });
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
      const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CODEX|OPENAI|SVC_)/.test(k)));
      env = { ...base, HOME: home, STAND_IN_KEY: 'test-key', SVC_EMBED: 'off' };
      const svcEnv = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' };
      const learn = await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: root, env: svcEnv });
      expect(learn.code, learn.stderr).toBe(0);
    });

    afterAll(async () => {
      await api?.close();
    });

    /** A git project where `svc init` ran with `args`, trusted in Codex as a person would. */
    async function project(name: string, args: string[]): Promise<string> {
      const dir = join(root, name);
      mkdirSync(dir);
      execFileSync('git', ['init', '-q', dir]);
      const init = await svc(['init', '--no-desktop', '--codex', ...args], {
        cwd: dir,
        env: { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' },
      });
      expect(init.code, init.stderr).toBe(0);
      appendFileSync(join(home, '.codex', 'config.toml'), `\n[projects."${dir}"]\ntrust_level = "trusted"\n`);
      return dir;
    }

    function codex(cwd: string, prompt: string): Promise<Run> {
      return new Promise((resolve, reject) => {
        // svc's MCP server gets SVC_EMBED from the entry: Codex starts MCP servers with a few variables only.
        const args = ['exec', '--skip-git-repo-check', '-c', 'mcp_servers.svc.env={SVC_EMBED="off"}', prompt];
        const child = spawn(CODEX, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
        child.on('error', reject);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      });
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
      expect(next && inputTexts(next).join('\n')).toMatch(/Deploys to production happen only on Tuesdays/);
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

      const doctor = await svc(['doctor', '--no-handshake', '--json'], { cwd: dir, env: { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' } });
      const trust = (JSON.parse(doctor.stdout) as Array<{ check: string; status: string; fix?: string }>).find(
        (c) => c.check === 'codex.trust',
      );
      expect(trust).toMatchObject({ status: 'fail', fix: expect.stringContaining('svc init --codex') });
    }, 120_000);
  },
);
