import { existsSync } from 'node:fs';
import type { EngramDoc } from '../model/engram-types.js';
import type { EngramWriter, StoreStats } from '../backend.js';
import type { EventNote } from '../model/records.js';
import { byLearnedAtDesc } from '../model/learned-at.js';
import type { EngramEvent, Episode, EventFilter, Session, TimelineFilter } from '../model/records.js';
import type { Embedder } from '../embed/embedder.js';
import { contentHash } from '../model/content-hash.js';
import { changedFields } from '../model/change-event.js';
import { SvcError } from '../errors.js';
import { LocalStore } from './local-store.js';
import { type ReconcileMode } from './store-reconcile.js';
import type { LocalBackend, QuarantinedFile } from './local-backend.js';
import type { ListFilter, SearchHit, TextSearchOptions, VectorHit } from '../backend.js';
import { readRegistry, storeKey, type StoreEntry } from './store-registry.js';
// Re-exported for the callers (and tests) that import them from here; they live in store-admin.ts.

// A composite backend over the primary store and the stores registered in its local.yaml
// (see store-registry.ts). Reads span every store: search hits merged by score, lists by
// learned_at, a get finds the engram wherever it lives. Writes are routed:
//   - an engram that exists is written back to the store that holds it;
//   - a new engram goes to the store registered for its scope, else to the primary;
//   - a read-only store is never written: a write aimed at it fails, naming the store.
// A new engram's id is allocated by the store it lands in, with that store's own prefix, so ids
// never collide across stores. Because the scope is only known when the engram is put, the
// composite hands out a placeholder id first and swaps in the real one before anything is
// written (in the engram, in every other engram put in the same unit of work, and in the
// caller's object).
// Episodes and sessions belong to the primary store. Change events are written by the store
// that holds the engram; `listEvents` reads them from every store.
// The `svc stores` commands (list, add, remove) are in store-admin.ts.

/** Everything a LocalStore offers its callers: the CLI treats both alike. */
/** Which stores a composite spans: every registered one, only the writable ones, or none. */
export type StoreSpan = 'all' | 'writable' | 'primary';

export interface StoreMember {
  store: LocalStore;
  /** null for the primary store. */
  entry: StoreEntry | null;
}

export interface MissingStore {
  entry: StoreEntry;
  reason: string;
}

/** Fields learn updates on other engrams as a side effect; never a reason to fail on a read-only store. */
const INCIDENTAL_FIELDS = new Set(['recurrence_count', 'relations']);

export class MultiStore implements LocalBackend {
  readonly primary: LocalStore;
  private readonly added: StoreMember[] = [];
  /** Registered stores that could not be opened (folder gone, unreadable): reads skip them, writes to their scope fail. */
  readonly missing: MissingStore[] = [];
  private readonly ownWarnings: string[] = [];

  private constructor(primary: LocalStore) {
    this.primary = primary;
  }

  /** Opens the primary store at `root` and the stores its registry names (per `span`). */
  static async open(root: string, reconcile: ReconcileMode = 'full', span: StoreSpan = 'all'): Promise<MultiStore> {
    const primary = await LocalStore.open(root, reconcile);
    const multi = new MultiStore(primary);
    try {
      if (span !== 'primary') {
        for (const entry of await readRegistry(primary.root)) {
          if (span === 'writable' && entry.readonly) continue;
          await multi.attach(entry, reconcile);
        }
      }
    } catch (err) {
      multi.close();
      throw err;
    }
    return multi;
  }

  /** Wraps stores that are already open (tests, servers). The composite closes them on close(). */
  static of(primary: LocalStore, added: Array<{ store: LocalStore; entry: StoreEntry }>): MultiStore {
    const multi = new MultiStore(primary);
    for (const m of added) multi.added.push(m);
    return multi;
  }

