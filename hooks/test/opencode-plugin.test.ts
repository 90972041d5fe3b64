import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { opencodePluginSource } from '../../hooks/install/opencode-plugin.js';

// The plugin svc writes for opencode, loaded as opencode loads it and called as opencode calls its
// hooks, against a stand-in shim ($HOME/.svc/bin/svc-hook) that records each event and answers as
// svc's hooks do. What opencode does with the answers is proven with the real CLI in opencode.test.ts.

type Hooks = Record<string, (...args: unknown[]) => Promise<void>>;
type Plugin = (ctx: { client: unknown; directory: string }) => Promise<Hooks>;

const SHIM = `#!/bin/sh
input=$(cat)
printf '%s\\t%s\\n' "$*" "$input" >> "$SHIM_LOG"
case "$1" in
  hook-session-remind) echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"START"}}' ;;
  hook-inject) echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"MEMORY"}}' ;;
  hook-correction-detect) echo 'PLAIN NOTE' ;;
  hook-revert-detect) echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"REVERTED"}}' ;;
  hook-learn-check) case "$input" in *'"stop_hook_active":true'*) ;; *) echo '{"decision":"block","reason":"RECORD IT"}' ;; esac ;;
  hook-observe) echo 'not json {' ; exit 1 ;;
esac
`;

