import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { mcpHandshake } from '../../hooks/install/mcp-probe.js';
import { thisCliPath } from '../../hooks/install/wiring.js';
import { round } from '../../engine/text.js';
import { makeScanSliceDue, writeHookShim } from './proc.js';
import { median } from './stats.js';

// Hook latency as the host sees it: `svc hook-inject` as a whole process run through the hook
// shim `svc init` writes (spawn to exit, fed a UserPromptSubmit event on stdin) against
// `node -e 0` in the same run (back to back, and each after a pause, when its look at the files
// is due, as it is for most prompts), and the time from spawning `svc mcp` to a completed initialize +
// tools/list, also against `node -e 0` (a host such as `claude -p` does not wait for MCP
// servers). Medians; the bench runner prints them.

const HOOK_RUNS = 15;
const MCP_RUNS = 9;

export interface HookBench {
  /** Median wall time of one `svc hook-inject` process started through the hook shim, ms. */
  hook_inject_ms: number;
  /** Median wall time of `node -e 0`, ms: the floor any Node hook pays. */
  node_baseline_ms: number;
  /** hook_inject_ms / node_baseline_ms. */
  ratio: number;
  /** The same, each run after a pause (the hot path's look at the files due), in the same rounds. */
  paused_ratio: number;
  /** Median time from spawning `svc mcp` to a listed tool surface, ms; NaN when the server does not start. */
  mcp_ready_ms: number;
  /** mcp_ready_ms / `node -e 0`, each the median of runs interleaved with the other's (target <= 4). */
  mcp_ready_ratio: number;
}

export async function benchHooks(storeRoot: string): Promise<HookBench> {
  const cli = thisCliPath();
  const env = { ...process.env, SVC_PATH: storeRoot };
  const cwd = tmpdir();
  const event = JSON.stringify({
    session_id: 'bench-session',
    transcript_path: '',
    cwd,
    hook_event_name: 'UserPromptSubmit',
    prompt: 'How do we deploy the service, and which database migrations run first?',
  });

  const shim = writeHookShim();

  // One warm-up of each (file cache), then interleaved runs so drift hits both alike.
  timeOnce(process.execPath, ['-e', '0'], env, cwd);
  const first = timeOnce(shim, ['hook-inject'], env, cwd, event);
  if (first.status !== 0) throw new Error(`svc hook-inject exited ${first.status}: ${first.stderr.trim().split('\n').pop() ?? ''}`);
  const hook: number[] = [];
  const node: number[] = [];
  const paused: number[] = [];
  for (let i = 0; i < HOOK_RUNS; i++) {
    node.push(timeOnce(process.execPath, ['-e', '0'], env, cwd).ms);
    hook.push(timeOnce(shim, ['hook-inject'], env, cwd, event).ms);
    makeScanSliceDue(storeRoot);
    paused.push(timeOnce(shim, ['hook-inject'], env, cwd, event).ms);
  }

  // The SDK client is imported before timing: only the server's start-up is measured.
  await import('@modelcontextprotocol/sdk/client/index.js');
  await import('@modelcontextprotocol/sdk/client/stdio.js');
  const ready: number[] = [];
  const nodeBeside: number[] = [];
  for (let i = 0; i < MCP_RUNS; i++) {
    nodeBeside.push(timeOnce(process.execPath, ['-e', '0'], env, cwd).ms);
    const r = await mcpHandshake({ command: process.execPath, args: [cli, 'mcp'], env: stringEnv(env), cwd }, 30_000);
    if (!r.ok) {
      process.stderr.write(`bench: svc mcp did not complete a handshake: ${r.error}\n`);
      break;
    }
    ready.push(r.ms);
  }

  const hook_inject_ms = median(hook);
  const node_baseline_ms = median(node);
  return {
    hook_inject_ms: round(hook_inject_ms, 2),
    node_baseline_ms: round(node_baseline_ms, 2),
    ratio: round(hook_inject_ms / node_baseline_ms, 2),
    paused_ratio: round(median(paused) / node_baseline_ms, 2),
    mcp_ready_ms: ready.length === MCP_RUNS ? round(median(ready), 2) : NaN,
    mcp_ready_ratio: ready.length === MCP_RUNS ? round(median(ready) / median(nodeBeside), 2) : NaN,
  };
}

function timeOnce(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  input?: string,
): { ms: number; status: number | null; stderr: string } {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { env, cwd, input: input ?? '', encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.error) throw r.error;
  return { ms, status: r.status, stderr: r.stderr };
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
