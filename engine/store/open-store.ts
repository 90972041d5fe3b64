import { LocalStore } from './local-store.js';
import { type ReconcileMode } from './store-reconcile.js';
import { hasRegisteredStores } from './store-registry.js';
import type { StoreSpan } from './multi-store.js';
import type { LocalBackend } from './local-backend.js';

/**
 * Opens the store at `root` and, when its local.yaml registers additional stores (`svc stores
 * add`), a MultiStore spanning them (reads merged, writes routed by scope). `span` narrows it:
 * 'writable' leaves read-only stores out (for commands that rewrite every engram, like
 * batch-decay), 'primary' opens the primary store only. The multi-store module loads only when
 * stores are registered, so the common single-store path stays lean. Both are a LocalBackend.
 */
export async function openStoreSpan(root: string, reconcile: ReconcileMode, span: StoreSpan = 'all'): Promise<LocalBackend> {
  if (span === 'primary' || !hasRegisteredStores(root)) return LocalStore.open(root, reconcile);
  const { MultiStore } = await import('./multi-store.js');
  return MultiStore.open(root, reconcile, span);
}
