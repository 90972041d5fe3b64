import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { isObject, type JsonObject, type PlannedFile } from './config-files.js';
import type { HostPlan, InitContext } from './optional-hosts.js';
import { svcHooksInFile, withHookGroups, withMcpServer } from './host-config.js';
import { readJsonc, withJsoncChanges, type JsoncChange } from './jsonc-file.js';
import { GEMINI_HOOKS, MCP_SERVER_KEY, geminiPaths, mcpEntry, type McpEntry } from './wiring.js';

// What `svc init` writes for Gemini CLI: svc's hooks and MCP server in one settings.json, the
// project's .gemini/ or, with --global, ~/.gemini/. Gemini CLI allows comments in its settings:
// svc edits the file in place (jsonc.ts), only svc's hook events and its server changing, so the
// person's comments, order and layout stay. Unless --no-approve, svc's server carries `"trust": true`, the
// approval Gemini CLI asks for before each call (and without which `gemini -p` leaves the tools
// out). The folder's trust is the person's: svc only says when it is missing.

/** svc's MCP entry for Gemini CLI, approved (`trust`) unless the person keeps the host's prompt. */
export function geminiMcpEntry(approve: boolean): McpEntry {
  return { ...mcpEntry('gemini'), ...(approve ? { trust: true } : {}) };
}

/** The settings file's text with svc's hooks and server set, each changed value edited in place. */
export function geminiSettingsText(path: string, approve: boolean): string {
  const file = readJsonc(path, { trailingCommas: false });
  const next = withMcpServer(withHookGroups(file.data, path, GEMINI_HOOKS, 'gemini'), path, MCP_SERVER_KEY, geminiMcpEntry(approve));
  const changes: JsoncChange[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const before = file.data.hooks;
  const after = next.hooks as JsonObject;
  if (!isObject(before)) changes.push({ path: ['hooks'], value: after });
  else {
    // Event by event, so comments in the person's other events stay.
    for (const event of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (!same(before[event], after[event])) changes.push({ path: ['hooks', event], value: after[event] });
    }
  }
  const servers = isObject(file.data.mcpServers) ? file.data.mcpServers : {};
  const entry = (next.mcpServers as JsonObject)[MCP_SERVER_KEY];
  if (!same(servers[MCP_SERVER_KEY], entry)) changes.push({ path: ['mcpServers', MCP_SERVER_KEY], value: entry });
  return changes.length === 0 && file.text.trim() !== '' ? file.text : withJsoncChanges(file.text, changes);
}

export function planGemini(ctx: InitContext): HostPlan {
  const paths = geminiPaths(ctx.scope, ctx.cwd, ctx.home);
  const notes: string[] = [];
  const events = [...new Set(GEMINI_HOOKS.map((h) => h.event))];
  const files: PlannedFile[] = [
    {
      path: paths.settings,
      role: `Gemini CLI hooks (${events.join(', ')}) and MCP server "${MCP_SERVER_KEY}"${ctx.approve ? ' (trusted)' : ''}`,
      content: geminiSettingsText(paths.settings, ctx.approve),
    },
  ];
  if (!ctx.approve) {
    notes.push(
      `Gemini CLI asks before each call of an MCP server it does not trust, and gemini -p leaves its tools out: set "trust": true on mcpServers.${MCP_SERVER_KEY} in ${paths.settings}, or run svc init without --no-approve.`,
    );
  }
  // Gemini CLI runs the hooks of the user's and the project's settings both.
  const other = geminiPaths(ctx.scope === 'project' ? 'global' : 'project', ctx.cwd, ctx.home).settings;
  if (hasGeminiSvcHooks(other)) {
    notes.push(`svc hooks are also in ${other}: Gemini CLI would run each twice; remove svc's entries from one of the two files.`);
  }
  if (ctx.scope === 'project' && geminiTrustsFolder(ctx.cwd, ctx.home) !== true) {
    notes.push(
      `Gemini CLI reads ${paths.settings} only in a folder you trust, and gemini -p stops in one you do not: run gemini in ${ctx.cwd} once and choose "Trust folder" (svc does not trust folders for you).`,
    );
  }
  return { files, notes };
}

/** Whether a Gemini CLI settings file holds any of svc's hooks (false when it is missing or unreadable). */
export function hasGeminiSvcHooks(path: string): boolean {
  return svcHooksInFile(path, (p) => readJsonc(p, { trailingCommas: false }).data) > 0;
}

/**
 * Whether Gemini CLI trusts `dir` as the person set it: `security.folderTrust.enabled: false` in
 * the user's settings trusts every folder; else the longest rule of ~/.gemini/trustedFolders.json
 * that covers the folder (TRUST_FOLDER: it and below; TRUST_PARENT: its parent and below;
 * DO_NOT_TRUST). undefined when no rule covers it (Gemini CLI then asks); the file unreadable
 * counts as no rule.
 */
export function geminiTrustsFolder(dir: string, home: string): boolean | undefined {
  const paths = geminiPaths('global', dir, home);
  try {
    const security = readJsonc(paths.settings, { trailingCommas: false }).data.security;
    if (isObject(security) && isObject(security.folderTrust) && security.folderTrust.enabled === false) return true;
  } catch {
    // an unreadable user settings file is doctor's finding, not this one's
  }
  let rules: JsonObject;
  try {
    rules = readJsonc(paths.trustedFolders, { trailingCommas: false }).data;
  } catch {
    return undefined;
  }
  const real = (p: string): string => {
    try {
      return existsSync(p) ? realpathSync(p) : resolve(p);
    } catch {
      return resolve(p);
    }
  };
  const target = real(dir);
  let best = -1;
  let verdict: boolean | undefined;
  for (const [rule, level] of Object.entries(rules)) {
    if (level !== 'TRUST_FOLDER' && level !== 'TRUST_PARENT' && level !== 'DO_NOT_TRUST') continue;
    const base = real(level === 'TRUST_PARENT' ? dirname(rule) : rule);
    const rel = relative(base, target);
    const inside = rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
    if (inside && rule.length > best) {
      best = rule.length;
      verdict = level !== 'DO_NOT_TRUST';
    }
  }
  return verdict;
}
