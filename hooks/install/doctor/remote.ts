import { loadProjectConfig } from '../../../engine/config/project-config.js';
import { remoteOf } from '../../../engine/remote/hub-client.js';
import { errorLine } from '../../../engine/text.js';
import type { Check } from './check.js';

// The hub the project's .svc.yaml names: authentication and the outbox (engine/remote/remote-check.ts).

export async function checkRemoteStore(storeRoot: string, cwd: string): Promise<Check[]> {
  let remote;
  try {
    remote = remoteOf(await loadProjectConfig(cwd));
  } catch (err) {
    return [
      {
        check: 'remote',
        status: 'fail',
        message: errorLine(err),
        fix: 'fix .svc.yaml, or run svc init-remote --url <hub> --token <key> again',
      },
    ];
  }
  if (!remote) return [];
  const { checkRemote } = await import('../../../engine/remote/remote-check.js');
  const r = await checkRemote(storeRoot, remote);
  return [{ check: 'remote', status: r.status, message: r.detail, ...(r.fix ? { fix: r.fix } : {}) }];
}
