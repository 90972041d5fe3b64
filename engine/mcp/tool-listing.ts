import { readFileSync, statSync } from 'node:fs';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { codeFile } from '../package-info.js';
import type { ToolProfile } from './profiles.js';

// The tools/list answer of a profile. `npm run build` writes every profile's answer beside this
// module (tool-list.gen.json, from the zod schemas: generate-tool-list.ts); reading it costs a
// millisecond where loading the tools and converting their schemas costs hundreds under load.
// Run from the sources (tests), the file is absent and the answer is computed; so it is when the
// file is older than the compiled tools (a `tsc` run without the rest of the build).

export const TOOL_LIST_FILE = codeFile('engine/mcp/tool-list.gen.json');

export type ToolLists = Record<ToolProfile, Tool[]>;

let lists: ToolLists | null | undefined;
const computed = new Map<ToolProfile, Promise<Tool[]>>();

function generated(): ToolLists | null {
  if (lists !== undefined) return lists;
  try {
    const stale = statSync(codeFile('engine/mcp/tools.js')).mtimeMs > statSync(TOOL_LIST_FILE).mtimeMs;
    lists = stale ? null : (JSON.parse(readFileSync(TOOL_LIST_FILE, 'utf8')) as ToolLists);
  } catch {
    lists = null;
  }
  return lists;
}

export function toolListing(profile: ToolProfile): Promise<Tool[]> {
  const ready = generated()?.[profile];
  if (ready) return Promise.resolve(ready);
  let answer = computed.get(profile);
  if (!answer) computed.set(profile, (answer = import('./describe-tool.js').then((m) => m.describeProfile(profile))));
  return answer;
}
