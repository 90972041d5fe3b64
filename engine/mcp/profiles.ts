// The tool profiles and the lean profile's names, apart from the tools themselves: `svc mcp`
// resolves its profile and answers tools/list before any tool module loads.

export const TOOL_PROFILES = ['full', 'lean'] as const;
export type ToolProfile = (typeof TOOL_PROFILES)[number];

export const LEAN_TOOL_NAMES = [
  'svc_session_start',
  'svc_session_end',
  'svc_learn',
  'svc_recall',
  'svc_inject',
  'svc_feedback',
  'svc_forget',
  'svc_status',
  'svc_doctor',
  'svc_timeline',
] as const;

export function isToolProfile(value: string): value is ToolProfile {
  return (TOOL_PROFILES as readonly string[]).includes(value);
}
