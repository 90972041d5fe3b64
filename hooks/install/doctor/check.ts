import { existsSync, statSync } from 'node:fs';
import { isObject, readJsonObject, type JsonObject } from '../config-files.js';
import { MCP_SERVER_KEY, expandHomeVariable, hookCommand, isSvcHookCommand, runsHook, shimPath } from '../wiring.js';
import { hookCommandsByEvent } from '../host-config.js';
import type { HookName } from '../../hook-names.js';
import type { HostId } from '../../hosts.js';

// What every doctor check returns, and the small helpers the per-host checks share.

export type Status = 'ok' | 'warn' | 'fail';

export interface Check {
  check: string;
  status: Status;
  message: string;
  /** Lines under the message (e.g. the failures a log holds). */
  details?: string[];
  /** For failures (and some warnings): the command, or the step, that fixes it. */
  fix?: string;
}

export function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A config file's JSON, or the failing check that says it cannot be read and how to fix it. */
export function readConfig(check: string, path: string, fix: string): { data: JsonObject } | { failed: Check } {
  try {
    return { data: readJsonObject(path).data };
  } catch (err) {
    return {
      failed: {
        check,
        status: 'fail',
        message: (err as Error).message.replace(/; fix it by hand.*$/, ''),
        fix: `fix the JSON in ${path} by hand, then ${fix}`,
      },
    };
  }
}

/** Why an MCP entry cannot start svc's server, or null when it can ($HOME as the host expands it). */
export function entryProblem(entry: unknown, home: string): string | null {
  if (!isObject(entry) || typeof entry.command !== 'string') return 'the entry has no command';
  const args = Array.isArray(entry.args) ? entry.args.map(String) : [];
  if (!args.some((a) => /(^|\s)mcp$/.test(a))) return `the entry does not run "mcp" (args ${JSON.stringify(args)})`;
  const command = expandHomeVariable(entry.command, home);
  if (command.includes('/') && !existsSync(command)) return `its command ${entry.command} does not exist`;
  if (command.includes('/') && command !== shimPath(home) && /svc-hook$/.test(command))
    return `its command ${command} is another home's shim`;
  return null;
}

/**
 * The closing line of a host's hook check: "wired to the shim" only when the shim is there;
 * hooks pointing at a missing shim run nothing.
 */
export function wiredLine(check: string, wired: string, home: string, fix: string): Check {
  const shim = shimPath(home);
  if (!existsSync(shim)) return { check, status: 'fail', message: `${wired} wired to ${shim}, which is missing: no hook runs`, fix };
  return { check, status: 'ok', message: `${wired} wired to the shim` };
}

/** The failing check for a config file that cannot be read or parsed (the error names it). */
export function unreadable(check: string, err: unknown, path: string, fix: string): Check {
  return {
    check,
    status: 'fail',
    message: (err as Error).message.replace(/; fix it by hand.*$/, ''),
    fix: `fix ${path} by hand, then ${fix}`,
  };
}

/** The check of svc's MCP entry in a host's `file`: missing, unable to start svc, or ok. */
export function serverCheck(check: string, entry: JsonObject | undefined, file: string, home: string, fix: string): Check {
  if (!entry) return { check, status: 'fail', message: `MCP server "${MCP_SERVER_KEY}" is not in ${file}`, fix };
  const problem = entryProblem(entry, home);
  if (problem) return { check, status: 'fail', message: `${file}: ${problem}`, fix };
  return { check, status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" in ${file}` };
}

/** Which hooks of `specs` a hooks object of Claude Code's shape lacks, and which run an older command than this svc writes. */
export function hookGaps(
  settings: JsonObject,
  specs: readonly { event: string; hook: HookName }[],
  host?: HostId,
): { missing: string[]; stale: string[] } {
  const commands = hookCommandsByEvent(settings);
  const missing: string[] = [];
  const stale: string[] = [];
  for (const spec of specs) {
    const mine = (commands.get(spec.event) ?? []).filter((c) => isSvcHookCommand(c) && runsHook(c, spec.hook));
    if (mine.length === 0) missing.push(`${spec.event} -> ${spec.hook}`);
    else if (!mine.includes(hookCommand(spec.hook, host))) stale.push(`${spec.event} -> ${mine[0]}`);
  }
  return { missing, stale };
}

/** The verdict on svc's hooks from their gaps: a hook missing fails, an older command warns, else wired (when the shim is there). */
export function hookVerdict(
  check: string,
  gaps: { missing: string[]; stale: string[] },
  specs: readonly { event: string }[],
  file: string,
  home: string,
  fix: string,
): Check {
  if (gaps.missing.length > 0) return { check, status: 'fail', message: `not wired in ${file}: ${gaps.missing.join(', ')}`, fix };
  if (gaps.stale.length > 0) return { check, status: 'warn', message: `older commands in ${file}: ${gaps.stale.join(', ')}`, fix };
  return wiredLine(check, [...new Set(specs.map((h) => h.event))].join(', '), home, fix);
}
