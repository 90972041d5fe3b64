import { spawn } from 'node:child_process';
import { codeFile } from '../../../engine/package-info.js';
import { errorLine, shellQuote } from '../../../engine/text.js';
import type { Check } from './check.js';

// The embedding model: present, and loadable (probed in a child process, embedder-probe.ts).

/** How long the probe may take (loading a real model takes a few seconds). */
const EMBED_PROBE_TIMEOUT_MS = 90_000;
const PROBE = codeFile('hooks/install/doctor/embedder-probe.js');

export async function checkEmbedder(root: string): Promise<Check> {
  const name = 'embedder';
  const m = await import('../../../engine/embed/model-layout.js');
  let model;
  try {
    model = m.selectedModel();
  } catch (err) {
    return { check: name, status: 'fail', message: errorLine(err), fix: 'unset SVC_EMBED_MODEL' };
  }
  if (process.env.SVC_EMBED?.trim().toLowerCase() === 'off') {
    return { check: name, status: 'warn', message: 'vectors disabled by SVC_EMBED=off: recall is BM25 only', fix: 'unset SVC_EMBED' };
  }
  const folder = m.modelFolder(root, model);
  if (!m.modelPresent(root, model)) {
    const failed = m.downloadFailure(root, model);
    if (failed) {
      return {
        check: name,
        status: 'warn',
        message: `model ${model} did not download at ${failed.at} (${failed.error}): recall is BM25 only; recall tries again after ${failed.retryAt}`,
        fix: `svc models pull (tries now; HF_ENDPOINT or SVC_MODEL_BASE_URL for a mirror), or svc models import <folder-or-archive> from a machine that has it`,
      };
    }
    return {
      check: name,
      status: 'warn',
      message: `model ${model} is not in ${folder} yet: recall is BM25 only until the first hybrid recall downloads it`,
      fix: `svc models pull (with network access), or svc models import <folder-or-archive> from a machine that has it`,
    };
  }
  const r = await runProbe([process.execPath, PROBE, root], EMBED_PROBE_TIMEOUT_MS);
  return embedderVerdict(r, model, folder);
}

/** Reads the probe's last stdout line; a crash, a timeout or no answer is a failure naming how. */
export function embedderVerdict(r: ProbeRun, model: string, folder: string): Check {
  const name = 'embedder';
  const refetch = `rm -rf ${shellQuote(folder)} && svc recall "test"`;
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let state: { state: string; model?: string; dimensions?: number; reason?: string } | undefined;
  try {
    state = JSON.parse(line);
  } catch {
    state = undefined;
  }
  if (!state || typeof state.state !== 'string') {
    const how = r.timedOut
      ? `did not finish within ${EMBED_PROBE_TIMEOUT_MS / 1000} s`
      : r.signal
        ? `crashed (${r.signal})`
        : `crashed (exit ${r.code})`;
    const err = r.stderr.trim().split('\n').filter(Boolean).pop();
    return {
      check: name,
      status: 'fail',
      message: `loading model ${model} from ${folder} ${how}${err ? `: ${err.slice(0, 200)}` : ''}`,
      fix: refetch,
    };
  }
  if (state.state === 'ready')
    return {
      check: name,
      status: 'ok',
      message: `hybrid search: ${model} loads and runs (${state.dimensions} dimensions, probed in a separate process)`,
    };
  return { check: name, status: 'fail', message: `vectors unavailable, recall is BM25 only: ${state.reason}`, fix: refetch };
}

export interface ProbeRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export function runProbe(argv: string[], timeoutMs: number): Promise<ProbeRun> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, stdout, stderr: stderr + String(err), timedOut });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}
