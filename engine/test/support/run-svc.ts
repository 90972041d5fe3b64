import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs the compiled `svc` (built by `npm test` before vitest starts) as a real child process.

export const CLI = fileURLToPath(new URL('../../../dist/bin/svc.js', import.meta.url));

/**
 * Node's arguments that run `svc <args>` from the dispatcher's ES modules (dist/bin/dispatch.mjs)
 * instead of the bundle the CLI runs (scripts/bundle-cli.ts): the bundle initialises a module
 * exactly when its ES module would load, but a module-load trace sees only the ES modules.
 */
export function moduleByModule(args: string[]): string[] {
  const dispatch = new URL('../../../dist/bin/dispatch.mjs', import.meta.url).href;
  return [
    '--input-type=module',
    '-e',
    `const { start } = await import(${JSON.stringify(dispatch)}); await start(${JSON.stringify(args)});`,
  ];
}

export interface SvcRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  store?: string;
  input?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export function svc(args: string[], opts: RunOptions = {}): Promise<SvcRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...(opts.store ? { SVC_PATH: opts.store } : {}), ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs svc and parses its JSON stdout (JSON is the default when stdout is a pipe). */
export async function svcJson<T = any>(args: string[], opts: RunOptions = {}): Promise<{ run: SvcRun; data: T }> {
  const run = await svc(args, opts);
  let data: T;
  try {
    data = JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`svc ${args.join(' ')} printed no JSON (exit ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
  return { run, data };
}

export function tempStore(label = 'store'): string {
  return join(mkdtempSync(join(tmpdir(), `svc-${label}-`)), 'store');
}

/** A fresh folder with a `.git` marker, so no `.svc.yaml` above it can route scopes. */
export function projectDir(svcYaml?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-project-'));
  mkdirSync(join(dir, '.git'));
  if (svcYaml !== undefined) writeFileSync(join(dir, '.svc.yaml'), svcYaml);
  return dir;
}

let neutral: string | undefined;
/** One neutral project folder per worker process (no file writes into it): commands run there unless told otherwise. */
export const neutralCwd = (): string => (neutral ??= projectDir());

/** Runs svc against `store` from the neutral folder (unless opts.cwd says otherwise). */
export function runIn(store: string, args: string[], opts: RunOptions = {}): Promise<SvcRun> {
  return svc(args, { store, cwd: neutralCwd(), ...opts });
}

/** Runs svc against `store`, expects exit 0 and returns the parsed JSON output. */
export async function okIn<T = any>(store: string, args: string[], opts: RunOptions = {}): Promise<T> {
  // eslint-disable-line @typescript-eslint/no-explicit-any
  const { run, data } = await svcJson<T>(args, { store, cwd: neutralCwd(), ...opts });
  if (run.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${run.code}\n${run.stderr}`);
  return data;
}
