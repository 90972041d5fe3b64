import { existsSync, readFileSync } from 'node:fs';
import { isObject, type JsonObject } from '../config-files.js';
import {
  CURSOR_DYNAMIC_RULES_GLOB,
  CURSOR_HOOKS,
  MCP_SERVER_KEY,
  cursorPaths,
  hookCommand,
  isCurrentMcpEntry,
  isSvcHookCommand,
  runsHook,
} from '../wiring.js';
import { entryProblem, readConfig, wiredLine, type Check } from './check.js';

// Cursor, when the project has a .cursor/ folder: .cursor/mcp.json (lean tool profile),
// .cursor/hooks.json, the rules file and the gitignored run-time rules.

/** The checks, and the MCP entry a handshake should start when it can run. */
export function checkCursor(cwd: string, home: string): { checks: Check[]; entry?: JsonObject } {
  const c = cursorPaths(cwd);
  const fix = 'svc init --cursor';
  const checks: Check[] = [];

  let entry: JsonObject | undefined;
  const mcp = readConfig('cursor.mcp', c.mcp, fix);
  if ('failed' in mcp) checks.push(mcp.failed);
  else {
    const e = isObject(mcp.data.mcpServers) ? mcp.data.mcpServers[MCP_SERVER_KEY] : undefined;
    entry = isObject(e) ? e : undefined;
    const env = entry && isObject(entry.env) ? entry.env : {};
    const problem = entry ? entryProblem(entry, home) : null;
    if (!entry) checks.push({ check: 'cursor.mcp', status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is not in ${c.mcp}`, fix });
    else if (problem) checks.push({ check: 'cursor.mcp', status: 'fail', message: `${c.mcp}: ${problem}`, fix });
    else if (env.SVC_TOOL_PROFILE !== 'lean') {
      checks.push({
        check: 'cursor.mcp',
        status: 'fail',
        message: `${c.mcp} does not set SVC_TOOL_PROFILE=lean: Cursor gets the full tool surface`,
        fix,
      });
    } else if (!isCurrentMcpEntry(entry, 'cursor')) {
      checks.push({
        check: 'cursor.mcp',
        status: 'warn',
        message: `${c.mcp} runs ${String(entry.command)}, not the shim through $HOME (an older svc init, or an entry of your own)`,
        fix,
      });
    } else checks.push({ check: 'cursor.mcp', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" (lean profile) in ${c.mcp}` });
    if (problem) entry = undefined;
  }

  const read = readConfig('cursor.hooks', c.hooks, fix);
  if ('failed' in read) checks.push(read.failed);
  else {
    const hooks = isObject(read.data.hooks) ? read.data.hooks : {};
    const missing: string[] = [];
    const stale: string[] = [];
    for (const spec of CURSOR_HOOKS) {
      const list = Array.isArray(hooks[spec.event]) ? (hooks[spec.event] as unknown[]) : [];
      const commands = list
        .filter(isObject)
        .map((h) => h.command)
        .filter((x): x is string => typeof x === 'string');
      const mine = commands.filter((cmd) => isSvcHookCommand(cmd) && runsHook(cmd, spec.hook));
      if (mine.length === 0) missing.push(`${spec.event} -> ${spec.hook}`);
      else if (!mine.includes(hookCommand(spec.hook))) stale.push(`${spec.event} -> ${mine[0]}`);
    }
    if (missing.length > 0)
      checks.push({ check: 'cursor.hooks', status: 'fail', message: `not wired in ${c.hooks}: ${missing.join(', ')}`, fix });
    else if (stale.length > 0)
      checks.push({ check: 'cursor.hooks', status: 'warn', message: `older commands in ${c.hooks}: ${stale.join(', ')}`, fix });
    else if (read.data.version !== 1)
      checks.push({
        check: 'cursor.hooks',
        status: 'warn',
        message: `${c.hooks} has version ${JSON.stringify(read.data.version)}, expected 1`,
        fix,
      });
    else checks.push(wiredLine('cursor.hooks', CURSOR_HOOKS.map((h) => h.event).join(', '), home, fix));
  }

  checks.push(
    existsSync(c.rules)
      ? { check: 'cursor.rules', status: 'ok', message: `${c.rules} present` }
      : { check: 'cursor.rules', status: 'warn', message: `${c.rules} is missing: the agent is not told how to use svc`, fix },
  );
  const gitignore = existsSync(c.gitignore) ? readFileSync(c.gitignore, 'utf8') : '';
  checks.push(
    gitignore.split(/\r?\n/).some((l) => l.trim() === CURSOR_DYNAMIC_RULES_GLOB || l.trim() === `/${CURSOR_DYNAMIC_RULES_GLOB}`)
      ? { check: 'cursor.gitignore', status: 'ok', message: `${CURSOR_DYNAMIC_RULES_GLOB} is gitignored` }
      : {
          check: 'cursor.gitignore',
          status: 'warn',
          message: `${CURSOR_DYNAMIC_RULES_GLOB} is not in ${c.gitignore}: run-time rules files could be committed`,
          fix,
        },
  );
  return { checks, ...(entry ? { entry } : {}) };
}
