// The agent hosts svc wires, in one list: each host's id (on hook command lines as `--host <id>`,
// in session records and injection receipts) and its name for people. Kept free of imports so the
// dispatcher and every hook pay nothing to read it. Which events each host fires, and where its
// files live, is in install/wiring.ts.

export const HOSTS = {
  'claude-code': 'Claude Code',
  cursor: 'Cursor',
  codex: 'Codex CLI',
  gemini: 'Gemini CLI',
  copilot: 'GitHub Copilot CLI',
  opencode: 'opencode',
  vscode: 'VS Code',
} as const;

export type HostId = keyof typeof HOSTS;

export function isHostId(value: unknown): value is HostId {
  return typeof value === 'string' && Object.hasOwn(HOSTS, value);
}
