import { isObject, type JsonObject } from '../config-files.js';
import { shellQuote } from '../../../engine/text.js';
import type { Check } from './check.js';
import { expandHomeVariable } from '../wiring.js';

// A live MCP handshake with a host's configured entry, as the host would start it: the server
// must answer initialize and list the tools of the profile the entry asks for.

const HANDSHAKE_TIMEOUT_MS = 20_000;

/** `profile`: the tool surface the host should get; by default, the one the entry's env selects. */
export async function handshakeCheck(
  check: string,
  entry: JsonObject,
  cwd: string,
  fix: string,
  profile?: 'full' | 'lean',
): Promise<Check> {
  const [{ mcpHandshake }, { toolsForProfile }] = await Promise.all([import('../mcp-probe.js'), import('../../../engine/mcp/tools.js')]);
  const env = isObject(entry.env) ? Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, String(v)])) : {};
  profile ??= env.SVC_TOOL_PROFILE === 'lean' ? 'lean' : 'full';
  const expected = toolsForProfile(profile).length;
  // As Claude Code does for .mcp.json: ${HOME} expanded before the command is started.
  const server = {
    command: expandHomeVariable(String(entry.command)),
    args: Array.isArray(entry.args) ? entry.args.map((a) => expandHomeVariable(String(a))) : [],
    env,
    cwd,
  };
  const r = await mcpHandshake(server, HANDSHAKE_TIMEOUT_MS);
  const shown = [server.command, ...server.args].map(shellQuote).join(' ');
  if (!r.ok) {
    const err = r.stderr.split('\n').filter(Boolean).pop();
    return {
      check,
      status: 'fail',
      message: `MCP handshake with \`${shown}\` failed: ${r.error}${err ? ` (stderr: ${err.slice(0, 200)})` : ''}`,
      fix: `${fix}; if it still fails, run ${profile === 'lean' ? 'SVC_TOOL_PROFILE=lean ' : ''}${shown} to see why it does not start`,
    };
  }
  if (r.tools.length !== expected) {
    return {
      check,
      status: 'fail',
      message: `live MCP server lists ${r.tools.length} tools, expected ${expected} for the ${profile} profile`,
      fix,
    };
  }
  return {
    check,
    status: 'ok',
    message: `live MCP handshake: ${r.tools.length} tools (${profile} profile), ready in ${Math.round(r.ms)} ms`,
  };
}
