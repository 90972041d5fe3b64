import { applyEdits, modify, parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { invalid } from '../../engine/errors.js';
import { isObject, readTextOrNull, type JsonObject, type PlannedFile } from './config-files.js';
import { hasCurrentBlock, withInstructionsBlock } from './instructions-block.js';
import { MCP_SERVER_KEY, mcpEntry, vscodePaths } from './wiring.js';
import type { HostPlan, InitContext } from './optional-hosts.js';

// What `svc init` writes for VS Code: svc's server in mcp.json (the workspace's .vscode/mcp.json,
// or the user profile's with --global), edited as JSON with comments so the person's comments and
// other servers and inputs stay; and svc's instructions block, since VS Code's agent takes no
// context from a hook before each prompt (its UserPromptSubmit hook answers nothing to the model).
// VS Code's agent hooks (Preview) also load Claude Code's .claude/settings.json, which svc init
// writes for Claude Code: the handlers read VS Code's field names (handlers/host-adapters.ts).

/** A JSON-with-comments file as data; `invalid` naming the file when it does not parse. */
export function readJsonc(path: string): { text: string; data: JsonObject } {
  const text = readTextOrNull(path) ?? '';
  if (text.trim() === '') return { text, data: {} };
  const errors: ParseError[] = [];
  const data: unknown = parse(text, errors, { allowTrailingComma: true });
  if (errors.length > 0) {
    const first = errors[0]!;
    throw invalid(
      `${path} is not valid JSON (${printParseErrorCode(first.error)} at offset ${first.offset}); fix it by hand and run again: nothing was changed`,
    );
  }
  if (!isObject(data)) throw invalid(`${path} must hold a JSON object; fix it by hand and run again: nothing was changed`);
  return { text, data };
}

/** mcp.json with `servers.svc` set to svc's entry, every other byte kept where it can be. */
export function withVsCodeServer(path: string): string {
  const { text, data } = readJsonc(path);
  if (data.servers !== undefined && !isObject(data.servers)) {
    throw invalid(`${path}: "servers" must be an object; fix it by hand and run again: nothing was changed`);
  }
  const base = text.trim() === '' ? '{}' : text;
  const edits = modify(base, ['servers', MCP_SERVER_KEY], mcpEntry('vscode'), {
    formattingOptions: { insertSpaces: true, tabSize: 2, eol: '\n' },
  });
  const out = applyEdits(base, edits);
  return out.endsWith('\n') ? out : `${out}\n`;
}

/** svc's server entry in an mcp.json, if any. */
export function vscodeServerEntry(path: string): JsonObject | undefined {
  const servers = readJsonc(path).data.servers;
  const entry = isObject(servers) ? servers[MCP_SERVER_KEY] : undefined;
  return isObject(entry) ? entry : undefined;
}

/** Whether an mcp.json holds svc's server (false when missing or unreadable). */
export function hasServerEntry(path: string): boolean {
  try {
    return vscodeServerEntry(path) !== undefined;
  } catch {
    return false;
  }
}

/** The user-profile instructions file svc owns whole (--global): applies to every request. */
export function globalInstructions(): string {
  return `---\napplyTo: "**"\ndescription: svc memory - fetch what this project learned before a task, record what you learn\n---\n\n${withInstructionsBlock(null)}`;
}

export function planVsCode(ctx: InitContext): HostPlan {
  const paths = vscodePaths(ctx.scope, ctx.cwd, ctx.home);
  const files: PlannedFile[] = [
    { path: paths.mcp, role: `VS Code MCP server "${MCP_SERVER_KEY}"`, content: withVsCodeServer(paths.mcp) },
    {
      path: paths.instructions,
      role: 'VS Code instructions: call svc_inject before a task, svc_learn on a correction, svc_feedback after',
      content: ctx.scope === 'project' ? withInstructionsBlock(readTextOrNull(paths.instructions)) : globalInstructions(),
    },
  ];
  return {
    files,
    notes: ['VS Code asks you to start (trust) a new MCP server once: accept "svc" when it asks, or start it from the MCP view.'],
  };
}

/** Whether the instructions file holds svc's current block. */
export function hasVsCodeInstructions(path: string): boolean {
  return hasCurrentBlock(readTextOrNull(path));
}
