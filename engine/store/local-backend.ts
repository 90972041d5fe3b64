import type { EngramBackend, RebuildableIndex } from '../backend.js';
import type { StoreEntry } from './store-registry.js';

// What a store on this machine offers beyond the engine's contract: the folder it lives in, what
// it had to say on opening, the files it quarantined, its vectors. The local store (one folder)
// and the multi-store (a primary folder plus registered ones) both provide it, so commands take
// either without knowing which.

export interface QuarantinedFile {
  file: string;
  reason: string;
}

export interface LocalBackend extends EngramBackend, RebuildableIndex {
  readonly root: string;
  readonly engramsDir: string;
  readonly quarantineDir: string;
  /** Things the caller should tell the user (quarantined files, a read-only store); the CLI prints them. */
  readonly warnings: string[];
  /** Why the (primary) store cannot be written here, or undefined when it can. */
  readonly readOnly: string | undefined;
  close(): void;
  idPrefix(): string;
  quarantined(): QuarantinedFile[];
  vectorStats(model: string): { vectors: number; pending: number };
  /** The stores it spans: itself for one store; the primary (entry null) and the registered ones. */
  members(): Array<{ store: LocalBackend; entry: StoreEntry | null }>;
}
