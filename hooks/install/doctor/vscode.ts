import { isCurrentMcpEntry, vscodePaths } from '../wiring.js';
import { hasServerEntry, hasVsCodeInstructions, vscodeServerEntry } from '../vscode-install.js';
import { serverCheck, unreadable, type Check } from './check.js';
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
    checks.push(unreadable('vscode.mcp', err, paths.mcp, fix));
  }
  const server = serverCheck('vscode.mcp', entry, paths.mcp, home, fix);
  if (checks.length === 0) {
    checks.push(
      server.status === 'ok' && entry && !isCurrentMcpEntry(entry, 'vscode')
        ? { check: 'vscode.mcp', status: 'warn', message: `${paths.mcp} runs ${String(entry.command)}, not the shim through $HOME`, fix }
        : server,
    );
  }

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
  return { checks, ...(entry && server.status === 'ok' ? { handshake: { check: 'vscode.handshake', entry, fix } } : {}) };
}
