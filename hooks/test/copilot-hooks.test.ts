import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { svc, svcJson, tempStore, type SvcRun } from '../../engine/test/support/run-svc.js';
import { isLearnTool } from '../handlers/session.js';

// svc's hooks as GitHub Copilot CLI runs them: real child processes (dist/bin/svc.js) fed the
// event JSON Copilot sends for Claude Code's event names (snake_case fields, ISO timestamps; the
// samples are from Copilot CLI 1.0.102), with a temporary store and HOME.

const home = mkdtempSync(join(tmpdir(), 'svc-copilot-hooks-'));

function hook(args: string[], event: unknown, store: string, env: NodeJS.ProcessEnv = {}): Promise<SvcRun> {
  return svc(args, {
    store,
    input: JSON.stringify(event),
    env: { HOME: home, SVC_DEBUG: '', SVC_EMBED: 'off', AI_AGENT: '', COPILOT_CLI: '1', ...env },
  });
}

const base = (session: string, event: string) => ({
  hook_event_name: event,
  session_id: session,
  timestamp: '2026-11-27T03:03:09.906Z',
  cwd: '/work/project',
});

async function storeWithFact(): Promise<string> {
  const store = tempStore();
  const { data } = await svcJson(['learn', 'Deploys to production happen only on Tuesdays', '--json'], {
    store,
    env: { HOME: home, SVC_EMBED: 'off' },
  });
  expect(data.id).toMatch(/^ENG-/);
  return store;
}

describe('hooks for GitHub Copilot CLI (--host copilot)', () => {
  it('answers context as a top-level additionalContext, which Copilot adds to the prompt (it drops hookSpecificOutput)', async () => {
    const store = await storeWithFact();
    const run = await hook(
      ['hook-inject', '--host', 'copilot'],
      { ...base('c-1', 'UserPromptSubmit'), prompt: 'when do deploys to production happen' },
      store,
    );
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.hookSpecificOutput).toBeUndefined();
    expect(out.additionalContext).toMatch(/Deploys to production happen only on Tuesdays/);
  });

  it('goes on at Stop with decision: block and the reminder as its reason, once', async () => {
    const store = await storeWithFact();
    const said = await hook(
      ['hook-correction-detect', '--host', 'copilot'],
      { ...base('c-2', 'UserPromptSubmit'), prompt: 'no, use pnpm instead of npm for installing dependencies' },
      store,
    );
    expect(JSON.parse(said.stdout).additionalContext).toContain('the user is correcting you');
    const stop = { ...base('c-2', 'Stop'), transcript_path: '/tmp/c-2.jsonl', stop_reason: 'end_turn', stop_hook_active: false };
    const first = await hook(['hook-learn-check', '--host', 'copilot'], stop, store);
    expect(JSON.parse(first.stdout)).toEqual({
      decision: 'block',
      reason: expect.stringContaining('earlier in this session the user corrected you'),
    });
    expect((await hook(['hook-learn-check', '--host', 'copilot'], stop, store)).stdout).toBe('');
  });

  it('stays quiet when Copilot runs the copy wired for Claude Code in .claude/settings.json (no --host), not when Claude Code does', async () => {
    const store = await storeWithFact();
    const event = { ...base('c-3', 'UserPromptSubmit'), prompt: 'when do deploys to production happen' };
    const borrowed = await hook(['hook-inject'], event, store);
    expect(borrowed.code).toBe(0);
    expect(borrowed.stdout).toBe('');
    const claude = await hook(['hook-inject'], event, store, { AI_AGENT: 'claude-code_2-1-197_harness' });
    expect(JSON.parse(claude.stdout).hookSpecificOutput.additionalContext).toMatch(/Deploys to production/);
  });

  it("counts Copilot's name for svc_learn (svc-svc_learn) and its shell tool's `svc learn` as a learn", () => {
    expect(isLearnTool({ tool_name: 'svc-svc_learn', tool_input: { statement: 'x' } })).toBe(true);
    expect(isLearnTool({ tool_name: 'mcp__svc__svc_learn' })).toBe(true);
    expect(isLearnTool({ tool_name: 'bash', tool_input: { command: 'svc learn "use pnpm"' } })).toBe(true);
    expect(isLearnTool({ tool_name: 'svc-svc_recall' })).toBe(false);
  });
});
