import { homedir } from 'node:os';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { cursorPaths } from './wiring.js';
import { isDir, type Check, type Status } from './doctor/check.js';
import { checkShim, readShimStore } from './doctor/shim.js';
import { checkClaudeConsent, checkClaudeHooks, checkClaudeMcp, initCommandFor } from './doctor/claude-code.js';
import { checkDesktop } from './doctor/desktop.js';
import { checkCursor } from './doctor/cursor.js';
import { checkStorage } from './doctor/store.js';
import { checkRemoteStore } from './doctor/remote.js';
import { checkEmbedder } from './doctor/embedder.js';
import { handshakeCheck } from './doctor/handshake.js';
import { OPTIONAL_HOSTS } from './optional-hosts.js';

// `svc doctor`: every wire, one check each (the checks live in doctor/, one file per host or
// part), failures naming their fix.

const HELP = `
  Usage
    svc doctor [--no-handshake]

  Checks the wiring: the hook shim, the MCP registration and hooks of Claude Code (project and
  global), Claude Desktop, the store and the hooks' recent failures, the embedder (probed in a
  separate process) and, when a .cursor/ folder exists, Cursor's MCP config, hooks and rules;
  the same for each other host whose folder exists (Codex CLI: .codex/ or ~/.codex/; Gemini CLI:
  .gemini/ or ~/.gemini/), with the approvals those hosts ask for. Every configured MCP entry is
  started and handshaken as the host would.
  Each failing line names the command that fixes it; exit 1 when anything fails.

  Flags
    --no-handshake     skip the live MCP handshakes with the configured servers`;

export type { Check, Status };

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { handshake: { type: 'boolean' } });
  const out = makeOutput(cli.flags);
  const home = homedir();
  const cwd = process.cwd();
  const handshake = cli.flags.handshake !== false;
  // The store the hooks use: --path or SVC_PATH here, else the default the shim carries from `svc init`.
  const storeRoot = resolveStoreRoot(cli.flags.path ?? (process.env.SVC_PATH || readShimStore(home)));

  const checks: Check[] = [checkShim(home)];
  const scopeFix = initCommandFor(cwd, home);
  const claude = checkClaudeMcp(cwd, home, scopeFix);
  checks.push(claude.check, ...checkClaudeConsent(cwd, home, scopeFix), ...checkClaudeHooks(cwd, home, scopeFix), checkDesktop(home));
  const cursor = isDir(cursorPaths(cwd).dir) ? checkCursor(cwd, home) : undefined;
  checks.push(...(cursor?.checks ?? []));
  // The other hosts, where their folder is (here, or in the home for a global install).
  const others = OPTIONAL_HOSTS.filter((h) => isDir(h.dir('project', cwd, home)) || h.wiredGlobally(home)).map((h) => h.doctor(cwd, home));
  for (const o of others) checks.push(...o.checks);
  // The slow probes (store, embedder, handshakes) run side by side.
  const [storage, remote, ...probes] = await Promise.all([
    checkStorage(storeRoot),
    checkRemoteStore(storeRoot, cwd),
    checkEmbedder(storeRoot),
    ...(handshake && claude.entry ? [handshakeCheck('claude.handshake', claude.entry, cwd, scopeFix)] : []),
    ...(handshake && cursor?.entry ? [handshakeCheck('cursor.handshake', cursor.entry, cwd, 'svc init --cursor', 'lean')] : []),
    ...(handshake
      ? others.flatMap((o) => (o.handshake ? [handshakeCheck(o.handshake.check, o.handshake.entry, cwd, o.handshake.fix)] : []))
      : []),
  ]);
  checks.push(...storage, ...remote, ...probes);

  const failed = checks.filter((c) => c.status === 'fail').length;
  out.result(checks, () => render(checks));
  return failed > 0 ? 1 : 0;
}

function render(checks: Check[]): string {
  const width = Math.max(...checks.map((c) => c.check.length));
  const indent = `\n        ${' '.repeat(width)}`;
  const lines = checks.map(
    (c) =>
      `${c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.message}${(c.details ?? []).map((d) => `${indent}${d}`).join('')}${c.fix ? `${indent}fix: ${c.fix}` : ''}`,
  );
  const count = (s: Status) => checks.filter((c) => c.status === s).length;
  lines.push(`${count('ok')} ok, ${count('warn')} warning(s), ${count('fail')} failure(s)`);
  return lines.join('\n');
}
