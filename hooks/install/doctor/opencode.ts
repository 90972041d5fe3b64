import { existsSync } from 'node:fs';
import { readTextOrNull, type JsonObject } from '../config-files.js';
import { opencodeServerEntry } from '../opencode-install.js';
import { opencodePluginSource } from '../opencode-plugin.js';
import { MCP_SERVER_KEY, opencodeMcpEntry, opencodePaths } from '../wiring.js';
import { unreadable, wiredLine, type Check } from './check.js';
import type { DoctorResult } from '../optional-hosts.js';

// opencode: svc's `mcp.svc` in opencode.json (the project's, else ~/.config/opencode's) and svc's
// plugin beside it, as the current svc writes it. opencode asks no approval for either.

/** Whether `svc init --global --opencode` wired opencode in the home. */
export function opencodeWiredGlobally(home: string): boolean {
  return existsSync(opencodePaths('global', home, home).plugin);
}

export function checkOpencode(cwd: string, home: string): DoctorResult {
  const project = opencodePaths('project', cwd, home);
  const global = opencodePaths('global', cwd, home);
  const paths = existsSync(project.plugin) || !existsSync(global.plugin) ? project : global;
  const fix = paths === project ? 'svc init --opencode' : 'svc init --global --opencode';
  const checks: Check[] = [];

  let entry: JsonObject | undefined;
  try {
    entry = opencodeServerEntry(paths.config);
  } catch (err) {
    checks.push(unreadable('opencode.mcp', err, paths.config, fix));
  }
  const want = opencodeMcpEntry();
  const current = entry !== undefined && JSON.stringify(entry.command) === JSON.stringify(want.command);
  if (entry === undefined) {
    if (checks.length === 0)
      checks.push({ check: 'opencode.mcp', status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is not in ${paths.config}`, fix });
  } else if (entry.enabled === false) {
    checks.push({ check: 'opencode.mcp', status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is disabled in ${paths.config}`, fix });
  } else if (!current) {
    checks.push({
      check: 'opencode.mcp',
      status: 'fail',
      message: `${paths.config}: "${MCP_SERVER_KEY}" runs ${JSON.stringify(entry.command)}, not the shim through $HOME`,
      fix,
    });
  } else checks.push({ check: 'opencode.mcp', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" in ${paths.config}` });

  const plugin = readTextOrNull(paths.plugin);
  if (plugin === null) {
    checks.push({ check: 'opencode.plugin', status: 'fail', message: `${paths.plugin} is missing: no svc hook runs in opencode`, fix });
  } else if (plugin !== opencodePluginSource()) {
    checks.push({
      check: 'opencode.plugin',
      status: 'warn',
      message: `${paths.plugin} is not the plugin this svc writes (older, or edited by hand)`,
      fix,
    });
  } else checks.push(wiredLine('opencode.plugin', `svc's plugin in ${paths.plugin}`, home, fix));

  // The handshake starts the command as opencode does: the array's first word with the rest as arguments.
  const [command, ...args] = want.command;
  return {
    checks,
    ...(current && entry?.enabled !== false ? { handshake: { check: 'opencode.handshake', entry: { command, args }, fix } } : {}),
  };
}
