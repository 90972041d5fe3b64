import { z } from './sdk-deps.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { toolsForProfile } from './tools.js';
import type { ToolProfile } from './profiles.js';
import type { AnyToolDef } from './types.js';

// The tools/list entries, from the one definition of each tool (its zod schema). The build
// writes them to tool-list.gen.json (generate-tool-list.ts) so that `svc mcp` answers tools/list
// without loading the tools; this is also the fallback when that file is absent.

/** The tools/list entry of a tool. */
export function describeTool(tool: AnyToolDef): Tool {
  const { $schema: _drop, ...schema } = z.toJSONSchema(tool.input, { io: 'input', target: 'draft-7', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
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

/** The tools/list answer of a profile. */
export const describeProfile = (profile: ToolProfile): Tool[] => toolsForProfile(profile).map(describeTool);
