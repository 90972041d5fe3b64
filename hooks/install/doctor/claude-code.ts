import { isObject, type JsonObject } from '../config-files.js';
import {
  ASYNC_INJECT,
  CLAUDE_HOOKS,
  MCP_SERVER_KEY,
  claudePaths,
  hookCommand,
  isCurrentMcpEntry,
  isSvcHookCommand,
  runsHook,
  shimPath,
  usesShim,
} from '../wiring.js';
import { isTrusted, mcpApproval } from '../claude-state.js';
import { svcHooksInFile } from '../host-config.js';
import { projectRootOf } from '../../../engine/ops/host-memory.js';
import { entryProblem, readConfig, wiredLine, type Check, type Status } from './check.js';

// Claude Code: the MCP registration (.mcp.json, ~/.claude.json) and the hooks in
// .claude/settings.json (project) and ~/.claude/settings.json (global).

/** `svc init` or `svc init --global`, whichever scope the user installed hooks in. */
export function initCommandFor(cwd: string, home: string): string {
  const project = svcHooksInFile(claudePaths('project', cwd, home).claudeSettings);
  const global = svcHooksInFile(claudePaths('global', cwd, home).claudeSettings);
  return project === 0 && global > 0 ? 'svc init --global' : 'svc init';
}

interface HookEntry {
  event: string;
  command: string;
  entry: JsonObject;
}

function hookEntries(settings: JsonObject): HookEntry[] {
  const out: HookEntry[] = [];
  if (!isObject(settings.hooks)) return out;
  for (const [event, groups] of Object.entries(settings.hooks)) {
    if (!Array.isArray(groups)) continue;
    for (const g of groups) {
      if (!isObject(g) || !Array.isArray(g.hooks)) continue;
      for (const h of g.hooks) if (isObject(h) && typeof h.command === 'string') out.push({ event, command: h.command, entry: h });
    }
  }
  return out;
}

