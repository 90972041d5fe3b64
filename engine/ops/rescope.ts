import type { EngramStore, SearchIndex } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import { checkScope, isSharedScope } from '../model/scope.js';
import { secretsIn } from '../model/secret-guard.js';
import { invalid } from '../errors.js';
import type { OpContext } from './context.js';
import { editEngram } from './edit.js';
import { forget } from './forget.js';

// Moving engrams to another scope. Within the store it is an edit of the scope (kept in each
// engram's history, with the reason). To a scope that lives on the hub it is publishing: the
// statement is learned there through the outbox, and the local copy is retired once the hub has
// it; while the write only waits in the outbox, the local copy stays, so nothing is lost. An
// engram holding a secret never moves to a shared scope.

export interface RescopeItem {
  id: string;
  from: string | null;
  to: string;
  outcome: 'moved' | 'published' | 'queued' | 'unchanged' | 'refused' | 'not_found';
  /** The engram's id on the hub (published). */
  hub_id?: string;
  detail?: string;
}

/** How an engram reaches the hub (engine/remote/team-writes.ts); absent: every scope is local. */
export interface Publisher {
  goesToHub(scope: string): Promise<boolean>;
  publish(engram: EngramDoc, scope: string): Promise<{ outcome: 'delivered' | 'queued' | 'refused'; id?: string; error?: string }>;
}

export async function rescope(
  backend: EngramStore & SearchIndex,
  ids: string[],
  scope: string,
  ctx: OpContext,
  opts: { reason?: string; hub?: Publisher } = {},
): Promise<RescopeItem[]> {
  const bad = checkScope(scope);
  if (bad) throw invalid(bad);
  const toHub = opts.hub ? await opts.hub.goesToHub(scope) : false;
  const out: RescopeItem[] = [];
  for (const id of ids) {
    const e = await backend.get(id);
    if (!e || e.status === 'retired') {
      out.push({ id, from: e?.scope ?? null, to: scope, outcome: 'not_found', detail: e ? `${id} is retired` : `no engram ${id}` });
      continue;
    }
    if (e.scope === scope) {
      out.push({ id, from: e.scope, to: scope, outcome: 'unchanged' });
      continue;
    }
    if (isSharedScope(scope) && secretsIn(e).length > 0) {
      out.push({
        id,
        from: e.scope,
        to: scope,
        outcome: 'refused',
        detail: `${id} holds what looks like a secret: it stays in ${e.scope}`,
      });
      continue;
    }
    if (!toHub) {
      await editEngram(backend, id, { scope }, ctx);
      out.push({ id, from: e.scope, to: scope, outcome: 'moved', ...(opts.reason ? { detail: opts.reason } : {}) });
      continue;
    }
    const sent = await opts.hub!.publish(e, scope);
    if (sent.outcome === 'delivered') {
      await forget(
        backend,
        { target: id, reason: `published to ${scope} on the hub as ${sent.id}${opts.reason ? `: ${opts.reason}` : ''}` },
        ctx,
      );
      out.push({ id, from: e.scope, to: scope, outcome: 'published', ...(sent.id ? { hub_id: sent.id } : {}) });
    } else {
      out.push({ id, from: e.scope, to: scope, outcome: sent.outcome, detail: sent.error ?? '' });
    }
  }
  return out;
}
