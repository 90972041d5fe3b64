import { join } from 'node:path';
import { formatJson, readJsonObject, readTextOrNull, type PlannedFile } from './config-files.js';
import type { HostPlan, InitContext } from './optional-hosts.js';
import { withHookGroups } from './host-config.js';
import { codexHookTrust, codexTrustsProject, parseToml, withCodexHookTrust, withCodexMcpServer } from './codex-config.js';
import { CODEX_HOOKS, MCP_SERVER_KEY, codexPaths } from './wiring.js';
import { projectRootOf } from '../../engine/ops/host-memory.js';

// What `svc init` writes for Codex CLI: svc's hooks in hooks.json (Claude Code's shape), svc's MCP
// server in config.toml, both in the project's .codex/ or, with --global, in ~/.codex/; and, unless
// --no-approve, the trust of svc's own hooks in ~/.codex/config.toml (Codex runs no hook of a
// hooks.json until the person trusts it).

export function planCodex(ctx: InitContext): HostPlan {
  const paths = codexPaths(ctx.scope, ctx.cwd, ctx.home);
  const files: PlannedFile[] = [];
  const notes: string[] = [];

  const hooksFile = withHookGroups(readJsonObject(paths.hooks).data, paths.hooks, CODEX_HOOKS, 'codex');
  const events = [...new Set(CODEX_HOOKS.map((h) => h.event))];
  files.push({ path: paths.hooks, role: `Codex CLI hooks (${events.join(', ')})`, content: formatJson(hooksFile) });

  // With --global the MCP entry and the trust go to one file, ~/.codex/config.toml.
  const separateUser = paths.userConfig !== paths.config;
  const userText = readTextOrNull(paths.userConfig) ?? '';
  const userConfig = parseToml(userText, paths.userConfig);
  let config = withCodexMcpServer(readTextOrNull(paths.config) ?? '', paths.config);
  let user: string | undefined;
  if (ctx.approve) {
    const trust = codexHookTrust(paths.hooks, hooksFile);
    if (separateUser) user = withCodexHookTrust(userText, paths.userConfig, trust);
    else config = withCodexHookTrust(config, paths.config, trust);
  } else {
    notes.push(
      'Codex CLI runs no hook until you trust it: start codex and accept "Hooks need review" (or /hooks), or run svc init without --no-approve.',
    );
  }
  files.push({
    path: paths.config,
    role: `Codex CLI MCP server "${MCP_SERVER_KEY}"${!separateUser && ctx.approve ? " and the trust of svc's hooks" : ''}`,
    content: config,
  });
  if (user !== undefined) {
    files.push({ path: paths.userConfig, role: "Codex CLI: trusts svc's hooks (this machine only)", content: user, mode: 0o600 });
  }

  if (ctx.scope === 'project') {
    const root = projectRootOf(ctx.cwd);
    if (!codexTrustsProject(userConfig, root)) {
      notes.push(
        `Codex CLI reads ${join(root, '.codex')} only once you trust ${root}: run codex there once and accept "Trust this folder" (svc does not trust folders for you).`,
      );
    }
  }
  return { files, notes };
}
