import type { z } from 'zod/v4';
import { SvcError } from '../errors.js';
import type { AnyToolDef, ToolContext } from './types.js';
import { editDistance } from '../text.js';

// Runs one tool call: look the tool up, validate the arguments against its schema, catch up with
// other processes' writes, run it, and shape the answer. Every failure becomes a tool error
// (isError: true) with one line of text that names the argument or the rule; never a stack trace.

export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A failure the caller should read: one line, no stack. */
export class ToolFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** Parses `args` with the tool's schema, or throws a ToolFailure naming each broken rule. */
export function parseArguments(tool: AnyToolDef, args: unknown, via?: string): Record<string, unknown> {
  const result = tool.input.safeParse(args ?? {});
  if (result.success) return result.data as Record<string, unknown>;
  const problems = formatIssues(result.error.issues, args ?? {}, tool);
  throw new ToolFailure(`invalid arguments for ${tool.name}${via ? ` (via ${via})` : ''}: ${problems.join('; ')}`);
}

/** Validates, asks the context's `authorize`, then runs the handler; throws on any failure. Every tool runs through here. */
export async function invokeTool(tool: AnyToolDef, ctx: ToolContext, args: unknown, via?: string): Promise<unknown> {
  const parsed = parseArguments(tool, args, via);
  await ctx.authorize?.(tool, parsed);
  return tool.handler(ctx, parsed);
}

export interface CallOptions {
  /** Catch up with other processes' writes first (default true). */
  refresh?: boolean;
  /** What to tell a caller of a tool this server does not list (e.g. one reachable through svc_admin). */
  unknownHint?: (name: string) => string | undefined;
}

/** The whole tool call, as MCP answers it. Never throws. */
export async function callTool(
  tools: ReadonlyMap<string, AnyToolDef>,
  ctx: ToolContext,
  name: string,
  args: unknown,
  opts: CallOptions = {},
): Promise<ToolResult> {
  try {
    const tool = tools.get(name);
    if (!tool) throw new ToolFailure(opts.unknownHint?.(name) ?? unknownToolMessage(name, [...tools.keys()]));
    if (opts.refresh !== false) await ctx.backend.refresh();
    return toResult(await invokeTool(tool, ctx, args));
  } catch (error) {
    return toErrorResult(error, ctx);
  }
}

export function toResult(value: unknown): ToolResult {
  const text = JSON.stringify(value ?? null);
  const natural = typeof value === 'object' && value !== null && !Array.isArray(value);
  return { content: [{ type: 'text', text }], ...(natural ? { structuredContent: value as Record<string, unknown> } : {}) };
}

export function toErrorResult(error: unknown, ctx?: ToolContext): ToolResult {
  ctx?.failed?.(error);
  return { content: [{ type: 'text', text: toolErrorText(error, ctx) }], isError: true };
}

/** One line for any error: the engine's own message and details, else "internal error: ...". */
export function toolErrorText(error: unknown, ctx?: ToolContext): string {
  let line: string;
  if (error instanceof SvcError) {
    line = error.details.length ? `${error.message}: ${error.details.join('; ')}` : error.message;
  } else if (error instanceof ToolFailure) {
    line = error.message;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    line = `internal error: ${message.split('\n').find((l) => l.trim()) ?? 'unknown'}`;
    if (error instanceof Error && error.stack) ctx?.log?.(error.stack);
  }
  return line.replace(/\s*\n\s*/g, ' ').trim();
}

function unknownToolMessage(name: string, known: string[]): string {
  const wanted = name.startsWith('svc_') ? name : `svc_${name}`;
  const close = known
    .map((k) => ({ k, d: editDistance(wanted, k) }))
    .filter(({ d }) => d <= 2)
    .sort((a, b) => a.d - b.d)
    .map(({ k }) => k);
  const hint = close.length
    ? ` (did you mean ${close.slice(0, 3).join(', ')}?)`
    : ` (this server has ${known.length} tools; see tools/list)`;
  return `unknown tool "${name}"${hint}`;
}

// ---------------------------------------------------------------------------------- messages

type Issue = z.core.$ZodIssue;

/** One "field: rule" line per issue, in words an agent can act on. */
export function formatIssues(issues: readonly Issue[], args: unknown, tool?: AnyToolDef): string[] {
  const lines = issues.map((issue) => {
    const path = fieldPath(issue.path);
    const where = path ? `${path}: ` : '';
    const value = valueAt(args, issue.path);
    switch (issue.code) {
      case 'invalid_type': {
        if (issue.path.length === 0) return `the arguments must be an object (got ${describe(value)})`;
        if (value === undefined) return `${where}is required (${expectedWords(issue.expected)})`;
        const rule = issue.message.startsWith('Invalid input') ? `must be ${expectedWords(issue.expected)}` : issue.message;
        return `${where}${rule} (got ${describe(value)})`;
      }
      case 'invalid_value':
        return `${where}must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map((v) => JSON.stringify(v)).join(', ')} (got ${describe(value)})`;
      case 'unrecognized_keys': {
        const allowed = path === '' && tool ? Object.keys(tool.input.shape) : undefined;
        const keys = issue.keys.map((k) => `"${k}"`).join(', ');
        const noun =
          path === ''
            ? issue.keys.length > 1
              ? 'unknown arguments'
              : 'unknown argument'
            : `${path} has unknown field${issue.keys.length > 1 ? 's' : ''}`;
        return `${noun} ${keys}${allowed ? ` (allowed: ${allowed.join(', ')})` : ''}`;
      }
      case 'too_small':
        return `${where}${isDefaultMessage(issue.message) ? `must be at least ${issue.minimum}${unitOf(issue.origin)}` : issue.message}`;
      case 'too_big':
        return `${where}${isDefaultMessage(issue.message) ? `must be at most ${issue.maximum}${unitOf(issue.origin)}` : issue.message}`;
      default:
        return `${where}${issue.message}`;
    }
  });
  return [...new Set(lines)];
}

const isDefaultMessage = (m: string): boolean => /^Too (small|big)/.test(m);

function unitOf(origin: string): string {
  if (origin === 'string') return ' characters';
  if (origin === 'array' || origin === 'set') return ' items';
  return '';
}

function expectedWords(expected: string): string {
  switch (expected) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'int':
      return 'a whole number';
    case 'boolean':
      return 'true or false';
    case 'array':
      return 'an array';
    case 'object':
      return 'an object';
    default:
      return expected;
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}

function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out ? `.${String(key)}` : String(key);
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}
