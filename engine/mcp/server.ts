import { AjvJsonSchemaValidator, CallToolRequestSchema, ListToolsRequestSchema, Server } from './sdk-deps.js';
import { invalid } from '../errors.js';
import type { ToolResult } from './dispatch.js';
import { isToolProfile, TOOL_PROFILES, type ToolProfile } from './profiles.js';
import { toolListing } from './tool-listing.js';
import type { AnyToolDef, ToolContext } from './types.js';

// An MCP server over the svc tools for one profile, with no transport: `svc mcp` connects it to
// stdio; the hub can connect one per session to SSE or streamable HTTP. The SDK's low-level
// Server is used (not McpServer) so that argument validation, unknown tools and engine errors
// all come back as the same one-line tool errors.
//
// initialize and tools/list need only the SDK and the tool list the build wrote (tool-listing.ts):
// an agent host that does not wait for its MCP servers (claude -p) sees svc's tools only if they
// are listed before its first model request. The tools, their zod schemas and the engine's
// operations load on the first tools/call (or right after tools/list, while the host talks to its
// model).

export const SERVER_NAME = 'svc';

export const INSTRUCTIONS = `svc is the user's long-term memory of corrections, conventions and decisions.
- At the start of a task call svc_session_start with the task (or svc_inject) and follow the DIRECTIVES and CONSTRAINTS it returns.
- When the user corrects you or states a convention, record it at once with svc_learn (one short statement; supersedes for corrections of an earlier engram).
- After the task, send svc_feedback on the injected engrams (positive if one helped, negative if one misled) and end with svc_session_end.`;

export interface SvcServerOptions {
  /** The context of every call; a function gets the client's name once it is known, on the first call. */
  context: ToolContext | ((client: { name?: string; version?: string }) => ToolContext | Promise<ToolContext>);
  profile: ToolProfile;
  version: string;
  /** Runs after every tool call (e.g. to report store warnings such as quarantined files). */
  afterCall?: () => void;
  /**
   * Wraps every tool call: the hub's pipeline (allowed tools, argument and answer sanitizing,
   * write checks, a transaction and an audit row per call) runs the call with a context of its
   * own. Without it, calls run on `context`.
   */
  around?: (call: ToolCall, run: (ctx: ToolContext, args: unknown) => Promise<ToolResult>) => Promise<ToolResult>;
}

/** A tool call as the server received it, before anything ran. */
export interface ToolCall {
  name: string;
  args: unknown;
  /** The tool, when this server lists it. */
  tool?: AnyToolDef;
  /** The calling client, as it introduced itself. */
  client: { name?: string; version?: string };
}

export interface SvcServer {
  server: Server;
  /** Resolves once no tool call is running (for a clean shutdown). */
  idle(): Promise<void>;
}

/** `SVC_TOOL_PROFILE` (or a flag): full (default) or lean. */
export function resolveProfile(value: string | undefined): ToolProfile {
  const v = value?.trim().toLowerCase();
  if (!v) return 'full';
  if (!isToolProfile(v)) throw invalid(`SVC_TOOL_PROFILE must be one of ${TOOL_PROFILES.join(', ')} (got "${value}")`);
  return v;
}

// The SDK gives each Server an Ajv of its own (to check elicitation answers, which svc never asks
// for). Building one takes about 2 ms, and the hub builds a Server per request: one is shared.
let validator: AjvJsonSchemaValidator | undefined;

export function createSvcServer(opts: SvcServerOptions): SvcServer {
  const server = new Server(
    { name: SERVER_NAME, version: opts.version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: (validator ??= new AjvJsonSchemaValidator()) },
  );
  let context: Promise<ToolContext> | undefined;
  const contextFor = (): Promise<ToolContext> => {
    if (typeof opts.context !== 'function') return Promise.resolve(opts.context);
    const make = opts.context;
    if (!context) {
      context = Promise.resolve().then(() => make(server.getClientVersion() ?? {}));
      context.catch(() => (context = undefined)); // a failed start (say, a store that cannot open) is tried again on the next call
    }
    return context;
  };
  const toolset = (): Promise<Toolset> => loadToolset(opts.profile);

  let running = 0;
  const waiters: Array<() => void> = [];
  const done = (): void => {
    running -= 1;
    if (running === 0) for (const w of waiters.splice(0)) w();
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await toolListing(opts.profile);
    // Load the tools and the context once this answer is on its way (a pipe write is synchronous):
    // the host talks to its model before it calls a tool.
    setImmediate(
      () =>
        void toolset()
          .then(contextFor)
          .catch(() => undefined),
    );
    return { tools };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<ToolResult> => {
    running += 1;
    try {
      const { name, arguments: args } = request.params;
      return await runToolCall(opts.profile, { name, args, client: server.getClientVersion() ?? {} }, contextFor, opts.around);
    } finally {
      opts.afterCall?.();
      done();
    }
  });

  return {
    server,
    idle: () => (running === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
  };
}

/**
 * One tools/call as every transport runs it: the tool looked up in the profile, its arguments
 * checked, engine errors turned into tool errors, and the call wrapped by `around` when given.
 * The SDK's Server calls it; so does the hub's direct path for a lone tools/call (hub/mcp).
 */
export async function runToolCall(
  profile: ToolProfile,
  call: Omit<ToolCall, 'tool'>,
  contextFor: () => ToolContext | Promise<ToolContext>,
  around?: SvcServerOptions['around'],
): Promise<ToolResult> {
  const { byName, callTool, unknownHint, toErrorResult } = await loadToolset(profile);
  const run = (ctx: ToolContext, a: unknown) => callTool(byName, ctx, call.name, a, { unknownHint });
  if (around) return around({ ...call, tool: byName.get(call.name) }, run);
  let ctx: ToolContext;
  try {
    ctx = await contextFor();
  } catch (error) {
    return toErrorResult(error);
  }
  return run(ctx, call.args);
}

interface Toolset {
  byName: ReadonlyMap<string, AnyToolDef>;
  callTool: typeof import('./dispatch.js').callTool;
  toErrorResult: typeof import('./dispatch.js').toErrorResult;
  /** In the lean profile, points at svc_admin (or the full profile) for tools of the full surface. */
  unknownHint(name: string): string | undefined;
}

const toolsets = new Map<ToolProfile, Promise<Toolset>>();

function loadToolset(profile: ToolProfile): Promise<Toolset> {
  let loaded = toolsets.get(profile);
  if (loaded) return loaded;
  loaded = Promise.all([import('./tools.js'), import('./dispatch.js')]).then(
    ([{ ALL_TOOLS, toolsForProfile }, { callTool, toErrorResult }]) => ({
      byName: new Map(toolsForProfile(profile).map((t) => [t.name, t])),
      callTool,
      toErrorResult,
      unknownHint: (name: string): string | undefined => {
        const tool = profile === 'lean' ? ALL_TOOLS.find((t) => t.name === name) : undefined;
        if (!tool) return undefined;
        if (tool.destructive)
          return `${name} is not in the lean tool profile and svc_admin refuses destructive tools: run the server with SVC_TOOL_PROFILE=full to use it`;
        return `${name} is not in the lean tool profile: call svc_admin with {"action": "${name.replace(/^svc_/, '')}", "args": {...}}`;
      },
    }),
  );
  toolsets.set(profile, loaded);
  return loaded;
}
