import { createHash } from 'node:crypto';
import { parse, patch } from './toml-deps.js';
import { invalid } from '../../engine/errors.js';
import { canonicalJson } from '../../engine/canonical-json.js';
import { isObject, type JsonObject } from './config-files.js';
import { MCP_SERVER_KEY, isSvcHookCommand, mcpEntry } from './wiring.js';

// Codex CLI's TOML files, edited without harming them: svc sets only its own keys
// (`mcp_servers.svc` in the project's or the user's config.toml, and the trust state of its own
// hooks in ~/.codex/config.toml) and toml-patch keeps every comment, key order and format of the
// rest. A file that does not parse is an error naming it, and nothing is written.
//
// Trust: Codex runs a hook of a project or user hooks.json only when ~/.codex/config.toml holds,
// under `hooks.state."<hooks.json path>:<event>:<group>:<handler>"`, a `trusted_hash` equal to the
// hash of that hook's normalized definition (SHA-256 of its canonical JSON: the event's snake_case
// label, the group's matcher, and the one handler with its timeout defaulted to 600 s and
// `async`). Codex's own review writes the same entry when a person trusts a hook; `svc init` does
// it for svc's hooks only, as it approves svc's MCP server for Claude Code.

/** The TOML text as data; `invalid` naming the file when it does not parse. */
export function parseToml(text: string, file: string): JsonObject {
  try {
    const data: unknown = text.trim() === '' ? {} : parse(text);
    if (!isObject(data)) throw invalid(`${file} does not hold a TOML table`);
    return data;
  } catch (err) {
    throw invalid(`${file} is not valid TOML (${oneLineMessage(err)}); fix it by hand and run again: nothing was changed`);
  }
}

function oneLineMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
}

/** The file's text with `data` applied, its comments and layout kept (a new file gets plain TOML). */
function patched(text: string, data: JsonObject): string {
  // New tables as `[a.b.c]` sections, as Codex writes its own, rather than one long inline line.
  const out = patch(text, data, { inlineTableStart: 4 });
  return out.endsWith('\n') ? out : `${out}\n`;
}

/** config.toml with `[mcp_servers.svc]` set to svc's entry; other servers and keys untouched. */
export function withCodexMcpServer(text: string, file: string): string {
  const data = parseToml(text, file);
  const servers = data.mcp_servers === undefined ? {} : data.mcp_servers;
  if (!isObject(servers)) throw invalid(`${file}: "mcp_servers" must be a table; fix it by hand and run again: nothing was changed`);
  const entry = mcpEntry('codex');
  return patched(text, {
    ...data,
    mcp_servers: { ...servers, [MCP_SERVER_KEY]: { command: entry.command, args: entry.args, env_vars: entry.env_vars } },
  });
}

/** svc's MCP entry in a Codex config.toml, if any. */
export function codexMcpEntry(text: string, file: string): JsonObject | undefined {
  const servers = parseToml(text, file).mcp_servers;
  const entry = isObject(servers) ? servers[MCP_SERVER_KEY] : undefined;
  return isObject(entry) ? entry : undefined;
}

/** One of svc's hooks in a hooks.json, as Codex keys and hashes it. */
export interface CodexHookTrust {
  key: string;
  hash: string;
  command: string;
}

/** Codex's label for an event in trust keys and hashes: `UserPromptSubmit` -> `user_prompt_submit`. */
function eventLabel(event: string): string {
  return event.replace(/(?<=[a-z0-9])([A-Z])/g, '_$1').toLowerCase();
}

/** The key and hash of every svc hook in the hooks.json at `hooksPath` (its parsed content `hooks`). */
export function codexHookTrust(hooksPath: string, hooksFile: JsonObject): CodexHookTrust[] {
  const out: CodexHookTrust[] = [];
  const events = isObject(hooksFile.hooks) ? hooksFile.hooks : {};
  for (const [event, groups] of Object.entries(events)) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((group: unknown, g) => {
      if (!isObject(group) || !Array.isArray(group.hooks)) return;
      group.hooks.forEach((handler: unknown, h) => {
        if (!isObject(handler) || !isSvcHookCommand(handler.command)) return;
        const normalized: JsonObject = {
          type: 'command',
          command: handler.command,
          timeout: Math.max(1, typeof handler.timeout === 'number' ? handler.timeout : 600),
          async: handler.async === true,
        };
        if (typeof handler.statusMessage === 'string') normalized.statusMessage = handler.statusMessage;
        const identity: JsonObject = { event_name: eventLabel(event), hooks: [normalized] };
        if (typeof group.matcher === 'string') identity.matcher = group.matcher;
        const hash = `sha256:${createHash('sha256').update(canonicalJson(identity)).digest('hex')}`;
        out.push({ key: `${hooksPath}:${eventLabel(event)}:${g}:${h}`, hash, command: handler.command as string });
      });
    });
  }
  return out;
}

/** ~/.codex/config.toml with each of `hooks` trusted at its current hash (other state and keys kept). */
export function withCodexHookTrust(text: string, file: string, hooks: readonly CodexHookTrust[]): string {
  const data = parseToml(text, file);
  const section = data.hooks === undefined ? {} : data.hooks;
  if (!isObject(section)) throw invalid(`${file}: "hooks" must be a table; fix it by hand and run again: nothing was changed`);
  const state = section.state === undefined ? {} : section.state;
  if (!isObject(state)) throw invalid(`${file}: "hooks.state" must be a table; fix it by hand and run again: nothing was changed`);
  const next: JsonObject = { ...state };
  for (const h of hooks) {
    const kept = state[h.key];
    next[h.key] = { ...(isObject(kept) ? kept : {}), trusted_hash: h.hash };
  }
  return patched(text, { ...data, hooks: { ...section, state: next } });
}

/** Which of `hooks` ~/.codex/config.toml does not trust at their current hash (or has disabled). */
export function untrustedCodexHooks(userConfig: JsonObject, hooks: readonly CodexHookTrust[]): CodexHookTrust[] {
  const state = isObject(userConfig.hooks) && isObject(userConfig.hooks.state) ? userConfig.hooks.state : {};
  return hooks.filter((h) => {
    const entry = state[h.key];
    return !isObject(entry) || entry.trusted_hash !== h.hash || entry.enabled === false;
  });
}

/** Whether ~/.codex/config.toml marks `dir` (the project root) trusted, which Codex requires before it reads the project's .codex/. */
export function codexTrustsProject(userConfig: JsonObject, dir: string): boolean {
  const projects = isObject(userConfig.projects) ? userConfig.projects : {};
  const entry = projects[dir];
  return isObject(entry) && entry.trust_level === 'trusted';
}
