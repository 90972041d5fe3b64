import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';
import { readOutbox } from './outbox.js';

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
  const outbox = [queued ? `${queued} write(s) queued for the hub` : '', refused ? `${refused} refused by the hub (svc_outbox shows why)` : ''].filter(Boolean).join('; ');
  try {
    const me = await new HubClient(remote).me(TIMEOUT_MS);
    return {
      status: refused ? 'warn' : 'ok',
      detail: `${remote.url}: authenticated as ${me.user}; reads ${me.readable.length} scope(s), writes ${me.writable.join(', ') || 'none'}${outbox ? `; ${outbox}` : ''}`,
      ...(refused ? { fix: 'read the refusals with svc_outbox, then learn those statements to a scope you may write' } : {}),
    };
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    if (err.status === 401 || err.status === 403) {
      return { status: 'fail', detail: `${remote.url} refuses the token in .svc.yaml (${err.message})`, fix: `svc init-remote --url ${remote.url} --token <a valid API key>` };
    }
    return {
      status: 'warn',
      detail: `${err.message}; recall uses the local store until it answers${outbox ? `; ${outbox}` : ''}`,
      fix: `check that the hub runs and is reachable (svc init-remote --verify), then svc sync sends what is queued`,
    };
  }
}
