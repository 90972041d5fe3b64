import type { Database } from '../contracts.js';

// Who hears of a refusal by a limit (the metrics). Keyed by the database handle the limit counted
// on, which is one hub's (several hubs in one process, as in tests, each hear only their own).

export type RefusalListener = (policy: string) => void;

const listeners = new WeakMap<Database, Set<RefusalListener>>();

/** Calls `listener` with the policy of each refusal counted on `db`; returns the unsubscribe. */
export function onRefusal(db: Database, listener: RefusalListener): () => void {
  let set = listeners.get(db);
  if (!set) listeners.set(db, (set = new Set()));
  set.add(listener);
  return () => void set.delete(listener);
}

/** A limit refused a request under these policies. */
export function noteRefusal(db: Database, policies: readonly string[]): void {
  const set = listeners.get(db);
  if (!set) return;
  for (const policy of policies) for (const listener of set) listener(policy);
}
