import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { svc, type SvcRun } from '../../../engine/test/support/run-svc.js';

// Where the hooks tests run svc as a person would: a temporary root holding a HOME and a git
// project, with svc's environment pinned to them, so nothing of the machine's own HOME, store,
// config folder or embedder reaches what a test reads back.

export interface SandboxOptions {
  /** Names the temporary root (svc-<label>-XXXXXX). */
  label: string;
  /** `git init` the project (the default); false leaves a plain folder. */
  git?: boolean;
  /** Variables over the sandbox's own, for every svc run. */
  env?: NodeJS.ProcessEnv;
}

export interface SvcCall {
  /** The project unless told otherwise. */
  cwd?: string;
  /** Variables over the sandbox's environment, for this run. */
  env?: NodeJS.ProcessEnv;
  input?: string;
}

/** One of svc doctor's checks, as `--json` prints it. */
export interface DoctorCheck {
  check: string;
  status: string;
  message: string;
  fix?: string;
}

export interface HostSandbox {
  root: string;
  home: string;
  project: string;
  /** The variables svc runs with (over this process's own). */
  env: NodeJS.ProcessEnv;
  run(args: string[], call?: SvcCall): Promise<SvcRun>;
  /** Runs svc with `--json` and parses what it printed (throws, with its output, when that is not JSON). */
  json<T = any>(args: string[], call?: SvcCall): Promise<{ run: SvcRun; data: T }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** svc doctor's checks (no MCP handshake) whose name starts with `prefix` (`codex.`), by name. */
  doctorChecks(prefix: string, call?: SvcCall): Promise<Record<string, DoctorCheck>>;
  /** Another git project, root/<name>. */
  gitProject(name: string): string;
}

export function hostSandbox({ label, git = true, env: extra }: SandboxOptions): HostSandbox {
  const root = mkdtempSync(join(tmpdir(), `svc-${label}-`));
  const home = join(root, 'home');
  mkdirSync(home);
  const env: NodeJS.ProcessEnv = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off', XDG_CONFIG_HOME: '', SVC_TOOL_PROFILE: '', ...extra };
  const gitProject = (name: string) => {
    const dir = join(root, name);
    mkdirSync(dir);
    execFileSync('git', ['init', '-q', dir]);
    return dir;
  };
  const project = git ? gitProject('project') : join(root, 'project');
  if (!git) mkdirSync(project);
  const run = (args: string[], call: SvcCall = {}): Promise<SvcRun> =>
    svc(args, { cwd: call.cwd ?? project, env: { ...env, ...call.env }, input: call.input });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async <T = any>(args: string[], call?: SvcCall): Promise<{ run: SvcRun; data: T }> => {
    const r = await run([...args, '--json'], call);
    try {
      return { run: r, data: JSON.parse(r.stdout) as T };
    } catch {
      throw new Error(`svc ${args.join(' ')} printed no JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
    }
  };
  return {
    root,
    home,
    project,
    env,
    run,
    json,
    doctorChecks: async (prefix, call) => {
      const { data } = await json<DoctorCheck[]>(['doctor', '--no-handshake'], call);
      return Object.fromEntries(data.filter((c) => c.check.startsWith(prefix)).map((c) => [c.check, c]));
    },
    gitProject,
  };
}

/** Writes a file, making its folder first. */
export function write(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

/** Every file under the given folders: folder:relative path -> mode and text (to compare before and after). */
export function snapshot(...dirs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (base: string, dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) walk(base, p);
      else out[`${base}:${relative(base, p)}`] = `${(statSync(p).mode & 0o777).toString(8)} ${readFileSync(p, 'utf8')}`;
    }
  };
  for (const d of dirs) walk(d, d);
  return out;
}

/** The hooks' session records in `home` (~/.svc/sessions/hooks/*.json), none when there is no such folder. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the records' fields are what the tests check
export function hookSessions(home: string): Array<Record<string, any>> {
  const dir = join(home, '.svc', 'sessions', 'hooks');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>);
}
