import { isObject, type JsonObject, type PlannedFile } from './config-files.js';
import { readJsonc, withJsoncKey } from './jsonc-file.js';
import { opencodePluginSource } from './opencode-plugin.js';
import { MCP_SERVER_KEY, OPENCODE_HOOKS, opencodeMcpEntry, opencodePaths } from './wiring.js';
import type { HostPlan, InitContext } from './optional-hosts.js';

// What `svc init` writes for opencode: svc's MCP server as `mcp.svc` in opencode.json (JSON with
// comments, edited in place so the person's comments and keys stay), and svc's plugin, a file svc
// owns whole, which runs svc's hooks (opencode-plugin.ts). opencode asks no approval for either.

/** A new opencode.json names opencode's schema, as opencode's own files do. */
const NEW_CONFIG = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n';

/** svc's `mcp.svc` entry in an opencode config file, if any. */
export function opencodeServerEntry(path: string): JsonObject | undefined {
  const mcp = readJsonc(path).data.mcp;
  const entry = isObject(mcp) ? mcp[MCP_SERVER_KEY] : undefined;
  return isObject(entry) ? entry : undefined;
}

export function planOpencode(ctx: InitContext): HostPlan {
  const paths = opencodePaths(ctx.scope, ctx.cwd, ctx.home);
  const events = [...new Set(OPENCODE_HOOKS.map((h) => h.event))];
  const files: PlannedFile[] = [
    {
      path: paths.config,
      role: `opencode MCP server "${MCP_SERVER_KEY}"`,
      content: withJsoncKey(paths.config, 'mcp', MCP_SERVER_KEY, opencodeMcpEntry(), NEW_CONFIG),
    },
    { path: paths.plugin, role: `opencode plugin running svc's hooks (${events.join(', ')})`, content: opencodePluginSource() },
  ];
  return {
    files,
    notes: [
      "opencode continues a session with svc's reminder to record a correction only where its server outlives the turn (the TUI, opencode serve); `opencode run` exits first.",
    ],
  };
}
