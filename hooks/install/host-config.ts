import { invalid } from '../../engine/errors.js';
import { isObject, readJsonObject, type JsonObject } from './config-files.js';
import { CURSOR_HOOKS, claudeHooks, hookCommand, isSvcHookCommand, type ClaudeHookSpec, type McpEntry } from './wiring.js';
import type { HostId } from '../hosts.js';

// Pure edits of the hosts' config objects: strip svc's own entries (recognised by the shim or an
// older `svc hook-…` command, and the MCP key `svc`), then add the current ones. Everything else
// the user has (other hooks on the same events, other servers, unrelated keys) stays as it was,
// in its place. Running an edit on its own output gives the same output.

/** Claude Code settings: `hooks.<Event>` is an array of `{matcher?, hooks: [{type, command, timeout, async?}]}`. */
export function withClaudeHooks(settings: JsonObject, file: string, opts: { asyncInject?: boolean } = {}): JsonObject {
  return withHookGroups(settings, file, claudeHooks(opts));
}

/**
 * A hooks object in Claude Code's shape (Claude Code's settings, Codex CLI's hooks.json) with
 * svc's groups replaced by those of `specs`, whose commands name `host` when given.
 */
export function withHookGroups(settings: JsonObject, file: string, specs: readonly ClaudeHookSpec[], host?: HostId): JsonObject {
  const out: JsonObject = { ...settings };
  const hooks = out.hooks === undefined ? {} : out.hooks;
  if (!isObject(hooks)) throw badShape(file, '"hooks" must be an object');
  const next: JsonObject = {};
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) throw badShape(file, `"hooks.${event}" must be an array`);
    const { kept, removed } = stripClaudeGroups(groups);
    // An event that only held svc's entries disappears unless svc wires it again below.
    if (kept.length > 0 || !removed || specs.some((h) => h.event === event)) next[event] = kept;
  }
  for (const [event, groups] of hookGroups(specs, host)) {
    next[event] = [...((next[event] as unknown[] | undefined) ?? []), ...groups];
  }
  out.hooks = next;
  return out;
}

function stripClaudeGroups(groups: unknown[]): { kept: unknown[]; removed: boolean } {
  let removed = false;
  const kept: unknown[] = [];
  for (const group of groups) {
    if (!isObject(group) || !Array.isArray(group.hooks)) {
      kept.push(group);
      continue;
    }
    const entries = group.hooks.filter((h) => !(isObject(h) && isSvcHookCommand(h.command)));
    if (entries.length === group.hooks.length) {
      kept.push(group);
      continue;
    }
    removed = true;
    if (entries.length > 0) kept.push({ ...group, hooks: entries });
  }
  return { kept, removed };
}

/** svc's groups per event, in table order: one group per (event, matcher). */
export function hookGroups(specs: readonly ClaudeHookSpec[], host?: HostId): Map<string, JsonObject[]> {
  const byEvent = new Map<string, JsonObject[]>();
  for (const spec of specs) {
    const groups = byEvent.get(spec.event) ?? [];
    byEvent.set(spec.event, groups);
    let group = groups.find((g) => g.matcher === spec.matcher);
    if (!group) {
      group = spec.matcher === undefined ? { hooks: [] } : { matcher: spec.matcher, hooks: [] };
      groups.push(group);
    }
    const entry: JsonObject = { type: 'command', command: hookCommand(spec.hook, host), timeout: spec.timeout };
    if (spec.async) entry.async = true;
    (group.hooks as JsonObject[]).push(entry);
  }
  return byEvent;
}

/** Sets `mcpServers.<key>` (in place when present, else appended); other servers untouched. */
export function withMcpServer(config: JsonObject, file: string, key: string, entry: McpEntry): JsonObject {
  const out: JsonObject = { ...config };
  const servers = out.mcpServers === undefined ? {} : out.mcpServers;
  if (!isObject(servers)) throw badShape(file, '"mcpServers" must be an object');
  out.mcpServers = { ...servers, [key]: entry };
  return out;
}

/** Cursor `.cursor/hooks.json`: `{version: 1, hooks: {eventName: [{command}]}}`. */
export function withCursorHooks(config: JsonObject, file: string): JsonObject {
  const out: JsonObject = 'version' in config ? { ...config } : { version: 1, ...config };
  const hooks = out.hooks === undefined ? {} : out.hooks;
  if (!isObject(hooks)) throw badShape(file, '"hooks" must be an object');
  const next: JsonObject = {};
  for (const [event, entries] of Object.entries(hooks)) {
    if (!Array.isArray(entries)) throw badShape(file, `"hooks.${event}" must be an array`);
    const kept = entries.filter((e) => !(isObject(e) && isSvcHookCommand(e.command)));
    if (kept.length > 0 || kept.length === entries.length || CURSOR_HOOKS.some((h) => h.event === event)) next[event] = kept;
  }
  for (const spec of CURSOR_HOOKS) {
    next[spec.event] = [...((next[spec.event] as unknown[] | undefined) ?? []), { command: hookCommand(spec.hook) }];
  }
  out.hooks = next;
  return out;
}

function badShape(file: string, what: string) {
  return invalid(`${file}: ${what}; fix it by hand and run again: nothing was changed`);
}

/**
 * Claude Code's local settings (.claude/settings.local.json, never committed): "svc" among the
 * approved .mcp.json servers, and no longer among the rejected ones. Claude Code asks each person
 * to approve a project's servers; running `svc init` is that person asking for this one.
 */
export function withMcpApproval(settings: JsonObject, file: string, key: string): JsonObject {
  const out: JsonObject = { ...settings };
  for (const field of ['enabledMcpjsonServers', 'disabledMcpjsonServers'] as const) {
    if (out[field] !== undefined && !(Array.isArray(out[field]) && (out[field] as unknown[]).every((x) => typeof x === 'string'))) {
      throw badShape(file, `"${field}" must be an array of names`);
    }
  }
  const enabled = (out.enabledMcpjsonServers as string[] | undefined) ?? [];
  out.enabledMcpjsonServers = enabled.includes(key) ? enabled : [...enabled, key];
  const disabled = out.disabledMcpjsonServers as string[] | undefined;
  if (disabled?.includes(key)) out.disabledMcpjsonServers = disabled.filter((k) => k !== key);
  return out;
}

/** Every hook command of a hooks object in Claude Code's shape (also Codex's, Copilot's, Gemini's), per event. */
export function hookCommandsByEvent(settings: JsonObject): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const events = isObject(settings.hooks) ? settings.hooks : {};
  for (const [event, groups] of Object.entries(events)) {
    const commands = (Array.isArray(groups) ? groups : [])
      .flatMap((g: unknown) => (isObject(g) && Array.isArray(g.hooks) ? g.hooks : []))
      .filter(isObject)
      .map((h) => h.command)
      .filter((c): c is string => typeof c === 'string');
    out.set(event, commands);
  }
  return out;
}

/**
 * How many of svc's hooks the file at `path` holds (0 when it is missing or unreadable). `read`
 * parses it as its host does (plain JSON unless said otherwise).
 */
export function svcHooksInFile(path: string, read: (path: string) => JsonObject = (p) => readJsonObject(p).data): number {
  try {
    return [...hookCommandsByEvent(read(path)).values()].flat().filter(isSvcHookCommand).length;
  } catch {
    return 0;
  }
}
