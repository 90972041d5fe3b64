import { basename } from 'node:path';
import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';
import { readOutbox } from './team-outbox.js';

// The hub a project names, checked as `svc doctor` and svc_doctor report it: does the token
// authenticate, which scopes it reads and writes, and what waits in the outbox. Each problem
// names its fix.

export interface RemoteCheck {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix?: string;
}

const TIMEOUT_MS = 3_000;

export async function checkRemote(storeRoot: string | undefined, remote: RemoteConfig): Promise<RemoteCheck> {
  const waiting = storeRoot ? readOutbox(storeRoot).entries : [];
  const queued = waiting.filter((e) => !e.refused).length;
  const refused = waiting.filter((e) => e.refused).length;
  const outbox = [
    queued ? `${queued} write(s) queued for the hub` : '',
    refused ? `${refused} refused by the hub (svc_outbox shows why)` : '',
  ]
    .filter(Boolean)
    .join('; ');
  // The older layout: the token in the committable .svc.yaml.
  const tokenShared = remote.tokenPath !== undefined && basename(remote.tokenPath) === '.svc.yaml';
  try {
    const me = await new HubClient(remote).me(TIMEOUT_MS);
    const fixes = [
      refused ? 'read the refusals with svc_outbox, then learn those statements to a scope you may write' : '',
      tokenShared
        ? `run svc init-remote in the project: it moves the token from ${remote.tokenPath} to .svc.local.yaml (0600, gitignored), so .svc.yaml can be committed`
        : '',
    ].filter(Boolean);
    return {
      status: refused || tokenShared ? 'warn' : 'ok',
      detail: `${remote.url}: authenticated as ${me.user}; reads ${me.readable.length} scope(s), writes ${me.writable.join(', ') || 'none'}${outbox ? `; ${outbox}` : ''}${tokenShared ? `; the token is in ${remote.tokenPath}, a file meant to be committed` : ''}`,
      ...(fixes.length ? { fix: fixes.join('; ') } : {}),
    };
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    if (err.status === 401 || err.status === 403) {
      return {
        status: 'fail',
        detail: `${remote.url} refuses the token in .svc.yaml (${err.message})`,
        fix: `svc init-remote --url ${remote.url} --token <a valid API key>`,
      };
    }
    return {
      status: 'warn',
      detail: `${err.message}; recall uses the local store until it answers${outbox ? `; ${outbox}` : ''}`,
      fix: `check that the hub runs and is reachable (svc init-remote --verify), then svc sync sends what is queued`,
    };
  }
}

export interface HubStatus {
  url: string;
  /** The hub's name for the token's person, when it answered. */
  identity: string | null;
  reachable: boolean;
  /** Why not, when it did not answer or refused the token. */
  error?: string;
  /** Team writes waiting in this store's outbox for it, and the ones it refused. */
  queued: number;
  refused: number;
}

/** The hub as `svc status` shows it: one GET /me within `deadlineMs`, and the outbox counted. */
export async function hubStatus(storeRoot: string, remote: RemoteConfig, deadlineMs = 1_500): Promise<HubStatus> {
  const waiting = readOutbox(storeRoot).entries.filter((e) => e.url === remote.url);
  const counts = { queued: waiting.filter((e) => !e.refused).length, refused: waiting.filter((e) => e.refused).length };
  try {
    const me = await new HubClient(remote).me(deadlineMs);
    return { url: remote.url, identity: me.user, reachable: true, ...counts };
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    // A refused token means the hub answered.
    return { url: remote.url, identity: null, reachable: err.kind === 'refused', error: err.message, ...counts };
  }
}
