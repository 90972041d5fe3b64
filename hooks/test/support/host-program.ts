import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// A real agent host's CLI, installed as a devDependency: the tests that drive it skip (and say
// why) where it does not run, and each run of it is bounded, so a host that hangs fails its test
// instead of holding the whole suite.

export interface HostRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface HostRunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Killed (SIGKILL) after this long: a bound on a hang, not a wait. */
  killAfterMs: number;
}

export interface HostProgram {
  /** The name under node_modules/.bin/. */
  name: string;
  path: string;
  /** The first line `--version` prints, or undefined when the program does not run here. */
  version: string | undefined;
  /** A describe title: `subject (version)`, or why its tests are skipped. */
  title(subject: string): string;
  run(args: string[], opts: HostRunOptions): Promise<HostRun>;
}

/** The CLI at node_modules/.bin/<name>, probed once with `--version` (for describe.skipIf). */
export function hostProgram(name: string, probeTimeoutMs = 60_000): HostProgram {
  const path = fileURLToPath(new URL(`../../../node_modules/.bin/${name}`, import.meta.url));
  const probe = existsSync(path) ? spawnSync(path, ['--version'], { encoding: 'utf8', timeout: probeTimeoutMs }) : undefined;
  const version = probe?.status === 0 ? probe.stdout.trim().split('\n')[0] : undefined;
  return {
    name,
    path,
    version,
    title: (subject) =>
      version ? `${subject} (${version})` : `${subject}: skipped, the ${name} CLI (node_modules/.bin/${name}) does not run on this machine`,
    run: (args, opts) => runProgram(path, args, opts),
  };
}

/** Runs `path` with no stdin and resolves with its exit code and output once it closes. */
export function runProgram(path: string, args: string[], { cwd, env, killAfterMs }: HostRunOptions): Promise<HostRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * This process's environment without the variables `prefix` matches: a host's own session (or
 * svc's settings) that the tests may run in must not reach the host under test.
 */
export function envWithout(prefix: RegExp): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !prefix.test(k)));
}
