import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRootOf } from '../../engine/ops/host-memory.js';
import { isObject, readJsonObject, type JsonObject } from './config-files.js';
import { claudePaths } from './wiring.js';

// What Claude Code itself decides about a project, read from its files: whether the folder is
// trusted (until it is, an interactive session drops the project's hooks) and whether the
// project's .mcp.json server is approved (until it is, the server is "pending" and not loaded).
// Claude Code keys its per-project state by the git root (else the folder), and takes approvals
// from the user's settings and the project's local settings only: the committed
// .claude/settings.json cannot approve its own project's servers, and local settings that git
// tracks are ignored too.

export type Approval = { state: 'approved' | 'rejected'; where: string } | { state: 'pending' };

/** The project's local settings, beside its .claude/settings.json (where Claude Code is started). */
export function claudeLocalSettings(cwd: string): string {
  return join(cwd, '.claude', 'settings.local.json');
}

function read(path: string): JsonObject {
  try {
    return readJsonObject(path).data;
  } catch {
    return {};
  }
}

/** Claude Code's state for this project in ~/.claude.json, if any. */
function projectState(cwd: string, home: string): JsonObject | undefined {
  const projects = read(claudePaths('global', cwd, home).claudeMcp).projects;
  const p = isObject(projects) ? projects[projectRootOf(cwd)] : undefined;
  return isObject(p) ? p : undefined;
}

export function isTrusted(cwd: string, home: string): boolean {
  return projectState(cwd, home)?.hasTrustDialogAccepted === true;
}

/** Whether git tracks the local settings file (Claude Code then ignores it). */
function trackedByGit(file: string, cwd: string): boolean {
  try {
    execFileSync('git', ['-C', cwd, 'ls-files', '--error-unmatch', '--', file], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function mcpApproval(key: string, cwd: string, home: string): Approval {
  const local = claudeLocalSettings(cwd);
  const sources: Array<{ where: string; data: JsonObject | undefined }> = [
    { where: join(home, '.claude', 'settings.json'), data: read(join(home, '.claude', 'settings.json')) },
    { where: local, data: trackedByGit(local, cwd) ? undefined : read(local) },
    // Older Claude Code versions kept approvals with the project's state.
    { where: `${claudePaths('global', cwd, home).claudeMcp} (projects.${projectRootOf(cwd)})`, data: projectState(cwd, home) },
  ];
  const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  for (const s of sources) if (s.data && names(s.data.disabledMcpjsonServers).includes(key)) return { state: 'rejected', where: s.where };
  for (const s of sources) {
    if (s.data && (names(s.data.enabledMcpjsonServers).includes(key) || s.data.enableAllProjectMcpServers === true))
      return { state: 'approved', where: s.where };
  }
  return { state: 'pending' };
}