  /** Opens one more registered store and spans it from now on (e.g. right after `stores add`). */
  async attach(entry: StoreEntry, reconcile: ReconcileMode = 'fast'): Promise<StoreMember | null> {
    const key = storeKey(entry.path);
    const known = this.added.find((m) => storeKey(m.store.root) === key);
    if (known) return known;
    if (!existsSync(entry.path)) {
      this.noteMissing(entry, 'the folder does not exist');
      return null;
    }
    try {
      const store = await LocalStore.open(entry.path, reconcile);
      const member = { store, entry };
      this.added.push(member);
      return member;
    } catch (err) {
      this.noteMissing(entry, (err as Error).message);
      return null;
    }
  }

  private noteMissing(entry: StoreEntry, reason: string): void {
    this.missing.push({ entry, reason });
    this.ownWarnings.push(`the store registered for scope ${entry.scope} at ${entry.path} is unavailable (${reason}); skipped`);
  }

  /** The primary first, then the registered stores in registration order. */
  members(): StoreMember[] {
    return [{ store: this.primary, entry: null }, ...this.added];
  }

  private stores(): LocalStore[] {
    return this.members().map((m) => m.store);
  }

  /** The store a new engram of `scope` goes to. Throws for a read-only or unavailable store. */
  storeForScope(scope: string): StoreMember {
    const member = this.added.find((m) => m.entry?.scope === scope);
    if (member) {
      if (member.entry?.readonly) {
        throw new SvcError(
          'conflict',
          `scope ${scope} belongs to the read-only store at ${member.store.root}: svc never writes there (learn it with another scope, or re-add the store without --readonly)`,
        );
      }
      return member;
    }
    const gone = this.missing.find((m) => m.entry.scope === scope);
    if (gone)
      throw new SvcError('storage', `scope ${scope} belongs to the store at ${gone.entry.path}, which is unavailable (${gone.reason})`);
    return { store: this.primary, entry: null };
  }

  /** The store that holds engram `id`, or null. */
  async ownerOf(id: string): Promise<StoreMember | null> {
    for (const m of this.members()) if (await m.store.get(id)) return m;
    return null;
  }

  // ------------------------------------------------------------- LocalStore surface

  get root(): string {
    return this.primary.root;
  }

  get engramsDir(): string {
    return this.primary.engramsDir;
  }

  get quarantineDir(): string {
    return this.primary.quarantineDir;
  }

  get readOnly(): string | undefined {
    return this.primary.readOnly;
  }

  /** Warnings of every member (moved here as they are read), then the composite's own. */
  get warnings(): string[] {
    for (const s of this.stores()) {
      const w = s.warnings.splice(0);
      for (const line of w) this.ownWarnings.push(s === this.primary ? line : `${s.root}: ${line}`);
    }
    return this.ownWarnings;
  }

  close(): void {
    for (const s of this.stores()) s.close();
  }

  idPrefix(): string {
    return this.primary.idPrefix();
  }

  quarantined(): QuarantinedFile[] {
    return this.stores().flatMap((s) => s.quarantined());
  }

  vectorStats(model: string): { vectors: number; pending: number } {
    let vectors = 0;
    let pending = 0;
    for (const s of this.stores()) {
      const v = s.vectorStats(model);
      vectors += v.vectors;
      pending += v.pending;
    }
    return { vectors, pending };
  }

  /** Rebuilds the index of every store from its YAML files. */
  async rebuild(): Promise<void> {
    for (const s of this.stores()) await s.rebuild();
  }

  async refresh(): Promise<void> {
    for (const s of this.stores()) await s.refresh();
  }

  // ------------------------------------------------------------- reads

  async get(id: string): Promise<EngramDoc | null> {
    for (const s of this.stores()) {
      const e = await s.get(id);
      if (e) return e;
    }
    return null;
  }

  async findByHash(hash: string): Promise<EngramDoc[]> {
    return dedupe((await Promise.all(this.stores().map((s) => s.findByHash(hash)))).flat());
  }