/** The registration check, and the entry a handshake should start (the first one that can run). */
export function checkClaudeMcp(cwd: string, home: string, fix: string): { check: Check; entry?: JsonObject } {
  const name = 'claude.mcp';
  const project = claudePaths('project', cwd, home).claudeMcp;
  const user = claudePaths('global', cwd, home).claudeMcp;
  const found: { where: string; entry: unknown }[] = [];
  for (const path of [project, user]) {
    const read = readConfig(name, path, fix);
    if ('failed' in read) return { check: read.failed };
    const { data } = read;
    if (isObject(data.mcpServers) && MCP_SERVER_KEY in data.mcpServers) found.push({ where: path, entry: data.mcpServers[MCP_SERVER_KEY] });
    // `claude mcp add` without --scope keeps a project's servers in ~/.claude.json under projects.<path>.
    if (path === user && isObject(data.projects)) {
      const p = data.projects[cwd];
      if (isObject(p) && isObject(p.mcpServers) && MCP_SERVER_KEY in p.mcpServers)
        found.push({ where: `${path} (projects.${cwd})`, entry: p.mcpServers[MCP_SERVER_KEY] });
    }
  }
  if (found.length === 0) {
    return {
      check: {
        check: name,
        status: 'fail',
        message: `MCP server "${MCP_SERVER_KEY}" is not registered for Claude Code (looked in ${project} and ${user})`,
        fix,
      },
    };
  }
  const problems = found.map((f) => ({ ...f, problem: entryProblem(f.entry, home) }));
  const good = problems.filter((p) => !p.problem);
  if (good.length === 0) return { check: { check: name, status: 'fail', message: `${problems[0]!.where}: ${problems[0]!.problem}`, fix } };
  const entry = good[0]!.entry as JsonObject;
  const stale = problems.find((p) => p.problem);
  if (stale)
    return {
      check: {
        check: name,
        status: 'warn',
        message: `registered in ${good.map((g) => g.where).join(', ')}; ${stale.where}: ${stale.problem}`,
        fix,
      },
      entry,
    };
  const older = good.find((g) => !isCurrentMcpEntry(g.entry, 'claude-code'));
  if (older) {
    return {
      check: {
        check: name,
        status: 'warn',
        message: `${older.where} names this machine's paths (an older svc init): a teammate's Claude Code cannot start it`,
        fix,
      },
      entry,
    };
  }
  return {
    check: { check: name, status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" registered in ${good.map((g) => g.where).join(', ')}` },
    entry,
  };
}

/**
 * What Claude Code decides on its own for a project install: the .mcp.json server loads only
 * once approved, and an interactive session skips the project's hooks until the folder is trusted.
 */
export function checkClaudeConsent(cwd: string, home: string, fix: string): Check[] {
  if (fix !== 'svc init') return []; // a global install: user-scope servers and hooks need neither
  const checks: Check[] = [];
  const approval = mcpApproval(MCP_SERVER_KEY, cwd, home);
  if (approval.state === 'approved') {
    checks.push({
      check: 'claude.approval',
      status: 'ok',
      message: `the "${MCP_SERVER_KEY}" server of .mcp.json is approved in ${approval.where}`,
    });
  } else if (approval.state === 'rejected') {
    checks.push({
      check: 'claude.approval',
      status: 'fail',
      message: `the "${MCP_SERVER_KEY}" server of .mcp.json was rejected (disabledMcpjsonServers in ${approval.where}): Claude Code does not load it`,
      fix: `svc init (approves it in .claude/settings.local.json), and remove "${MCP_SERVER_KEY}" from disabledMcpjsonServers in ${approval.where}`,
    });
  } else {
    checks.push({
      check: 'claude.approval',
      status: 'fail',
      message: `the "${MCP_SERVER_KEY}" server of .mcp.json awaits approval: Claude Code shows it as pending and loads none of its tools`,
      fix: 'svc init (approves it in .claude/settings.local.json, this machine only), or run claude here and approve it',
    });
  }
  const root = projectRootOf(cwd);
  checks.push(
    isTrusted(cwd, home)
      ? { check: 'claude.trust', status: 'ok', message: `Claude Code trusts ${root}` }
      : {
          check: 'claude.trust',
          status: 'warn',
          message: `Claude Code has not been told to trust ${root}: interactive sessions skip the project's hooks until it is (claude -p runs them)`,
          fix: `run claude in ${root} once and accept the trust dialog`,
        },
  );
  return checks;
}

export function checkClaudeHooks(cwd: string, home: string, fix: string): Check[] {
  const sources: { label: string; path: string; entries: HookEntry[]; disabled: boolean }[] = [];
  const checks: Check[] = [];
  for (const scope of ['project', 'global'] as const) {
    const path = claudePaths(scope, cwd, home).claudeSettings;
    if (sources.some((s) => s.path === path)) continue; // a project in the home folder: one file
    const read = readConfig('hooks', path, fix);
    if ('failed' in read) checks.push(read.failed);
    else sources.push({ label: scope, path, entries: hookEntries(read.data), disabled: read.data.disableAllHooks === true });
  }
  for (const s of sources.filter((x) => x.disabled)) {
    checks.push({
      check: 'hooks',
      status: 'fail',
      message: `${s.path} sets disableAllHooks: no hook runs, svc's included`,
      fix: `remove "disableAllHooks" from ${s.path}`,
    });
  }
  const ours = sources.filter((s) => s.entries.some((e) => isSvcHookCommand(e.command)));
  if (ours.length === 0) {
    checks.push({
      check: 'hooks',
      status: 'fail',
      message: `no svc hooks in ${sources.map((s) => s.path).join(' or ')}: nothing injects memory before prompts or learns after them`,
      fix,
    });
    return checks;
  }
  if (ours.length > 1) {
    checks.push({
      check: 'hooks',
      status: 'warn',
      message: `svc hooks are in both ${ours.map((s) => s.path).join(' and ')}: each runs twice`,
      fix: `remove svc's entries from one of the two files, then ${fix}`,
    });
  }
  const events = [...new Set(CLAUDE_HOOKS.map((h) => h.event))];
  for (const event of events) {
    const problems: { status: Status; text: string }[] = [];
    const wired: string[] = [];
    for (const spec of CLAUDE_HOOKS.filter((h) => h.event === event)) {
      const hits = ours.flatMap((s) =>
        s.entries
          .filter((e) => e.event === event && isSvcHookCommand(e.command) && runsHook(e.command, spec.hook))
          .map((e) => ({ ...e, label: s.label })),
      );
      if (hits.length === 0) {
        problems.push({ status: 'fail', text: `${spec.hook} is not wired` });
        continue;
      }
      const current = hits.find((h) => h.command === hookCommand(spec.hook));
      if (!current) {
        const h = hits[0]!;
        const text = !usesShim(h.command)
          ? `${spec.hook} uses an older install's command (${h.command})`
          : h.command.includes(shimPath(home))
            ? `${spec.hook} names this machine's path (an older svc init; a teammate's Claude Code cannot run it)`
            : `${spec.hook} calls another shim (${h.command})`;
        problems.push({ status: 'warn', text });
        continue;
      }
      // hook-inject may run asynchronously when asked for (svc init --async-inject).
      const asyncInject = spec.hook === 'hook-inject' && current.entry.async === true && current.entry.timeout === ASYNC_INJECT.timeout;
      if (!asyncInject && (current.entry.async === true || current.entry.timeout !== spec.timeout)) {
        problems.push({
          status: 'warn',
          text: `${spec.hook} should run with timeout ${spec.timeout}${spec.async ? ' in the background' : ', not in the background'} (older install)`,
        });
        continue;
      }
      wired.push(`${spec.hook} (${current.label})`);
    }
    const check = `hooks.${event}`;
    const worst: Status = problems.some((p) => p.status === 'fail') ? 'fail' : problems.length > 0 ? 'warn' : 'ok';
    checks.push(
      worst === 'ok'
        ? wiredLine(check, wired.join(', '), home, fix)
        : { check, status: worst, message: problems.map((p) => p.text).join('; '), fix },
    );
  }
  return checks;
}
