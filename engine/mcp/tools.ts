import { z } from './sdk-deps.js';
import { invokeTool, ToolFailure } from './dispatch.js';
import { batchDecayTool, MEMORY_TOOLS } from './memory-tools.js';
import { HEALTH_TOOLS } from './status-tools.js';
import { RECORD_TOOLS, SESSION_TOOLS } from './session-tools.js';
import { TEAM_TOOLS } from './team-tools.js';
import { PACK_TOOLS } from './pack-tools.js';
import { INGEST_TOOLS } from './ingest-tools.js';
import { TENSION_TOOLS } from './tension-tools.js';
import { storesAddTool, storesListTool, syncStatusTool, syncTool } from './store-tools.js';
import { defineTool, type AnyToolDef } from './types.js';
import { LEAN_TOOL_NAMES, type ToolProfile } from './profiles.js';

// The MCP tool surface. Names are a contract: clients call them verbatim.
//   full profile: the 39 tools below;
//   lean profile (SVC_TOOL_PROFILE=lean, for editors that cap tool counts): 10 of them plus
//   svc_admin, which reaches every other non-destructive tool by name.

/** The full surface, in the order tools/list shows it. */
export const ALL_TOOLS: readonly AnyToolDef[] = [
  ...MEMORY_TOOLS,
  ...SESSION_TOOLS,
  ...HEALTH_TOOLS,
  ...RECORD_TOOLS,
  ...PACK_TOOLS,
  storesAddTool,
  storesListTool,
  TEAM_TOOLS.scopesDiscover,
  TEAM_TOOLS.suggestScope,
  TEAM_TOOLS.rescope,
  syncTool,
  syncStatusTool,
  TEAM_TOOLS.outbox,
  ...TENSION_TOOLS,
  ...INGEST_TOOLS,
  batchDecayTool,
];

export { TOOL_PROFILES, LEAN_TOOL_NAMES, isToolProfile, type ToolProfile } from './profiles.js';

const byName = new Map(ALL_TOOLS.map((t) => [t.name, t]));

/** The tool svc_admin's `action` names (with or without the svc_ prefix); undefined when none. */
export function adminAction(action: unknown): AnyToolDef | undefined {
  if (typeof action !== 'string') return undefined;
  const tool = byName.get(action.startsWith('svc_') ? action : `svc_${action}`);
  return tool?.dispatches ? undefined : tool;
}

/** Tools svc_admin may run: everything not destructive. */
export const ADMIN_ACTIONS: readonly string[] = ALL_TOOLS.filter((t) => !t.destructive).map((t) => t.name);

const shortName = (name: string): string => name.replace(/^svc_/, '');

export const adminTool = defineTool({
  name: 'svc_admin',
  title: 'Admin',
  description:
    'Run any other non-destructive svc tool by name: {"action": "<tool>", "args": {...}}, where action is the tool name with or without the svc_ prefix ' +
    "and args are that tool's arguments (validated by its schema). Destructive tools (svc_forget, svc_tensions_purge, svc_packs_uninstall, svc_rescope, svc_sync, svc_import) are refused. " +
    `Actions: ${ADMIN_ACTIONS.filter((n) => !(LEAN_TOOL_NAMES as readonly string[]).includes(n))
      .map(shortName)
      .join(', ')}.`,
  input: z.strictObject({
    action: z.string().trim().min(1, { error: 'must not be empty' }).describe('The tool to run, e.g. list or svc_list.'),
    args: z.record(z.string(), z.unknown()).default({}).describe("The tool's arguments, as an object (default {})."),
  }),
  destructive: false,
  readOnly: false,
  dispatches: true,
  async handler(ctx, { action, args }) {
    const name = action.startsWith('svc_') ? action : `svc_${action}`;
    const target = adminAction(action);
    if (!target) {
      throw new ToolFailure(`svc_admin: unknown action "${action}" (actions: ${ADMIN_ACTIONS.map(shortName).join(', ')})`);
    }
    if (target.destructive) {
      throw new ToolFailure(
        `svc_admin refuses destructive tools: ${target.name} changes or removes data; ` +
          (name === 'svc_forget'
            ? 'call svc_forget directly'
            : `call ${target.name} directly from the full tool profile (SVC_TOOL_PROFILE=full)`),
      );
    }
    return invokeTool(target, ctx, args, 'svc_admin');
  },
});

/** The tools of a profile, in tools/list order. */
export function toolsForProfile(profile: ToolProfile): AnyToolDef[] {
  if (profile === 'full') return [...ALL_TOOLS];
  return [...LEAN_TOOL_NAMES.map((n) => byName.get(n)!), adminTool];
}
