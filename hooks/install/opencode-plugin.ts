import { HOST_TIMEOUT_S } from '../hook-names.js';
import { OPENCODE_HOOKS, SHIM_FROM_HOME } from './wiring.js';

// The plugin `svc init` writes for opencode (.opencode/plugin/svc.js, or ~/.config/opencode/plugin/
// with --global), whole: opencode has no command hooks, so this small plain-JS module is svc's
// adapter there. It turns opencode's plugin hooks into Claude Code's events, runs svc's hook shim
// with them (as Claude Code runs a command hook: the event JSON on stdin, `--host opencode`, the
// answer JSON on stdout) and puts the answers where opencode takes them:
//
//   session.created (event)            SessionStart      context -> a system part of every request
//   chat.message                       UserPromptSubmit  context -> a text part of the prompt's message
//   tool.execute.after                 PostToolUse       context -> appended to the tool's result
//   experimental.session.compacting    PreCompact        context -> the compaction prompt
//   session.idle (event)               Stop              reason  -> a new prompt (client.session.prompt)
//
// It imports node built-ins only (opencode installs nothing for it), names no path of this machine
// (the shim is found under $HOME when it runs), and never fails opencode: a missing shim, an error,
// a bad answer or a hook past its time are ignored.

/** The plugin's source; the same bytes for every machine, so a project can commit it. */
export function opencodePluginSource(): string {
  const hooks: Record<string, [string, number][]> = {};
  for (const h of OPENCODE_HOOKS) (hooks[h.event] ??= []).push([h.hook, HOST_TIMEOUT_S[h.hook]]);
  return PLUGIN.replace('__HOOKS__', JSON.stringify(hooks)).replace('__SHIM__', JSON.stringify(SHIM_FROM_HOME.split('/')));
}

