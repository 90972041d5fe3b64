import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { errorLine } from '../../../engine/text.js';
import { FAILURE_LOG, recentHookFailures } from '../../handlers/failure-log.js';
import type { Check } from './check.js';

// The store the hooks use: it opens, what it holds, what is quarantined, and what the hooks
// logged when they failed (hooks never show an error to the host).

const RECENT_FAILURES = 5;
/** Failures older than this are history, not a warning. */
const FAILURE_WINDOW_MS = 7 * 24 * 3600 * 1000;

export async function checkStorage(root: string): Promise<Check[]> {
  const name = 'storage';
  if (existsSync(root) && !statSync(root).isDirectory()) {
    return [
      {
        check: name,
        status: 'fail',
        message: `the store path ${root} is a file, not a folder: svc cannot keep a store there`,
        fix: 'point SVC_PATH (or --path) at a folder, e.g. export SVC_PATH=~/.svc',
      },
    ];
  }
  if (!existsSync(join(root, 'local.yaml')) && !existsSync(join(root, 'index.db'))) {
    return [
      {
        check: name,
        status: 'warn',
        message: `no store at ${root} yet: the first svc learn creates it`,
        fix: 'svc learn "<something worth remembering>"',
      },
    ];
  }
  const { LocalStore } = await import('../../../engine/store/local-store.js');
  let store;
  try {
    store = await LocalStore.open(root, 'full');
  } catch (err) {
    return [{ check: name, status: 'fail', message: `the store at ${root} does not open: ${errorLine(err)}`, fix: 'svc sync --full' }];
  }
  try {
    const stats = await store.stats();
    const { selectedModel } = await import('../../../engine/embed/model-layout.js');
    const vectors = (() => {
      try {
        return store.vectorStats(selectedModel()).vectors;
      } catch {
        return undefined;
      }
    })();
    const checks: Check[] = [
      {
        check: name,
        status: 'ok',
        message: `${root}: ${stats.engrams} engrams, ${stats.episodes} episodes, ${stats.packs} packs${vectors === undefined ? '' : `, ${vectors} vectors`}`,
      },
    ];
    const quarantined = store.quarantined();
    for (const w of store.warnings.splice(0)) if (!/^quarantined /.test(w)) checks.push({ check: name, status: 'warn', message: w });
    if (quarantined.length > 0) {
      checks.push({
        check: 'storage.quarantine',
        status: 'warn',
        message: `${quarantined.length} quarantined file(s) kept aside, e.g. ${quarantined[0]!.file}: ${quarantined[0]!.reason}`,
        fix: `repair each file and move it back into ${join(root, 'engrams')} (dropping the timestamp suffix), or delete it`,
      });
    }
    checks.push(checkHookFailures(root));
    return checks;
  } finally {
    store.close();
  }
}

/** The hooks' recent failures, newest first, from the store's log. */
export function checkHookFailures(root: string, now = Date.now()): Check {
  const recent = recentHookFailures(root, RECENT_FAILURES).filter((f) => now - Date.parse(f.at) < FAILURE_WINDOW_MS);
  const log = join(root, FAILURE_LOG);
  if (recent.length === 0) return { check: 'hooks.failures', status: 'ok', message: 'no hook failed in the last 7 days' };
  return {
    check: 'hooks.failures',
    status: 'warn',
    message: `${recent.length}${recent.length === RECENT_FAILURES ? ' or more' : ''} hook failure(s) in the last 7 days, not shown to the host; newest first:`,
    details: recent.map((f) => `${f.at} ${f.hook}: ${f.error}`),
    fix: `the full log is ${log}; SVC_DEBUG=1 makes a hook print its errors`,
  };
}
