import { writeFileSync } from 'node:fs';
import { describeProfile } from '../engine/mcp/describe-tool.js';
import { TOOL_PROFILES } from '../engine/mcp/profiles.js';
import { TOOL_LIST_FILE, type ToolLists } from '../engine/mcp/tool-listing.js';

// Part of the build (`npm run build`): writes every profile's tools/list answer, computed from
// the tools' zod schemas, to dist/engine/mcp/tool-list.gen.json, which `svc mcp` answers from.

const lists = Object.fromEntries(TOOL_PROFILES.map((p) => [p, describeProfile(p)])) as ToolLists;
writeFileSync(TOOL_LIST_FILE, JSON.stringify(lists) + '\n');
