import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { svc, svcJson, tempStore, type SvcRun } from '../../engine/test/support/run-svc.js';
import { isLearnTool } from '../handlers/session.js';
import { LocalStore } from '../../engine/store/local-store.js';

// svc's hooks as Gemini CLI runs them (`--host gemini`), as real child processes fed the event
// JSON Gemini CLI 0.61.0 sends (its names: BeforeAgent, AfterAgent, AfterTool), with a temporary
// store. The shared handlers answer in Gemini CLI's shapes through its adapter.

const home = mkdtempSync(join(tmpdir(), 'svc-gemini-hooks-home-'));

function hook(name: string, event: unknown, store: string): Promise<SvcRun> {
  return svc([name, '--host', 'gemini'], {
    store,
    input: JSON.stringify(event),
    env: { HOME: home, SVC_DEBUG: '', SVC_EMBED: 'off', AI_AGENT: '' },
  });
}

const base = (session: string, event: string) => ({
  session_id: session,
  transcript_path: `${home}/.gemini/tmp/p/chats/${session}.jsonl`,
  cwd: '/work/project',
  hook_event_name: event,
  timestamp: '2026-11-27T02:59:18.621Z',
});
// In gemini -p, the SessionStart context is glued before the prompt.
const sessionContext = '<hook_context>LEARNING PROTOCOL: no, never guess; use pnpm</hook_context>\n\n';

describe('Gemini CLI hooks (--host gemini)', () => {
  let store: string;
  let pnpm: string;

  beforeAll(async () => {
    store = tempStore('gemini-hooks');
    const { data } = await svcJson(['learn', 'Use pnpm instead of npm to install dependencies in this repo', '--json'], {
      store,
      env: { HOME: home, SVC_EMBED: 'off' },
    });
    pnpm = data.id as string;
  });

  it("hook-inject answers BeforeAgent with its context under Gemini CLI's event name, for the prompt without the session context", async () => {
    const run = await hook('hook-inject', { ...base('g-1', 'BeforeAgent'), prompt: `${sessionContext}install the dependencies` }, store);
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.hookSpecificOutput.hookEventName).toBe('BeforeAgent');
    expect(out.hookSpecificOutput.additionalContext).toContain(`Use pnpm instead of npm to install dependencies in this repo (${pnpm})`);
  });

  it('hook-correction-detect reads the user\'s words after the session context, and hook-learn-check continues with decision "deny" once', async () => {
    const prompt = { ...base('g-2', 'BeforeAgent'), prompt: `${sessionContext}no, use yarn instead of pnpm for installing dependencies` };
    const detected = await hook('hook-correction-detect', prompt, store);
    expect(detected.code).toBe(0);
    expect(JSON.parse(detected.stdout).hookSpecificOutput).toMatchObject({ hookEventName: 'BeforeAgent' });

    const stop = { ...base('g-2', 'AfterAgent'), prompt: prompt.prompt, prompt_response: 'Noted.', stop_hook_active: false };
    const first = await hook('hook-learn-check', stop, store);
    expect(JSON.parse(first.stdout)).toEqual({
      decision: 'deny',
      reason: expect.stringMatching(/^svc: earlier in this session the user corrected you \("no, use yarn instead of pnpm/),
    });
    // The retry Gemini CLI makes after a deny carries stop_hook_active: quiet.
    expect((await hook('hook-learn-check', { ...stop, stop_hook_active: true }, store)).stdout).toBe('');
  });

  it('an svc_learn call seen at AfterTool counts as recorded: no reminder at AfterAgent', async () => {
    const prompt = { ...base('g-3', 'BeforeAgent'), prompt: 'no, use yarn instead of npm for installing dependencies' };
    expect((await hook('hook-correction-detect', prompt, store)).code).toBe(0);
    const tool = {
      ...base('g-3', 'AfterTool'),
      tool_name: 'mcp_svc_svc_learn',
      tool_input: { statement: 'Use yarn to install dependencies' },
      tool_response: { llmContent: [{ text: '{"id":"ENG-1"}' }], returnDisplay: 'ok' },
      mcp_context: { server_name: 'svc', tool_name: 'svc_learn' },
    };
    expect((await hook('hook-observe', tool, store)).code).toBe(0);
    const stop = { ...base('g-3', 'AfterAgent'), prompt: prompt.prompt, prompt_response: 'Done.', stop_hook_active: false };
    expect((await hook('hook-learn-check', stop, store)).stdout).toBe('');
  });

  it("hook-observe and hook-revert-detect know Gemini CLI's shell, edits and svc's own tools at AfterTool", async () => {
    const tool = (session: string, tool_name: string, tool_input: object, mcp_context?: object) => ({
      ...base(session, 'AfterTool'),
      tool_name,
      tool_input,
      tool_response: { llmContent: [{ text: 'ok' }], returnDisplay: 'ok' },
      ...(mcp_context ? { mcp_context } : {}),
    });
    const edit = { file_path: '/work/project/src/app.ts', old_string: 'a = 1', new_string: 'a = 2' };
    for (const event of [
      tool('g-4', 'run_shell_command', { command: 'npm test' }),
      tool('g-4', 'replace', edit),
      tool('g-4', 'read_file', { file_path: '/work/project/src/app.ts' }),
      tool('g-4', 'mcp_svc_svc_recall', { query: 'deploys' }, { server_name: 'svc', tool_name: 'svc_recall' }),
    ]) {
      const run = await hook('hook-observe', event, store);
      expect([run.code, run.stdout]).toEqual([0, '']);
    }
    const s = await LocalStore.open(store, 'fast');
    try {
      const episodes = await s.queryEpisodes({ session: 'g-4' });
      expect(episodes.map((e) => e.summary).sort()).toEqual(['Edit src/app.ts', 'Ran: npm test']);
      expect(episodes.every((e) => e.agent === 'gemini')).toBe(true);
    } finally {
      s.close();
    }

    const revert = await hook('hook-revert-detect', tool('g-5', 'run_shell_command', { command: 'git revert HEAD' }), store);
    expect(JSON.parse(revert.stdout).hookSpecificOutput).toMatchObject({
      hookEventName: 'AfterTool',
      additionalContext: expect.stringMatching(/^svc: a change was just reverted/),
    });
    await hook('hook-revert-detect', tool('g-6', 'replace', edit), store);
    const undo = await hook('hook-revert-detect', tool('g-6', 'replace', { ...edit, old_string: 'a = 2', new_string: 'a = 1' }), store);
    expect(JSON.parse(undo.stdout).hookSpecificOutput.additionalContext).toMatch(/an edit of .*app\.ts that undoes an earlier one/);
  });

  it("isLearnTool knows Gemini CLI's MCP tool name and shell tool", () => {
    expect(isLearnTool({ tool_name: 'mcp_svc_svc_learn' })).toBe(true);
    expect(isLearnTool({ tool_name: 'mcp_memory-2_svc_learn' })).toBe(true);
    expect(isLearnTool({ tool_name: 'mcp__svc__svc_learn' })).toBe(true);
    expect(isLearnTool({ tool_name: 'run_shell_command', tool_input: { command: 'svc learn "Use yarn"' } })).toBe(true);
    expect(isLearnTool({ tool_name: 'mcp_svc_svc_learned' })).toBe(false);
    expect(isLearnTool({ tool_name: 'my_svc_learn' })).toBe(false);
  });
});
