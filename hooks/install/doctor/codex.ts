import { isObject, readJsonObject, readTextOrNull, type JsonObject } from '../config-files.js';
import { codexHookTrust, codexMcpEntry, codexTrustsProject, parseToml, untrustedCodexHooks } from '../codex-config.js';
import { CODEX_HOOKS, MCP_SERVER_KEY, codexPaths } from '../wiring.js';
import { svcHooksInFile } from '../host-config.js';
import { projectRootOf } from '../../../engine/ops/host-memory.js';
import { hookGaps, hookVerdict, serverCheck, unreadable, type Check } from './check.js';
import type { DoctorResult } from '../optional-hosts.js';

// Codex CLI: svc's hooks in .codex/hooks.json (or ~/.codex/hooks.json), the MCP server in the same
// folder's config.toml, the trust Codex needs before it runs a hook (hashes in
// ~/.codex/config.toml) and, for a project, the folder's own trust, without which Codex reads
// nothing of its .codex/.

export function checkCodex(cwd: string, home: string): DoctorResult {
  const project = codexPaths('project', cwd, home);
  const global = codexPaths('global', cwd, home);
  const scope = svcHooksInFile(project.hooks) === 0 && svcHooksInFile(global.hooks) > 0 ? 'global' : 'project';
  const paths = scope === 'project' ? project : global;
  const fix = scope === 'project' ? 'svc init --codex' : 'svc init --global --codex';
  const checks: Check[] = [];

  let user: JsonObject = {};
  try {
    user = parseToml(readTextOrNull(paths.userConfig) ?? '', paths.userConfig);
  } catch (err) {
    checks.push(unreadable('codex.config', err, paths.userConfig, fix));
  }

  // Hooks: every event of the table, with the current command.
  let hooksData: JsonObject | undefined;
  try {
    hooksData = readJsonObject(paths.hooks).data;
  } catch (err) {
    checks.push(unreadable('codex.hooks', err, paths.hooks, fix));
  }
  if (hooksData) {
    const { missing, stale } = hookGaps(hooksData, CODEX_HOOKS, 'codex');
    checks.push(hookVerdict('codex.hooks', { missing, stale }, CODEX_HOOKS, paths.hooks, home, fix));
    const untrusted = untrustedCodexHooks(user, codexHookTrust(paths.hooks, hooksData));
    if (missing.length === 0 && untrusted.length > 0) {
      checks.push({
        check: 'codex.trust',
        status: 'fail',
        message: `${untrusted.length} of svc's hooks are new or changed since they were trusted (or disabled) in ${paths.userConfig}: Codex will not run them`,
        fix: `${fix} (trusts svc's hooks), or start codex and accept "Hooks need review"`,
      });
    } else if (missing.length === 0)
      checks.push({ check: 'codex.trust', status: 'ok', message: `svc's hooks are trusted in ${paths.userConfig}` });
  }

  // The project folder's own trust: without it Codex loads nothing of .codex/. A warning, as for
  // Claude Code: what svc wrote is sound, and what is left is the person's decision in Codex.
  if (scope === 'project') {
    const root = projectRootOf(cwd);
    checks.push(
      codexTrustsProject(user, root)
        ? { check: 'codex.project', status: 'ok', message: `Codex trusts ${root}` }
        : {
            check: 'codex.project',
            status: 'warn',
            message: `Codex has not been told to trust ${root}: it reads nothing of ${project.dir} (hooks, MCP server) until then`,
            fix: `run codex in ${root} once and accept "Trust this folder", or use svc init --global --codex`,
          },
    );
  }

  // The MCP server: the scope's config.toml, or the user's.
  let entry: JsonObject | undefined;
  let where = paths.config;
  try {
    entry = codexMcpEntry(readTextOrNull(paths.config) ?? '', paths.config);
    if (!entry && scope === 'project') {
      entry = isObject(user.mcp_servers) && isObject(user.mcp_servers[MCP_SERVER_KEY]) ? user.mcp_servers[MCP_SERVER_KEY] : undefined;
      where = paths.userConfig;
    }
  } catch (err) {
    checks.push(unreadable('codex.mcp', err, paths.config, fix));
  }
  const server = serverCheck('codex.mcp', entry, where, home, fix);
  if (!checks.some((c) => c.check === 'codex.mcp')) checks.push(server);
  return { checks, ...(entry && server.status === 'ok' ? { handshake: { check: 'codex.handshake', entry, fix } } : {}) };
}
