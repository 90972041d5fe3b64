import { z } from 'zod/v4';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { invalid } from '../errors.js';
import { callTool, type ToolResult } from './dispatch.js';
import { ALL_TOOLS, isToolProfile, TOOL_PROFILES, toolsForProfile, type ToolProfile } from './tools.js';
import type { AnyToolDef, ToolContext } from './types.js';

// An MCP server over the svc tools for one profile, with no transport: `svc mcp` connects it to
// stdio; the hub can connect one per session to SSE or streamable HTTP. The SDK's low-level
// Server is used (not McpServer) so that argument validation, unknown tools and engine errors
// all come back as the same one-line tool errors.

export const SERVER_NAME = 'svc';

export const INSTRUCTIONS = `svc is the user's long-term memory of corrections, conventions and decisions.
- At the start of a task call svc_session_start with the task (or svc_inject) and follow the DIRECTIVES and CONSTRAINTS it returns.
- When the user corrects you or states a convention, record it at once with svc_learn (one short statement; supersedes for corrections of an earlier engram).
- After the task, send svc_feedback on the injected engrams (positive if one helped, negative if one misled) and end with svc_session_end.`;

export interface SvcServerOptions {
  /** The context of every call; a function gets the client's name once it is known. */
  context: ToolContext | ((client: { name?: string; version?: string }) => ToolContext);
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
  tools: AnyToolDef[];
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

/** The tools/list entry of a tool. */
export function describeTool(tool: AnyToolDef): Tool {
  const { $schema: _drop, ...schema } = z.toJSONSchema(tool.input, { io: 'input', target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: schema as Tool['inputSchema'],
    annotations: {
      title: tool.title,
      readOnlyHint: tool.readOnly,
      destructiveHint: tool.destructive,
      idempotentHint: tool.readOnly,
      openWorldHint: false,
    },
  };
}

// The SDK gives each Server an Ajv of its own (to check elicitation answers, which svc never asks
// for). Building one takes about 2 ms, and the hub builds a Server per request: one is shared.
let validator: AjvJsonSchemaValidator | undefined;

export function createSvcServer(opts: SvcServerOptions): SvcServer {
  const tools = toolsForProfile(opts.profile);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const server = new Server(
    { name: SERVER_NAME, version: opts.version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: (validator ??= new AjvJsonSchemaValidator()) },
  );
  let listed: Tool[] | undefined;
  let context: ToolContext | undefined;
  const contextFor = (): ToolContext => {
    if (typeof opts.context !== 'function') return opts.context;
    return (context ??= opts.context(server.getClientVersion() ?? {}));
  };

  // In the lean profile, point at svc_admin (or the full profile) for tools of the full surface.
  const unknownHint = (name: string): string | undefined => {
    const tool = opts.profile === 'lean' ? ALL_TOOLS.find((t) => t.name === name) : undefined;
    if (!tool) return undefined;
    if (tool.destructive) return `${name} is not in the lean tool profile and svc_admin refuses destructive tools: run the server with SVC_TOOL_PROFILE=full to use it`;
    return `${name} is not in the lean tool profile: call svc_admin with {"action": "${name.replace(/^svc_/, '')}", "args": {...}}`;
  };

  let running = 0;
  const waiters: Array<() => void> = [];
  const done = (): void => {
    running -= 1;
    if (running === 0) for (const w of waiters.splice(0)) w();
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (listed ??= tools.map(describeTool)) }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<ToolResult> => {
    running += 1;
    try {
      const { name, arguments: args } = request.params;
      const run = (ctx: ToolContext, a: unknown) => callTool(byName, ctx, name, a, { unknownHint });
      if (!opts.around) return await run(contextFor(), args);
      return await opts.around({ name, args, tool: byName.get(name), client: server.getClientVersion() ?? {} }, run);
    } finally {
      opts.afterCall?.();
      done();
    }
  });

  return {
    server,
    tools,
    idle: () => (running === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
  };
}
