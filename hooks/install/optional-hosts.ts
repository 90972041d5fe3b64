import type { HostId } from '../hosts.js';
import type { PlannedFile } from './config-files.js';
import type { Check } from './doctor/check.js';
import type { JsonObject } from './config-files.js';
import { planCodex } from './codex-install.js';
import { checkCodex } from './doctor/codex.js';
import { svcHooksInFile } from './host-config.js';
import { hasServerEntry, planVsCode } from './vscode-install.js';
import { checkVsCode } from './doctor/vscode.js';
import { planCopilot } from './copilot-install.js';
import { checkCopilot, copilotWiredGlobally } from './doctor/copilot.js';
import { planOpencode } from './opencode-install.js';
import { checkOpencode, opencodeWiredGlobally } from './doctor/opencode.js';
import { hasGeminiSvcHooks, planGemini } from './gemini-install.js';
import { checkGemini } from './doctor/gemini.js';
import { codexPaths, copilotPaths, geminiPaths, opencodePaths, vscodePaths } from './wiring.js';

// The hosts `svc init` sets up when asked (--<flag>) or when their folder exists (--no-<flag>
// skips), and `svc doctor` checks when their project folder exists or svc is wired in the home:
// one row each. A row names the folder
// that says the host is used here, what init writes, and what doctor checks. Claude Code and
// Claude Desktop, always set up, and Cursor, whose row predates this table, are in init-command.ts.

export interface InitContext {
  home: string;
  cwd: string;
  scope: 'project' | 'global';
  /** Approve svc's own entries where the host asks (--no-approve leaves it to the host's prompt). */
  approve: boolean;
}

export interface HostPlan {
  files: PlannedFile[];
  notes: string[];
  /** Machine-local files written in the project, for its .gitignore. */
  ignore?: string[];
}

export interface DoctorResult {
  checks: Check[];
  /** The MCP entry to start for a live handshake, with the fix to name when it fails. */
  handshake?: { check: string; entry: JsonObject; fix: string };
}

export interface OptionalHost {
  id: HostId;
  /** The command-line flag: --<flag> and --no-<flag>. */
  flag: string;
  /** One line for `svc init --help`. */
  help: string;
  /** The folder whose presence turns the host on (project scope: in the project; global: in the home). */
  dir(scope: 'project' | 'global', cwd: string, home: string): string;
  plan(ctx: InitContext): HostPlan;
  /** Whether `svc init --global` wired this host in the home (doctor then checks it anywhere). */
  wiredGlobally(home: string): boolean;
  doctor(cwd: string, home: string): DoctorResult;
}

export const OPTIONAL_HOSTS: readonly OptionalHost[] = [
  {
    id: 'codex',
    flag: 'codex',
    help: 'Codex CLI: .codex/hooks.json and config.toml (~/.codex/ with --global)',
    dir: (scope, cwd, home) => codexPaths(scope, cwd, home).dir,
    plan: planCodex,
    wiredGlobally: (home) => svcHooksInFile(codexPaths('global', home, home).hooks) > 0,
    doctor: checkCodex,
  },
  {
    id: 'gemini',
    flag: 'gemini',
    help: 'Gemini CLI: hooks and MCP server in .gemini/settings.json (~/.gemini/ with --global)',
    dir: (scope, cwd, home) => geminiPaths(scope, cwd, home).dir,
    plan: planGemini,
    wiredGlobally: (home) => hasGeminiSvcHooks(geminiPaths('global', home, home).settings),
    doctor: checkGemini,
  },
  {
    id: 'copilot',
    flag: 'copilot',
    help: 'GitHub Copilot CLI: .github/hooks/svc.json and .github/mcp.json (~/.copilot/ with --global)',
    // .github/hooks/ is Copilot's own folder (a bare .github/ is in most GitHub projects, Copilot or
    // not); ~/.copilot/ appears on a machine where Copilot CLI has run.
    dir: (scope, cwd, home) => copilotPaths(scope, cwd, home).dir,
    plan: planCopilot,
    wiredGlobally: copilotWiredGlobally,
    doctor: checkCopilot,
  },
  {
    id: 'opencode',
    flag: 'opencode',
    help: "opencode: opencode.json and svc's plugin in .opencode/plugin/ (~/.config/opencode/ with --global)",
    dir: (scope, cwd, home) => opencodePaths(scope, cwd, home).dir,
    plan: planOpencode,
    wiredGlobally: opencodeWiredGlobally,
    doctor: checkOpencode,
  },
  {
    id: 'vscode',
    flag: 'vscode',
    help: 'VS Code: .vscode/mcp.json and .github/copilot-instructions.md (user profile with --global)',
    dir: (scope, cwd, home) => vscodePaths(scope, cwd, home).dir,
    plan: planVsCode,
    wiredGlobally: (home) => hasServerEntry(vscodePaths('global', home, home).mcp),
    doctor: checkVsCode,
  },
];
