import { LocalStore, type ReconcileMode } from './local-store.js';
import { hasRegisteredStores } from './store-registry.js';
import type { MultiStore, StoreSpan } from './multi-store.js';

/**
 * Opens the store at `root` and, when its local.yaml registers additional stores (`svc stores
 * add`), a MultiStore spanning them (reads merged, writes routed by scope). `span` narrows it:
 * 'writable' leaves read-only stores out (for commands that rewrite every engram, like
 * batch-decay), 'primary' opens the primary store only. The multi-store module loads only when
 * stores are registered, so the common single-store path stays lean.
 *
 * The result is typed LocalStore so every caller keeps compiling; a MultiStore offers the same
 * public surface (multi-store.ts checks that at compile time).
 */
export async function openStoreSpan(root: string, reconcile: ReconcileMode, span: StoreSpan = 'all'): Promise<LocalStore> {
  if (span === 'primary' || !hasRegisteredStores(root)) return LocalStore.open(root, reconcile);
  const { MultiStore } = await import('./multi-store.js');
  const multi: MultiStore = await MultiStore.open(root, reconcile, span);
  return multi as unknown as LocalStore;
}
