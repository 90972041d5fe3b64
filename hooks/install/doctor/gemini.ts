import { isObject, type JsonObject } from '../config-files.js';
import { readJsonc } from '../jsonc-file.js';
import { hasGeminiSvcHooks, geminiTrustsFolder } from '../gemini-install.js';
import { GEMINI_HOOKS, MCP_SERVER_KEY, geminiPaths } from '../wiring.js';
import { hookGaps, serverCheck, wiredLine, type Check } from './check.js';
import type { DoctorResult } from '../optional-hosts.js';

// Gemini CLI: svc's hooks and MCP server in .gemini/settings.json (or ~/.gemini/settings.json),
// the server's `trust` (without it Gemini asks before each call, and `gemini -p` leaves svc's
// tools out), hooks not switched off, and, for a project, the folder's trust, without which
// Gemini CLI reads nothing of the project's .gemini/.

function read(path: string): JsonObject | Error {
  try {
    return readJsonc(path, { trailingCommas: false }).data;
  } catch (err) {
    return err as Error;
  }
}

export function checkGemini(cwd: string, home: string): DoctorResult {
  const project = geminiPaths('project', cwd, home);
  const global = geminiPaths('global', cwd, home);
  const projectData = read(project.settings);
  const userData = read(global.settings);
  const inProject = hasGeminiSvcHooks(project.settings);
  const inUser = hasGeminiSvcHooks(global.settings);
  const scope = !inProject && inUser ? 'global' : 'project';
  const paths = scope === 'project' ? project : global;
  const data = scope === 'project' ? projectData : userData;
  const fix = scope === 'project' ? 'svc init --gemini' : 'svc init --global --gemini';
  const checks: Check[] = [];

  if (data instanceof Error) {
    checks.push({
      check: 'gemini.settings',
      status: 'fail',
      message: data.message.replace(/; fix it by hand.*$/, ''),
      fix: `fix the JSON in ${paths.settings} by hand, then ${fix}`,
    });
    return { checks };
  }

  // Hooks: every event of the table, with the current command, and hooks not switched off.
  const { missing, stale } = hookGaps(data, GEMINI_HOOKS, 'gemini');
  const off = [data, userData].find((d) => !(d instanceof Error) && isObject(d.hooksConfig) && d.hooksConfig.enabled === false);
  if (missing.length > 0) {
    checks.push({ check: 'gemini.hooks', status: 'fail', message: `not wired in ${paths.settings}: ${missing.join(', ')}`, fix });
  } else if (off) {
    const where = off === data ? paths.settings : global.settings;
    checks.push({
      check: 'gemini.hooks',
      status: 'fail',
      message: `hooksConfig.enabled is false in ${where}: Gemini CLI runs no hook`,
      fix: `remove "hooksConfig": {"enabled": false} from ${where}`,
    });
  } else if (stale.length > 0) {
    checks.push({ check: 'gemini.hooks', status: 'warn', message: `older commands in ${paths.settings}: ${stale.join(', ')}`, fix });
  } else if (inProject && inUser) {
    checks.push({
      check: 'gemini.hooks',
      status: 'warn',
      message: `svc's hooks are in both ${project.settings} and ${global.settings}: Gemini CLI runs each twice`,
      fix: `remove svc's entries from one of the two files`,
    });
  } else {
    checks.push(wiredLine('gemini.hooks', [...new Set(GEMINI_HOOKS.map((h) => h.event))].join(', '), home, fix));
  }

  // The MCP server, and its approval.
  const servers = isObject(data.mcpServers) ? data.mcpServers : {};
  const entry = isObject(servers[MCP_SERVER_KEY]) ? servers[MCP_SERVER_KEY] : undefined;
  const server = serverCheck('gemini.mcp', entry, paths.settings, home, fix);
  checks.push(server);
  if (entry && server.status === 'ok') {
    checks.push(
      entry.trust === true
        ? { check: 'gemini.approval', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" is trusted: its tools run without a prompt` }
        : {
            check: 'gemini.approval',
            status: 'warn',
            message: `MCP server "${MCP_SERVER_KEY}" is not trusted: Gemini CLI asks before each call, and gemini -p leaves svc's tools out`,
            fix: `${fix} (sets "trust": true), or add it to mcpServers.${MCP_SERVER_KEY} by hand`,
          },
    );
  }

  // The project folder's own trust: without it Gemini CLI ignores .gemini/settings.json.
  if (scope === 'project') {
    const trusted = geminiTrustsFolder(cwd, home);
    checks.push(
      trusted === true
        ? { check: 'gemini.folder', status: 'ok', message: `Gemini CLI trusts ${cwd}` }
        : {
            check: 'gemini.folder',
            status: 'warn',
            message:
              trusted === false
                ? `Gemini CLI is told not to trust ${cwd} (${global.trustedFolders}): it reads nothing of ${project.settings}`
                : `Gemini CLI has not been told to trust ${cwd}: it reads nothing of ${project.settings} (and gemini -p stops) until then`,
            fix: `run gemini in ${cwd} once and choose "Trust folder" (or /permissions in a session there)`,
          },
    );
  }

  return { checks, ...(entry && server.status === 'ok' ? { handshake: { check: 'gemini.handshake', entry, fix } } : {}) };
}
