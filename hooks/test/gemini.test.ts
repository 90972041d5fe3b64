import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { svc } from '../../engine/test/support/run-svc.js';
import {
  RECALL_TRIGGER,
  lastUserParts,
  startGeminiApiStub,
  textsOf,
  toolNames,
  type GeminiApiStub,
  type RecordedRequest,
} from './support/gemini-api-stub.js';

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

const GEMINI = fileURLToPath(new URL('../../node_modules/.bin/gemini', import.meta.url));
const probe = existsSync(GEMINI) ? spawnSync(GEMINI, ['--version'], { encoding: 'utf8', timeout: 60_000 }) : undefined;
const version = probe?.status === 0 ? probe.stdout.trim() : undefined;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe.skipIf(!version)(
  `Gemini CLI after svc init --gemini${version ? ` (${version})` : ': skipped, the gemini CLI (node_modules/.bin/gemini) does not run on this machine'}`,
  () => {
    let api: GeminiApiStub;
    let home: string;
    let project: string;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      api = await startGeminiApiStub();
      const root = mkdtempSync(join(tmpdir(), 'svc-gemini-'));
      home = join(root, 'home');
      project = join(root, 'project');
      mkdirSync(join(home, '.gemini'), { recursive: true });
      mkdirSync(project);
      execFileSync('git', ['init', '-q', project]);
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
      const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(GEMINI|GOOGLE|CLAUDE|AI_AGENT|SVC_)/.test(k)));
      env = {
        ...base,
        HOME: home,
        GEMINI_API_KEY: 'gemini-test-key',
        GOOGLE_GEMINI_BASE_URL: api.url,
        SVC_EMBED: 'off',
      };
      const svcEnv = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' };
      const init = await svc(['init', '--no-desktop', '--gemini'], { cwd: project, env: svcEnv });
      expect(init.code, init.stderr).toBe(0);
      const learn = await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: project, env: svcEnv });
      expect(learn.code, learn.stderr).toBe(0);
    });

    afterAll(async () => {
      await api?.close();
    });

    function gemini(prompt: string): Promise<Run> {
      return new Promise((resolve, reject) => {
        // -m pins the model, so no routing request goes out before the agent's own.
        const child = spawn(GEMINI, ['-p', prompt, '-m', 'gemini-2.5-flash'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
        child.on('error', reject);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      });
    }

    /** The requests whose last user turn is `prompt` (Gemini CLI puts the SessionStart context before it). */
    const requestsFor = (prompt: string): RecordedRequest[] =>
      api.requests.filter((r) => lastUserParts(r).some((p) => p.text === prompt || p.text?.endsWith(`</hook_context>\n\n${prompt}`)));

    /** The session files the hooks keep, once one says its session ended (SessionEnd runs after gemini exits). */
    async function endedSessions(): Promise<Array<Record<string, unknown>>> {
      const dir = join(home, '.svc', 'sessions', 'hooks');
      for (let i = 0; i < 200; i++) {
        const states = existsSync(dir)
          ? readdirSync(dir)
              .filter((f) => f.endsWith('.json'))
              .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>)
          : [];
        if (states.some((s) => s.ended_at)) return states;
        await sleep(50);
      }
      return [];
    }

    it("sends svc's memory for a prompt in the same request, lists svc's tools, and returns svc_recall's answer to the model", async () => {
      const prompt = `When do deploys to production happen? Use ${RECALL_TRIGGER}.`;
      const run = await gemini(prompt);
      expect(run.code, run.stderr).toBe(0);
      const [first, second] = requestsFor(prompt);
      expect(first, `no request carried the prompt (${api.requests.length} requests)\n${run.stderr}`).toBeDefined();

      // BeforeAgent (hook-inject): a part of the prompt's own user turn.
      const turn = lastUserParts(first!).map((p) => p.text ?? '');
      const memory = turn.filter((t) => t.startsWith('<hook_context>Memory from svc'));
      expect(memory[0], turn.join('\n---\n')).toMatch(/- Deploys to production happen only on Tuesdays \(ENG-/);
      // Once: Gemini CLI does not also run the Claude Code hooks svc init wrote in .claude/.
      expect(memory).toHaveLength(1);
      expect(memory[0]!.match(/Memory from svc/g)).toHaveLength(1);
      // SessionStart (hook-session-remind): the Learning Protocol, before the prompt.
      expect(textsOf(first!).join('\n')).toContain('LEARNING PROTOCOL');

      // svc's MCP server, trusted by svc init: all its tools, under Gemini CLI's names.
      const tools = toolNames(first!).filter((n) => n.startsWith('mcp_svc_'));
      expect(tools).toHaveLength(39);
      expect(tools).toContain('mcp_svc_svc_recall');

      // The stand-in called svc_recall; svc's answer came back in the next request.
      const result = lastUserParts(second ?? api.requests[api.requests.indexOf(first!) + 1]!).find((p) => p.functionResponse);
      expect(result?.functionResponse?.name).toBe('mcp_svc_svc_recall');
      expect(JSON.stringify(result?.functionResponse?.response)).toContain('Deploys to production happen only on Tuesdays');

      // SessionStart and SessionEnd (hook-session-mark): the session is recorded as Gemini CLI's, and ended.
      const sessions = await endedSessions();
      expect(sessions.find((s) => s.ended_at)).toMatchObject({ host: 'gemini', starts: 1 });
    }, 60_000);

    it('asks the agent to record a correction before it stops, and the agent goes on with that request', async () => {
      const prompt = 'no, use pnpm instead of npm for installing dependencies';
      const run = await gemini(prompt);
      expect(run.code, run.stderr).toBe(0);
      const first = api.requests.indexOf(requestsFor(prompt)[0]!);
      expect(first, `no request carried the prompt (${api.requests.length} requests)\n${run.stderr}`).toBeGreaterThanOrEqual(0);
      // AfterAgent (hook-learn-check) answered deny: its reason is the next user turn.
      const later = api.requests.slice(first + 1).map((r) =>
        lastUserParts(r)
          .map((p) => p.text ?? '')
          .join('\n'),
      );
      expect(later.find((t) => t.includes('svc: earlier')) ?? '(no request after AfterAgent)').toMatch(
        /^svc: earlier in this session the user corrected you \("no, use pnpm instead of npm for installing dependencies"\)/,
      );
      // Once: the second stop (stop_hook_active) lets the agent end.
      expect(later.filter((t) => t.includes('svc: earlier'))).toHaveLength(1);
    }, 60_000);
  },
);
