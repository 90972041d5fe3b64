import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { shimScript } from '../../hooks/install/wiring.js';
import { median } from './stats.js';

// Running whole processes for the benchmarks: wall time and peak RSS.

/** The compiled `svc` entry point (this file is dist/scripts/bench/proc.js). */
export const CLI = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

export interface Timed {
  ms: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ProcOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Runs a command to completion and returns its wall time (spawn to exit, output piped). */
export function timeProcess(cmd: string, args: string[], opts: ProcOptions = {}): Timed {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { env: opts.env ?? process.env, cwd: opts.cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.error) throw r.error;
  return { ms, code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The hook shim `svc init` writes, for this Node and this CLI, in a new temporary folder: hooks
 * are timed as hosts start them (the shim leaves NODE_EXTRA_CA_CERTS to svc for hooks).
 */
export function writeHookShim(): string {
  const shim = join(mkdtempSync(join(tmpdir(), 'svc-bench-shim-')), 'svc-hook');
  writeFileSync(shim, shimScript(process.execPath, CLI));
  chmodSync(shim, 0o755);
  return shim;
}

/** Runs `node <args>` (this Node binary). */
export const timeNode = (args: string[], opts: ProcOptions = {}): Timed => timeProcess(process.execPath, args, opts);

const GNU_TIME = '/usr/bin/time';

/** Runs `node <args>` under GNU time: the run and its peak RSS in MB (null when /usr/bin/time is missing). */
export function timeNodeWithPeakRss(args: string[], opts: ProcOptions = {}): Timed & { peakRssMb: number | null } {
  if (!existsSync(GNU_TIME)) return { ...timeNode(args, opts), peakRssMb: null };
  const r = timeProcess(GNU_TIME, ['-f', '%M', process.execPath, ...args], opts);
  const lines = r.stderr.trimEnd().split('\n');
  const kb = Number(lines.pop());
  return { ...r, stderr: lines.join('\n'), peakRssMb: Number.isFinite(kb) && kb > 0 ? kb / 1024 : null };
}

/** Peak RSS in MB of `node <args>` via GNU time, or null when /usr/bin/time is missing. */
export function nodePeakRssMb(args: string[], opts: ProcOptions = {}): number | null {
  return timeNodeWithPeakRss(args, opts).peakRssMb;
}

/**
 * A line for the top of a benchmark's output when NODE_EXTRA_CA_CERTS is set, undefined when it is
 * not. Node 20 reads that file and builds its whole store of root certificates when any process
 * starts, TLS or not: on machines that set it to the system's bundle, `node -e 0` and every `svc`
 * process pay 0.1-0.15 s more. The benchmarks run with the environment they are given (a user's
 * hooks pay it too); this line says what a process pays without it, measured in the same run.
 */
export function extraCaCertsNote(runs = 7): string | undefined {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (file === undefined) return undefined;
  const without = { ...process.env };
  delete without.NODE_EXTRA_CA_CERTS;
  const withIt: number[] = [];
  const withoutIt: number[] = [];
  for (let i = 0; i < runs; i++) {
    withIt.push(timeNode(['-e', '0']).ms);
    withoutIt.push(timeNode(['-e', '0'], { env: without }).ms);
  }
  const ms = (v: number[]) => median(v).toFixed(1);
  return `NODE_EXTRA_CA_CERTS=${file} is set: node -e 0 takes ${ms(withIt)} ms with it, ${ms(withoutIt)} ms without (median of ${runs} each); every figure below is measured with it`;
}

/**
 * Makes the next hot-path command's look at the files due (engine/store/store-reconcile.ts), as
 * after a pause longer than its interval: how most prompts find a store, seconds or minutes apart.
 */
export function makeScanSliceDue(storeRoot: string): void {
  const index = new Database(join(storeRoot, 'index.db'));
  try {
    index.prepare("UPDATE meta SET value = '0' WHERE key = 'scan_slice_at'").run();
  } finally {
    index.close();
  }
}
