import { isCurrentMcpEntry, MCP_SERVER_KEY, vscodePaths } from '../wiring.js';
import { hasServerEntry, hasVsCodeInstructions, vscodeServerEntry } from '../vscode-install.js';
import { entryProblem, type Check } from './check.js';
import type { DoctorResult } from '../optional-hosts.js';

// VS Code: svc's server in mcp.json (workspace, else the user profile's) and the instructions
// block that asks its agent to fetch memory before a task.

export function checkVsCode(cwd: string, home: string): DoctorResult {
  const project = vscodePaths('project', cwd, home);
  const global = vscodePaths('global', cwd, home);
  const paths = hasServerEntry(project.mcp) || !hasServerEntry(global.mcp) ? project : global;
  const fix = paths === project ? 'svc init --vscode' : 'svc init --global --vscode';
  const checks: Check[] = [];

  let entry;
  try {
    entry = vscodeServerEntry(paths.mcp);
  } catch (err) {
    checks.push({
      check: 'vscode.mcp',
      status: 'fail',
      message: (err as Error).message.replace(/; fix it by hand.*$/, ''),
      fix: `fix ${paths.mcp} by hand, then ${fix}`,
    });
  }
  const problem = entry ? entryProblem(entry, home) : null;
  if (!entry) {
    if (!checks.length)
      checks.push({ check: 'vscode.mcp', status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is not in ${paths.mcp}`, fix });
  } else if (problem) checks.push({ check: 'vscode.mcp', status: 'fail', message: `${paths.mcp}: ${problem}`, fix });
  else if (!isCurrentMcpEntry(entry, 'vscode')) {
    checks.push({
      check: 'vscode.mcp',
      status: 'warn',
      message: `${paths.mcp} runs ${String(entry.command)}, not the shim through $HOME`,
      fix,
    });
  } else checks.push({ check: 'vscode.mcp', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" in ${paths.mcp}` });

  checks.push(
    hasVsCodeInstructions(paths.instructions)
      ? { check: 'vscode.instructions', status: 'ok', message: `svc's instructions in ${paths.instructions}` }
      : {
          check: 'vscode.instructions',
          status: 'warn',
          message: `${paths.instructions} does not hold svc's current instructions: the agent is not told to fetch memory before a task`,
          fix,
        },
  );
  return { checks, ...(entry && !problem ? { handshake: { check: 'vscode.handshake', entry, fix } } : {}) };
}