  async searchText(query: string, limit: number, mode: 'any' | 'all' = 'any', opts?: TextSearchOptions): Promise<SearchHit[]> {
    const hits = (await Promise.all(this.stores().map((s) => s.searchText(query, limit, mode, opts)))).flat();
    return dedupeHits(hits.sort((a, b) => b.score - a.score)).slice(0, limit);
  }

  async searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]> {
    const hits = (await Promise.all(this.stores().map((s) => s.searchVector(vector, limit, model)))).flat();
    return dedupeHits(hits.sort((a, b) => b.cosine - a.cosine)).slice(0, limit);
  }

  async list(filter: ListFilter): Promise<EngramDoc[]> {
    const all = dedupe((await Promise.all(this.stores().map((s) => s.list(filter)))).flat());
    all.sort(byLearnedAtDesc);
    return filter.limit ? all.slice(0, filter.limit) : all;
  }

  async stats(): Promise<StoreStats> {
    const parts = await Promise.all(this.stores().map((s) => s.stats()));
    const total: StoreStats = { engrams: 0, by_status: {}, episodes: 0, sessions: 0, packs: 0, injection_events: 0 };
    for (const p of parts) {
      total.engrams += p.engrams;
      total.episodes += p.episodes;
      total.sessions += p.sessions;
      total.packs += p.packs;
      total.injection_events += p.injection_events;
      for (const [k, v] of Object.entries(p.by_status)) total.by_status[k] = (total.by_status[k] ?? 0) + v;
    }
    return total;
  }

  /** Vectors are derived data in each store's index, so read-only stores are embedded too. */
  async embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number> {
    let done = 0;
    for (const s of this.stores()) done += await s.embedPending(embedder, onProgress);
    return done;
  }

  // ------------------------------------------------------------- records

  recordId(kind: 'EP' | 'SES', now: Date): string {
    return this.primary.recordId(kind, now);
  }

  async appendEpisodes(episodes: Episode[]): Promise<void> {
    await this.primary.appendEpisodes(episodes);
  }

  async queryEpisodes(filter: TimelineFilter): Promise<Episode[]> {
    return this.primary.queryEpisodes(filter);
  }

  async getEpisode(id: string): Promise<Episode | null> {
    for (const s of this.stores()) {
      const e = await s.getEpisode(id);
      if (e) return e;
    }
    return null;
  }

  async putSession(session: Session): Promise<void> {
    await this.primary.putSession(session);
  }

  async getSession(id: string): Promise<Session | null> {
    return this.primary.getSession(id);
  }

  /** An event about one engram goes to the (writable) store that holds it; others to the primary. */
  async appendEvents(events: EngramEvent[]): Promise<void> {
    const groups = new Map<LocalStore, EngramEvent[]>();
    for (const ev of events) {
      let target = this.primary;
      if (ev.engram_id) {
        const owner = await this.ownerOf(ev.engram_id);
        if (owner && !owner.entry?.readonly) target = owner.store;
      }
      groups.set(target, [...(groups.get(target) ?? []), ev]);
    }
    for (const [store, group] of groups) await store.appendEvents(group);
  }

  async listEvents(filter: EventFilter): Promise<EngramEvent[]> {
    const all = (await Promise.all(this.stores().map((s) => s.listEvents(filter)))).flat();
    all.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    return filter.limit ? all.slice(Math.max(0, all.length - filter.limit)) : all;
  }

  // ------------------------------------------------------------- writes

  /**
   * Runs `fn` holding the write lock of every writable store (taken in path order, so two
   * processes never wait on each other in a cycle), then writes each engram to its store.
   * Every store's part commits when `fn` returns; if `fn` or the routing throws, nothing is
   * written. (Each store commits on its own: a crash between two commits can leave one store
   * written and not the other, never a half-written file.)
   */
  async write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T> {
    const writable = this.members()
      .filter((m) => !m.entry?.readonly)
      .sort((a, b) => (a.store.root < b.store.root ? -1 : a.store.root > b.store.root ? 1 : 0));
    const txs = new Map<LocalStore, EngramWriter>();
    const lockAll = async (i: number): Promise<T> => {
      if (i === writable.length) return this.runUnit(fn, txs);
      const { store } = writable[i]!;
      return store.write(async (tx) => {
        txs.set(store, tx);
        return lockAll(i + 1);
      });
    };
    return lockAll(0);
  }

  private async runUnit<T>(fn: (tx: EngramWriter) => Promise<T>, txs: Map<LocalStore, EngramWriter>): Promise<T> {
    const readers = this.members().map((m) => ({ member: m, read: txs.get(m.store) ?? m.store }));
    const pending = new Map<string, { doc: EngramDoc; note?: EventNote }>();

    const findStored = async (id: string): Promise<{ member: StoreMember; doc: EngramDoc } | null> => {
      for (const r of readers) {
        const doc = await r.read.get(id);
        if (doc) return { member: r.member, doc };
      }
      return null;
    };

    const tx: EngramWriter = {
      get: async (id) => pending.get(id)?.doc ?? (await findStored(id))?.doc ?? null,
      findByHash: async (hash) => {
        const found = new Map<string, EngramDoc>();
        for (const r of readers) for (const e of await r.read.findByHash(hash)) if (!found.has(e.id)) found.set(e.id, e);
        for (const p of pending.values()) if (contentHash(p.doc.statement) === hash) found.set(p.doc.id, p.doc);
        return [...found.values()];
      },
      // The store that will hold it mints the id, with its own prefix.
      allocateId: async (kind, now, scope) => {
        const target = this.storeForScope(scope);
        const writer = txs.get(target.store);
        if (!writer)
          throw new SvcError('conflict', `scope ${scope} belongs to the read-only store at ${target.store.root}: svc never writes there`);
        let id: string;
        do id = await writer.allocateId(kind, now, scope);
        while (pending.has(id) || (await findStored(id)) !== null);
        return id;
      },
      put: async (engram, note) => {
        pending.set(engram.id, { doc: structuredClone(engram), note: note && structuredClone(note) });
      },
    };

    const result = await fn(tx);
    if (pending.size === 0) return result;

    // Where each engram goes: back to the store that holds it, else by scope.
    for (const [id, p] of pending) {
      const stored = await findStored(id);
      let target: StoreMember;
      if (stored) {
        if (stored.member.entry?.readonly) {
          const changed = changedFields(stored.doc, p.doc);
          if (changed.every((k) => INCIDENTAL_FIELDS.has(k))) {
            // Bookkeeping another write does on the side (a recurrence count, a back-link): the
            // read-only store keeps its version; the write itself goes on.
            if (changed.length)
              this.ownWarnings.push(
                `left ${id} in the read-only store at ${stored.member.store.root} unchanged (${changed.join(', ')} not updated)`,
              );
            continue;
          }
          throw new SvcError(
            'conflict',
            `engram ${id} lives in the read-only store at ${stored.member.store.root} (scope ${stored.member.entry.scope}): svc never writes there`,
          );
        }
        target = stored.member;
      } else {
        target = this.storeForScope(p.doc.scope);
      }
      const writer = txs.get(target.store);
      if (!writer)
        throw new SvcError(
          'conflict',
          `scope ${p.doc.scope} belongs to the read-only store at ${target.store.root}: svc never writes there`,
        );
      await writer.put(p.doc, p.note);
    }
    return result;
  }
}

function dedupe(docs: EngramDoc[]): EngramDoc[] {
  const seen = new Set<string>();
  return docs.filter((d) => (seen.has(d.id) ? false : (seen.add(d.id), true)));
}

function dedupeHits<H extends { engram: EngramDoc }>(hits: H[]): H[] {
  const seen = new Set<string>();
  return hits.filter((h) => (seen.has(h.engram.id) ? false : (seen.add(h.engram.id), true)));
}