describe("svc's opencode plugin", () => {
  let root: string;
  let log: string;
  let plugin: Plugin;
  const saved = { HOME: process.env.HOME, SHIM_LOG: process.env.SHIM_LOG };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-opencode-plugin-'));
    const shim = join(root, 'home', '.svc', 'bin', 'svc-hook');
    mkdirSync(join(shim, '..'), { recursive: true });
    writeFileSync(shim, SHIM);
    chmodSync(shim, 0o755);
    log = join(root, 'events.log');
    writeFileSync(log, '');
    const file = join(root, 'svc.js');
    writeFileSync(file, opencodePluginSource());
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    // opencode calls every function the module exports as a plugin: only one.
    expect(Object.keys(mod)).toEqual(['SvcPlugin']);
    plugin = mod.SvcPlugin as Plugin;
    process.env.HOME = join(root, 'home');
    process.env.SHIM_LOG = log;
  });

  afterAll(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(root, { recursive: true, force: true });
  });

  /** The events the shim received, as [argv, event]. */
  const events = (): Array<[string, Record<string, unknown>]> =>
    read()
      .map((l) => l.split('\t'))
      .map(([argv, json]) => [argv!, JSON.parse(json!) as Record<string, unknown>]);
  const read = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);

  it("sends Claude Code's events with --host opencode and puts the context where opencode takes it", async () => {
    const prompts: unknown[] = [];
    const client = { session: { prompt: async (req: unknown) => void prompts.push(req) } };
    const hooks = await plugin({ client, directory: '/work/project' });

    await hooks.event!({ event: { type: 'session.created', properties: { info: { id: 'ses_1' } } } });
    const system: string[] = ['opencode prompt'];
    await hooks['experimental.chat.system.transform']!({ sessionID: 'ses_1' }, { system });
    expect(system).toEqual(['opencode prompt', 'START']);

    const message = { id: 'msg_1', sessionID: 'ses_1', role: 'user' };
    const parts: Array<Record<string, unknown>> = [{ id: 'prt_a', type: 'text', text: 'use tabs' }];
    await hooks['chat.message']!({ sessionID: 'ses_1' }, { message, parts });
    expect(parts).toHaveLength(2);
    expect(parts[1]).toMatchObject({ type: 'text', text: 'MEMORY\n\nPLAIN NOTE', synthetic: true, sessionID: 'ses_1', messageID: 'msg_1' });
    expect(parts[1]!.id).toMatch(/^prt_[0-9a-f]{12}[0-9A-Za-z]{14}$/);

    const edit = { title: 'edit', output: 'Edited.', metadata: {} };
    await hooks['tool.execute.after']!(
      { tool: 'edit', sessionID: 'ses_1', callID: 'call_1', args: { filePath: '/work/project/a.ts', oldString: 'a', newString: 'b' } },
      edit,
    );
    expect(edit.output).toBe('Edited.\n\nREVERTED');
    const mcp = { content: [{ type: 'text', text: '{"id":"ENG-1"}' }] };
    await hooks['tool.execute.after']!({ tool: 'svc_svc_learn', sessionID: 'ses_1', callID: 'call_2', args: { statement: 'x' } }, mcp);
    expect(mcp.content).toHaveLength(2);

    const byHook = (hook: string) => events().filter(([argv]) => argv.startsWith(`${hook} `));
    expect(byHook('hook-session-guard')[0]).toEqual([
      'hook-session-guard --host opencode',
      { hook_event_name: 'SessionStart', session_id: 'ses_1', cwd: '/work/project', source: 'startup' },
    ]);
    expect(byHook('hook-inject')[0]![1]).toEqual({
      hook_event_name: 'UserPromptSubmit',
      session_id: 'ses_1',
      cwd: '/work/project',
      prompt: 'use tabs',
    });
    const observed = byHook('hook-observe').map(([, e]) => e);
    expect(observed[0]).toMatchObject({
      hook_event_name: 'PostToolUse',
      tool_name: 'Edit',
      tool_input: { file_path: '/work/project/a.ts', old_string: 'a', new_string: 'b' },
      tool_response: { title: 'edit', output: 'Edited.' },
      tool_use_id: 'call_1',
    });
    expect(observed[1]).toMatchObject({ tool_name: 'mcp__svc__svc_learn', tool_input: { statement: 'x' } });
    // Each session's start runs once, however many requests it makes.
    await hooks['experimental.chat.system.transform']!({ sessionID: 'ses_1' }, { system: [] });
    expect(byHook('hook-session-remind')).toHaveLength(1);

    // A stop with a reason: the reason is the session's next prompt, which is no user prompt;
    // the stop after it says stop_hook_active and gets no reason.
    await hooks.event!({ event: { type: 'session.idle', properties: { sessionID: 'ses_1' } } });
    expect(prompts).toEqual([{ path: { id: 'ses_1' }, body: { parts: [{ type: 'text', text: 'RECORD IT' }] } }]);
    const again: Array<Record<string, unknown>> = [{ type: 'text', text: 'RECORD IT' }];
    await hooks['chat.message']!({ sessionID: 'ses_1' }, { message, parts: again });
    expect(again).toHaveLength(1);
    expect(byHook('hook-inject')).toHaveLength(1);
    await hooks.event!({ event: { type: 'session.idle', properties: { sessionID: 'ses_1' } } });
    expect(byHook('hook-learn-check').map(([, e]) => e.stop_hook_active)).toEqual([false, true]);
    expect(prompts).toHaveLength(1);

    const compacting = { context: [] as string[] };
    await hooks['experimental.session.compacting']!({ sessionID: 'ses_1' }, compacting);
    expect(compacting.context).toEqual(['START']);
    expect(byHook('hook-session-remind').at(-1)![1]).toMatchObject({ hook_event_name: 'PreCompact' });
  });

  it('fails open: without the shim, or with a client that throws, every hook returns and changes nothing', async () => {
    const client = {
      session: {
        prompt: () => {
          throw new Error('no server');
        },
      },
    };
    const hooks = await plugin({ client, directory: '/work/project' });
    process.env.HOME = join(root, 'nobody');
    try {
      const system: string[] = [];
      await hooks.event!({ event: { type: 'session.created', properties: { info: { id: 'ses_2' } } } });
      await hooks['experimental.chat.system.transform']!({ sessionID: 'ses_2' }, { system });
      const parts = [{ type: 'text', text: 'hello' }];
      await hooks['chat.message']!({ sessionID: 'ses_2' }, { message: { id: 'msg_2' }, parts });
      await hooks['tool.execute.after']!({ tool: 'bash', sessionID: 'ses_2', args: {} }, { output: 'ok' });
      await hooks.event!({ event: { type: 'session.idle', properties: { sessionID: 'ses_2' } } });
      // Malformed input from opencode is no reason to throw either.
      await hooks['chat.message']!({}, {});
      await hooks['tool.execute.after']!(undefined, undefined);
      expect(system).toEqual([]);
      expect(parts).toHaveLength(1);
    } finally {
      process.env.HOME = join(root, 'home');
    }
    process.env.HOME = join(root, 'home');
    const hooks2 = await plugin({ client, directory: '/work/project' });
    // The shim answers a reason; the client throws: the stop still returns.
    await expect(hooks2.event!({ event: { type: 'session.idle', properties: { sessionID: 'ses_3' } } })).resolves.toBeUndefined();
  });
});