const PLUGIN = `// svc's opencode plugin, written by \`svc init\` and rewritten whole by it (svc doctor checks it).
// opencode has no command hooks: this runs svc's hook shim ($HOME/.svc/bin/svc-hook) with Claude
// Code's events and puts the answers into opencode's requests. Any failure is ignored.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';

// Claude Code event -> [svc hook, seconds it may take].
const HOOKS = __HOOKS__;
const SHIM = __SHIM__;

// opencode's built-in tools and their fields under Claude Code's names, which svc's hooks read.
const TOOLS = { bash: 'Bash', edit: 'Edit', write: 'Write', read: 'Read', grep: 'Grep', glob: 'Glob', list: 'LS',
  todowrite: 'TodoWrite', todoread: 'TodoRead', webfetch: 'WebFetch', websearch: 'WebSearch', task: 'Task' };
const FIELDS = { filePath: 'file_path', oldString: 'old_string', newString: 'new_string', replaceAll: 'replace_all' };

function toolName(name) {
  if (Object.hasOwn(TOOLS, name)) return TOOLS[name];
  // opencode calls an MCP server's tool <server>_<tool>: svc_svc_learn is svc's svc_learn.
  return name.startsWith('svc_svc_') ? 'mcp__svc__' + name.slice(4) : name;
}

function toolInput(args) {
  const out = {};
  for (const [k, v] of Object.entries(args ?? {})) out[Object.hasOwn(FIELDS, k) ? FIELDS[k] : k] = v;
  return out;
}

/** Runs one hook; resolves to its answer object ({} on any failure or after its time). */
function runHook(hook, seconds, event) {
  return new Promise((resolve) => {
    let out = '';
    let child;
    try {
      child = spawn(join(process.env.HOME || homedir(), ...SHIM), [hook, '--host', 'opencode'], { stdio: ['pipe', 'pipe', 'ignore'] });
    } catch {
      return resolve({});
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({});
    }, seconds * 1000);
    child.on('error', () => resolve({}));
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) => {
      clearTimeout(timer);
      const text = out.trim();
      if (code !== 0) return resolve({}); // a failed hook says nothing, as in Claude Code
      try {
        const answer = JSON.parse(text || '{}');
        resolve(answer && typeof answer === 'object' ? answer : {});
      } catch {
        resolve({ text });
      }
    });
    child.stdin.on('error', () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

/** Runs the event's hooks side by side: their context (one text) and the first reason to go on. */
async function run(name, fields) {
  const answers = await Promise.all((HOOKS[name] ?? []).map(([hook, s]) => runHook(hook, s, { hook_event_name: name, ...fields })));
  // Plain text is context at a prompt and a session's start, as in Claude Code.
  const plain = name === 'UserPromptSubmit' || name === 'SessionStart';
  const context = answers
    .map((a) => a.hookSpecificOutput?.additionalContext ?? (plain ? a.text : undefined))
    .filter((t) => typeof t === 'string' && t);
  const block = answers.find((a) => a.decision === 'block' && typeof a.reason === 'string' && a.reason);
  return { context: context.join('\\n\\n'), reason: block?.reason };
}

/** A hook of opencode's that never throws. */
const safe = (fn) => async (...args) => {
  try {
    await fn(...args);
  } catch {
    // svc never breaks opencode
  }
};

// opencode's ids: prefix, 12 hex digits of (ms * 4096 + n), 14 base62 characters.
let lastMs = 0;
let counter = 0;
function partId() {
  const now = Date.now();
  counter = now === lastMs ? counter + 1 : 1;
  lastMs = now;
  const abc = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  const tail = [...randomBytes(14)].map((b) => abc[b % 62]).join('');
  return 'prt_' + (BigInt(now) * 4096n + BigInt(counter)).toString(16).padStart(12, '0').slice(-12) + tail;
}

export const SvcPlugin = async ({ client, directory }) => {
  const starts = new Map(); // sessionID -> its SessionStart context (a promise, run once)
  const continued = new Map(); // sessionID -> the reason svc sent as a prompt at the last stop
  const base = (id) => ({ session_id: id, cwd: directory });
  const start = (id) => {
    if (!starts.has(id)) starts.set(id, run('SessionStart', { ...base(id), source: 'startup' }).then((r) => r.context));
    return starts.get(id);
  };

  return {
    event: safe(async ({ event }) => {
      const id = event.properties?.sessionID ?? event.properties?.info?.id;
      if (!id) return;
      if (event.type === 'session.created') await start(id);
      if (event.type !== 'session.idle') return;
      const active = continued.has(id);
      continued.delete(id);
      const { reason } = await run('Stop', { ...base(id), stop_hook_active: active });
      if (!reason) return;
      continued.set(id, reason);
      // Works where opencode's server outlives the turn (TUI, serve); \`opencode run\` exits at idle.
      client.session.prompt({ path: { id }, body: { parts: [{ type: 'text', text: reason }] } }).catch(() => {});
    }),
    'experimental.chat.system.transform': safe(async (input, output) => {
      const context = input.sessionID ? await start(input.sessionID) : '';
      if (context) output.system.push(context);
    }),
    'chat.message': safe(async (input, output) => {
      const id = input.sessionID ?? output.message?.sessionID;
      const prompt = output.parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => p.text).join('\\n');
      if (!id || !prompt || prompt === continued.get(id)) return; // svc's own stop prompt is no user prompt
      await start(id);
      const { context } = await run('UserPromptSubmit', { ...base(id), prompt });
      if (context) output.parts.push({ id: partId(), sessionID: id, messageID: output.message.id, type: 'text', text: context, synthetic: true });
    }),
    'tool.execute.after': safe(async (input, output) => {
      const { context } = await run('PostToolUse', {
        ...base(input.sessionID),
        tool_name: toolName(input.tool),
        tool_input: toolInput(input.args),
        tool_response: output,
        tool_use_id: input.callID,
      });
      if (!context) return;
      if (typeof output.output === 'string') output.output += '\\n\\n' + context;
      else if (Array.isArray(output.content)) output.content.push({ type: 'text', text: context });
    }),
    'experimental.session.compacting': safe(async (input, output) => {
      const { context } = await run('PreCompact', { ...base(input.sessionID), trigger: 'auto' });
      if (context) output.context.push(context);
    }),
  };
};
`;
