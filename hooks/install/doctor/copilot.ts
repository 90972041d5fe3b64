import { existsSync } from 'node:fs';
import { isObject, readJsonObject, type JsonObject } from '../config-files.js';
import { copilotTrustedFolders, copilotTrusts } from '../copilot-install.js';
import { COPILOT_HOOKS, MCP_SERVER_KEY, copilotPaths } from '../wiring.js';
import { svcHooksInFile } from '../host-config.js';
import { projectRootOf } from '../../../engine/ops/host-memory.js';
import { entryProblem, hookGaps, hookVerdict, readConfig, type Check } from './check.js';
import type { DoctorResult } from '../optional-hosts.js';

// GitHub Copilot CLI: svc's hooks in .github/hooks/svc.json (or ~/.copilot/hooks/svc.json), the
// MCP server where Copilot reads it (a project's .mcp.json when there is one, else its
// .github/mcp.json; ~/.copilot/mcp-config.json for every project) and, for a project, the
// folder's trust, without which Copilot loads neither the project's hooks nor its servers.

/** svc's MCP entry in a JSON file with `mcpServers`, undefined when absent or unreadable. */
function serverIn(path: string): JsonObject | undefined {
  try {
    const servers = readJsonObject(path).data.mcpServers;
    return isObject(servers) && isObject(servers[MCP_SERVER_KEY]) ? servers[MCP_SERVER_KEY] : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `svc init --global --copilot` wired Copilot in the home (~/.copilot/hooks/svc.json). */
export function copilotWiredGlobally(home: string): boolean {
  return svcHooksInFile(copilotPaths('global', home, home).hooks) > 0;
}

export function checkCopilot(cwd: string, home: string): DoctorResult {
  const project = copilotPaths('project', cwd, home);
  const global = copilotPaths('global', cwd, home);
  const inProject = svcHooksInFile(project.hooks) > 0;
  const inUser = svcHooksInFile(global.hooks) > 0;
  const scope = !inProject && inUser ? 'global' : 'project';
  const paths = scope === 'project' ? project : global;
  const fix = scope === 'project' ? 'svc init --copilot' : 'svc init --global --copilot';
  const checks: Check[] = [];

  // Hooks: every event of the table, with the current command.
  const hooks = readConfig('copilot.hooks', paths.hooks, fix);
  if ('failed' in hooks) checks.push(hooks.failed);
  else checks.push(hookVerdict('copilot.hooks', hookGaps(hooks.data, COPILOT_HOOKS, 'copilot'), COPILOT_HOOKS, paths.hooks, home, fix));

  // Copilot runs the user's hooks and the project's side by side: each svc hook would run twice.
  if (scope === 'project' && inProject && inUser) {
    checks.push({
      check: 'copilot.duplicate',
      status: 'warn',
      message: `svc's hooks are in both ${project.hooks} and ${global.hooks}: Copilot runs both, so each hook runs twice here`,
      fix: `keep one: delete ${global.hooks} (svc init --copilot wires each project) or ${project.hooks}`,
    });
  }

  // The project folder's trust: without it Copilot loads none of the project's hooks and servers.
  if (scope === 'project') {
    const root = projectRootOf(cwd);
    checks.push(
      copilotTrusts(copilotTrustedFolders(project.userConfig), root)
        ? { check: 'copilot.project', status: 'ok', message: `GitHub Copilot CLI trusts ${root}` }
        : {
            check: 'copilot.project',
            status: 'warn',
            message: `GitHub Copilot CLI has not been told to trust ${root} (${project.userConfig}): it loads none of the project's hooks or MCP servers until then`,
            fix: `run copilot in ${root} once and accept its trust prompt, or use svc init --global --copilot`,
          },
    );
  }

  // The MCP server: in a project Copilot reads .mcp.json when it exists (and then not
  // .github/mcp.json); the user's mcp-config.json adds to either.
  const projectFile = project.sharedMcp && existsSync(project.sharedMcp) ? project.sharedMcp : project.mcp;
  const candidates = scope === 'project' ? [projectFile, global.mcp] : [global.mcp];
  const where = candidates.find((p) => serverIn(p) !== undefined);
  const entry = where ? serverIn(where) : undefined;
  const problem = entry ? entryProblem(entry, home) : 'missing';
  if (!entry || !where) {
    const shadowed = scope === 'project' && projectFile !== project.mcp && serverIn(project.mcp) !== undefined;
    checks.push({
      check: 'copilot.mcp',
      status: 'fail',
      message: shadowed
        ? `MCP server "${MCP_SERVER_KEY}" is in ${project.mcp}, which Copilot skips because ${projectFile} exists without it`
        : `MCP server "${MCP_SERVER_KEY}" is not in ${candidates.join(' or ')}`,
      fix: scope === 'project' ? 'svc init --copilot (writes it to both)' : fix,
    });
  } else if (problem) checks.push({ check: 'copilot.mcp', status: 'fail', message: `${where}: ${problem}`, fix });
  else checks.push({ check: 'copilot.mcp', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" in ${where}` });

  return { checks, ...(entry && !problem ? { handshake: { check: 'copilot.handshake', entry, fix } } : {}) };
}
