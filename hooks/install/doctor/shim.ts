import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { resolveStoreRoot } from '../../../engine/svc-home.js';
import { parseShim, shimPath, shimScript, shimStorePath, thisCliPath } from '../wiring.js';
import type { Check } from './check.js';

// The hook shim (~/.svc/bin/svc-hook): every hook and MCP entry of every host calls it.

/** The store the shim gives hooks by default (set at `svc init`), if any. */
export function readShimStore(home: string): string | undefined {
  try {
    return shimStorePath(readFileSync(shimPath(home), 'utf8'));
  } catch {
    return undefined;
  }
}

export function checkShim(home: string): Check {
  const path = shimPath(home);
  const fail = (message: string): Check => ({ check: 'shim', status: 'fail', message, fix: 'svc init' });
  if (!existsSync(path)) return fail(`hook shim ${path} is missing: every hook and MCP entry calls it`);
  let text: string;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return fail(`hook shim ${path} is not executable`);
  }
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return fail(`hook shim ${path} cannot be read: ${(err as Error).message}`);
  }
  const target = parseShim(text);
  if (!target) return fail(`${path} is not an svc hook shim (no exec line)`);
  if (!existsSync(target.node)) return fail(`hook shim runs ${target.node}, which no longer exists (Node moved or was upgraded)`);
  if (!existsSync(target.cli)) return fail(`hook shim points at ${target.cli}, which no longer exists (svc moved or was removed)`);
  if (target.cli !== thisCliPath()) {
    return {
      check: 'shim',
      status: 'warn',
      message: `hook shim points at another install (${target.cli}); this svc is ${thisCliPath()}`,
      fix: 'svc init (from the install the hosts should use)',
    };
  }
  const store = shimStorePath(text);
  const shellStore = process.env.SVC_PATH ? resolveStoreRoot(process.env.SVC_PATH) : undefined;
  if (store && shellStore && store !== shellStore) {
    return {
      check: 'shim',
      status: 'warn',
      message: `hooks default to the store ${store} (set at svc init) but this shell's SVC_PATH is ${shellStore}`,
      fix: 'svc init (with the SVC_PATH the hosts should use)',
    };
  }
  // Same targets, other text: an older svc init wrote it (before hooks left NODE_EXTRA_CA_CERTS to svc, say).
  if (text !== shimScript(target.node, target.cli, store)) {
    return {
      check: 'shim',
      status: 'warn',
      message: `hook shim ${path} was written by another version of svc init`,
      fix: 'svc init (rewrites it for this version)',
    };
  }
  return { check: 'shim', status: 'ok', message: `${path} -> ${target.node} ${target.cli}${store ? ` (store ${store})` : ''}` };
}
