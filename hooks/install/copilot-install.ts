import { readFileSync } from 'node:fs';
import { sep } from 'node:path';
import { formatJson, isObject, readJsonObject, type PlannedFile } from './config-files.js';
import type { HostPlan, InitContext } from './optional-hosts.js';
import { withHookGroups, withMcpServer } from './host-config.js';
import { COPILOT_HOOKS, MCP_SERVER_KEY, copilotPaths, mcpEntry } from './wiring.js';
import { projectRootOf } from '../../engine/ops/host-memory.js';

// What `svc init` writes for GitHub Copilot CLI: svc's hooks in .github/hooks/svc.json (Claude
// Code's shape) and svc's MCP server in .github/mcp.json, or, with --global, in
// ~/.copilot/hooks/svc.json and ~/.copilot/mcp-config.json. Copilot asks no approval for a
// server or a hook, so there is nothing to approve; but it reads a project's hooks and MCP servers
// only in a folder the person trusted (its trust prompt), which svc never does for them.

export function planCopilot(ctx: InitContext): HostPlan {
  const paths = copilotPaths(ctx.scope, ctx.cwd, ctx.home);
  const files: PlannedFile[] = [];
  const notes: string[] = [];

  const hooks = withHookGroups(readJsonObject(paths.hooks).data, paths.hooks, COPILOT_HOOKS, 'copilot');
  const events = [...new Set(COPILOT_HOOKS.map((h) => h.event))];
  files.push({ path: paths.hooks, role: `GitHub Copilot CLI hooks (${events.join(', ')})`, content: formatJson(hooks) });

  const mcp = withMcpServer(readJsonObject(paths.mcp).data, paths.mcp, MCP_SERVER_KEY, mcpEntry('copilot', ctx.home));
  files.push({ path: paths.mcp, role: `GitHub Copilot CLI MCP server "${MCP_SERVER_KEY}"`, content: formatJson(mcp) });

  if (ctx.scope === 'project') {
    const root = projectRootOf(ctx.cwd);
    if (!copilotTrusts(copilotTrustedFolders(paths.userConfig), root)) {
      notes.push(
        `GitHub Copilot CLI reads ${root}/.github/hooks and the project's MCP servers only in a folder you trust: run copilot there once and accept its trust prompt (svc does not trust folders for you), or use svc init --global --copilot.`,
      );
    }
  }
  return { files, notes };
}

/**
 * The folders trusted in Copilot's own ~/.copilot/config.json (its trust prompt writes them
 * there; the file opens with `//` comment lines). Undefined when the file is missing or unreadable.
 */
export function copilotTrustedFolders(path: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const data: unknown = JSON.parse(text.replace(/^\uFEFF/, '').replace(/^\s*\/\/.*$/gm, ''));
    if (!isObject(data)) return undefined;
    return Array.isArray(data.trustedFolders) ? data.trustedFolders.filter((f): f is string => typeof f === 'string') : [];
  } catch {
    return undefined;
  }
}

/** Whether `root` or a folder above it is trusted (Copilot's trust covers the folders below). */
export function copilotTrusts(folders: readonly string[] | undefined, root: string): boolean {
  return (folders ?? []).some((f) => {
    const base = f.endsWith(sep) ? f.slice(0, -1) : f;
    return root === base || root.startsWith(base + sep);
  });
}
