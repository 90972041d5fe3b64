import { isObject, readTextOrNull, type JsonObject, type PlannedFile } from './config-files.js';
import { readJsonc, withJsoncKey } from './jsonc-file.js';
import { hasCurrentBlock, withInstructionsBlock } from './instructions-block.js';
import { MCP_SERVER_KEY, mcpEntry, vscodePaths } from './wiring.js';
import type { HostPlan, InitContext } from './optional-hosts.js';

// What `svc init` writes for VS Code: svc's server in mcp.json (the workspace's .vscode/mcp.json,
// or the user profile's with --global), edited as JSON with comments so the person's comments and
// other servers and inputs stay; and svc's instructions block, since VS Code's agent takes no
// context from a hook before each prompt (its UserPromptSubmit hook answers nothing to the model).
// VS Code's agent hooks (Preview) also load Claude Code's .claude/settings.json, which svc init
// writes for Claude Code: the handlers read VS Code's field names (handlers/host-adapters.ts).

/** mcp.json with `servers.svc` set to svc's entry, every other byte kept where it can be. */
export function withVsCodeServer(path: string): string {
  return withJsoncKey(path, 'servers', MCP_SERVER_KEY, mcpEntry('vscode'));
}

/** svc's server entry in an mcp.json, if any. */
export function vscodeServerEntry(path: string): JsonObject | undefined {
  const servers = readJsonc(path).data.servers;
  const entry = isObject(servers) ? servers[MCP_SERVER_KEY] : undefined;
  return isObject(entry) ? entry : undefined;
}

/** Whether an mcp.json holds svc's server (false when missing or unreadable). */
export function hasServerEntry(path: string): boolean {
  try {
    return vscodeServerEntry(path) !== undefined;
  } catch {
    return false;
  }
}

/** The user-profile instructions file svc owns whole (--global): applies to every request. */
export function globalInstructions(): string {
  return `---\napplyTo: "**"\ndescription: svc memory - fetch what this project learned before a task, record what you learn\n---\n\n${withInstructionsBlock(null)}`;
}

export function planVsCode(ctx: InitContext): HostPlan {
  const paths = vscodePaths(ctx.scope, ctx.cwd, ctx.home);
  const files: PlannedFile[] = [
    { path: paths.mcp, role: `VS Code MCP server "${MCP_SERVER_KEY}"`, content: withVsCodeServer(paths.mcp) },
    {
      path: paths.instructions,
      role: 'VS Code instructions: call svc_inject before a task, svc_learn on a correction, svc_feedback after',
      content: ctx.scope === 'project' ? withInstructionsBlock(readTextOrNull(paths.instructions)) : globalInstructions(),
    },
  ];
  return {
    files,
    notes: ['VS Code asks you to start (trust) a new MCP server once: accept "svc" when it asks, or start it from the MCP view.'],
  };
}

/** Whether the instructions file holds svc's current block. */
export function hasVsCodeInstructions(path: string): boolean {
  return hasCurrentBlock(readTextOrNull(path));
}
