import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs the compiled `svc` (built by `npm test` before vitest starts) as a real child process.

export const CLI = fileURLToPath(new URL('../../dist/tui/cli.js', import.meta.url));

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
