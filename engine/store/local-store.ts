import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramDoc } from '../model/engram-types.js';
import type { EngramWriter, StoreStats } from '../backend.js';
import type { EventNote } from '../model/records.js';
import type { LocalBackend, QuarantinedFile } from './local-backend.js';
import type { EngramEvent, Episode, EventFilter, Session, TimelineFilter } from '../model/records.js';
import { idDay } from '../model/ids.js';
import { contentHash } from '../model/content-hash.js';
import { uniqueHex } from '../unique-hex.js';
import { parseYaml, stringifyYaml } from './yaml-codec.js';
import { invalid, SvcError } from '../errors.js';
import { SqliteIndex } from './sqlite-index.js';
import type { ListFilter, SearchHit, TextSearchOptions, VectorHit } from '../backend.js';
import type { Embedder } from '../embed/embedder.js';
import { writeFileDurable } from './durable-write.js';
import { assertStoreWritable, storeVersionNotice } from './migrations.js';
import { isDiskFull, writeFailure } from './storage-errors.js';
import {
  countEntries,
  dirMtime,
  DISK_FULL,
  initLayout,
  listQuarantined,
  makeDirs,
  readIdPrefix,
  unwritable,
  type StoreParts,
} from './store-layout.js';
import { rebuildLocked, reconcile, type ReconcileMode } from './store-reconcile.js';
import { appendLogLocked, syncLogs, type LogKind } from './store-logs.js';
import { allocateId, flushEngrams } from './store-write.js';

// The local backend: one YAML file per engram under `engrams/` (the source of truth, in a
// git repository) and the derived SQLite index beside it. Every write holds the index's
// `BEGIN IMMEDIATE` lock, which is the cross-process lock for id allocation, the YAML write
// and the index update. Reads see the index; on open it is reconciled with the files.
// The class holds the lock and the handles; the folder layout (store-layout.ts), reconcile and
// quarantine (store-reconcile.ts), the JSONL logs (store-logs.ts) and the write unit's file
// work (store-write.ts) are functions over its `parts`.

/** Engrams embedded per model call while catching up. */
const EMBED_BATCH = 32;

export class LocalStore implements LocalBackend {
  readonly root: string;
  readonly engramsDir: string;
  readonly quarantineDir: string;
  /** Things the caller should tell the user (quarantined files); the CLI prints them. */
  readonly warnings: string[] = [];
  /** Why this store cannot be written here (a read-only mount), or undefined when it can. */
  readonly readOnly: string | undefined;
  private readonly index: SqliteIndex;
  /** What the layout, reconcile, log and write modules need of this store. */
  private readonly parts: StoreParts;
  private queue: Promise<unknown> = Promise.resolve();
  /** A catch-up holding the index's transaction while it reads files; this process's writers wait for it. */
  private catching: Promise<void> | undefined;
  /** Undo steps of the write in progress: what to restore if it fails before it commits. */
  private undo: Array<() => void> = [];

  private constructor(root: string) {
    this.root = root;
    this.engramsDir = join(root, 'engrams');
    this.quarantineDir = join(root, 'quarantine');
    if (existsSync(root) && !statSync(root).isDirectory())
      throw invalid(`the store path ${root} is a file, not a folder: point SVC_PATH or --path at a folder`);
    let readOnly = unwritable(root);
    let index: SqliteIndex | undefined;
    if (!readOnly) {
      makeDirs(this.engramsDir);
      try {
        index = this.openIndex(join(root, 'index.db'));
      } catch (err) {
        // A full disk cannot even hold the index's journal: read from memory instead.
        if (!isDiskFull(err, root)) throw err;
        readOnly = DISK_FULL;
      }
    }
    this.readOnly = readOnly;
    if (readOnly) {
      if (!existsSync(this.engramsDir)) throw new SvcError('storage', `no store at ${root}, and it cannot be created there (${readOnly})`);
      // Nothing can be saved here: the index lives in memory, built from the YAML files.
      index = new SqliteIndex(':memory:');
      this.warnings.push(`the store at ${root} is read-only here (${readOnly}): reading it with an index in memory; writes are refused`);
    }
    this.index = index!;
    this.parts = {
      root,
      engramsDir: this.engramsDir,
      quarantineDir: this.quarantineDir,
      readOnly,
      warnings: this.warnings,
      index: this.index,
    };
  }

  /** The index is derived: a damaged one is set aside (kept for inspection) and rebuilt. */
  private openIndex(path: string): SqliteIndex {
    let index: SqliteIndex | undefined;
    try {
      index = new SqliteIndex(path);
      index.hasSchema();
      return index;
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (!/^SQLITE_(NOTADB|CORRUPT)/.test(code)) throw err;
      index?.close();
      const aside = `${path}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      try {
        renameSync(path, aside);
      } catch {
        /* another process set it aside first */
      }
      for (const f of [`${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
      this.warnings.push(`the index was damaged (${code}); moved it to ${aside} and rebuilt it from the YAML files`);
      return new SqliteIndex(path);
    }
  }

  static async open(root: string, reconcile: ReconcileMode = 'full'): Promise<LocalStore> {
    let store: LocalStore;
    try {
      store = new LocalStore(root);
    } catch (err) {
      if (err instanceof SvcError) throw err;
      throw new SvcError('storage', `cannot open the store at ${root}: ${(err as Error).message}`);
    }
    try {
      if (!store.index.hasSchema()) {
        await store.exclusive(async () => {
          if (store.index.hasSchema()) return;
          store.index.createSchema();
          await store.rebuildLocked();
        });
      }
      if (!store.readOnly && !store.index.hasAddedSchema()) await store.exclusive(async () => store.index.createAddedSchema());
      if (!store.readOnly && !existsSync(join(root, 'local.yaml'))) await store.exclusive(() => initLayout(root));
      const notice = storeVersionNotice(root);
      if (notice) store.warnings.push(notice);
      await store.reconcile(reconcile);
    } catch (err) {
      store.close();
      throw err;
    }
    return store;
  }

  close(): void {
    this.index.close();
  }

  members(): Array<{ store: LocalStore; entry: null }> {
    return [{ store: this, entry: null }];
  }

  // ---------------------------------------------------------------- reads

  async get(id: string): Promise<EngramDoc | null> {
    return this.index.get(id);
  }

  async findByHash(hash: string): Promise<EngramDoc[]> {
    return this.index.findByHash(hash);
  }

  async searchText(query: string, limit: number, mode: 'any' | 'all' = 'any', opts?: TextSearchOptions): Promise<SearchHit[]> {
    return this.index.searchText(query, limit, mode, opts);
  }

  async list(filter: ListFilter): Promise<EngramDoc[]> {
    return this.index.list(filter);
  }

  async stats(): Promise<StoreStats> {
    const byStatus = this.index.countByStatus();
    const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
    await this.syncLogs('episodes');
    await this.syncLogs('events');
    return {
      engrams: total,
      by_status: byStatus,
      episodes: this.index.countEpisodes(),
      sessions: countEntries(join(this.root, 'sessions'), '.yaml'),
      packs: countEntries(join(this.root, 'packs')),
      injection_events: this.index.countEvents('injected'),
    };
  }

  async searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]> {
    return this.index.searchVector(vector, limit, model);
  }

  vectorStats(model: string): { vectors: number; pending: number } {
    if (this.index.vectorModel() === model) return { vectors: this.index.countVectors(), pending: this.index.countPendingEmbeddings() };
    // Vectors of another model (or none yet): every live engram waits for this one.
    const { retired: _retired, ...live } = this.index.countByStatus();
    return { vectors: 0, pending: Object.values(live).reduce((a, b) => a + b, 0) };
  }

  async embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number> {
    if (this.index.vectorModel() !== embedder.model) await this.exclusive(() => this.index.useModel(embedder.model));
    const total = this.index.countPendingEmbeddings();
    let done = 0;
    while (done < total) {
      // Embed outside the lock (slow), store under it; putVector skips engrams edited meanwhile.
      const batch = this.index.pendingEmbeddings(EMBED_BATCH);
      if (batch.length === 0) break;
      const vectors = await embedder.embedPassages(batch.map((b) => b.statement));
      await this.exclusive(() => batch.forEach((item, i) => this.index.putVector(item, vectors[i]!, embedder.model)));
      done += batch.length;
      onProgress?.(Math.min(done, total), total);
    }
    return done;
  }

  /** Catches up with other processes' writes: for long-lived servers, before each request. */
  async refresh(): Promise<void> {
    await this.reconcile('fast');
  }

  /** A fresh id for an episode or session: `EP-{PREFIX}-YYYY-MMDD-{hex}`. */
  recordId(kind: 'EP' | 'SES', now: Date): string {
    return `${kind}-${this.idPrefix()}-${idDay(now)}-${uniqueHex(4)}`;
  }

  async appendEpisodes(episodes: Episode[]): Promise<void> {
    await this.exclusive(() => {
      this.assertWritable();
      this.appendLogLocked('episodes', episodes);
    });
  }

  async queryEpisodes(filter: TimelineFilter): Promise<Episode[]> {
    await this.syncLogs('episodes');
    return this.index.queryEpisodes(filter);
  }

  async getEpisode(id: string): Promise<Episode | null> {
    await this.syncLogs('episodes');
    return this.index.getEpisode(id);
  }

  async appendEvents(events: EngramEvent[]): Promise<void> {
    await this.exclusive(() => {
      this.assertWritable();
      this.appendLogLocked('events', events);
    });
  }

  async listEvents(filter: EventFilter): Promise<EngramEvent[]> {
    await this.syncLogs('events');
    return this.index.listEvents(filter);
  }

  async putSession(session: Session): Promise<void> {
    const dir = join(this.root, 'sessions');
    await this.exclusive(() => {
      this.assertWritable();
      mkdirSync(dir, { recursive: true });
      writeFileDurable(join(dir, `${session.id}.yaml`), stringifyYaml({ ...session }));
    });
  }

  async getSession(id: string): Promise<Session | null> {
    if (!/^[A-Za-z0-9._-]+$/.test(id)) throw invalid(`not a session id: "${id}"`);
    const path = join(this.root, 'sessions', `${id}.yaml`);
    if (!existsSync(path)) return null;
    try {
      const value = parseYaml(readFileSync(path, 'utf8')) as Session;
      // eslint-disable-next-line no-restricted-syntax -- caught just below and reported as an unreadable record
      if (!value || typeof value !== 'object' || value.id !== id) throw new Error('not a session record');
      return value;
    } catch (err) {
      throw new SvcError('storage', `session file ${path} is unreadable: ${(err as Error).message.split('\n')[0]}`);
    }
  }

  quarantined(): QuarantinedFile[] {
    return listQuarantined(this.quarantineDir);
  }

  idPrefix(): string {
    return readIdPrefix(this.root);
  }

  // ---------------------------------------------------------------- writes

  /**
   * Runs `fn` holding the store's write lock. Engrams passed to `put` are validated and
   * written (durably) when `fn` returns, then the index commits; if anything throws,
   * nothing is written and the index rolls back.
   */
  async write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      this.assertWritable();
      const dirWasKnown = dirMtime(this.engramsDir) === this.index.getMeta('dir_mtime');
      const pending = new Map<string, EngramDoc>();
      const notes = new Map<string, EventNote>();
      const tx: EngramWriter = {
        get: async (id) => pending.get(id) ?? this.index.get(id),
        findByHash: async (hash) => {
          const found = new Map(this.index.findByHash(hash).map((e) => [e.id, e]));
          for (const e of pending.values()) if (contentHash(e.statement) === hash) found.set(e.id, e);
          return [...found.values()];
        },
        allocateId: async (kind, now) => allocateId(this.parts, kind, now, pending),
        put: async (engram, note) => {
          pending.set(engram.id, structuredClone(engram));
          if (note) notes.set(engram.id, note);
        },
      };
      const result = await fn(tx);
      await flushEngrams(this.parts, [...pending.values()], notes, this.undo);
      // Our own renames change the folder mtime; record it so readers do not rescan for them.
      if (dirWasKnown) this.index.setMeta('dir_mtime', dirMtime(this.engramsDir));
      return result;
    });
  }

  /** Drops the index content and rebuilds it from the YAML files. */
  async rebuild(): Promise<void> {
    await this.exclusive(() => this.rebuildLocked());
  }

  /**
   * Serializes writers in this process, then across processes with BEGIN IMMEDIATE. If `fn` or
   * the commit fails, the index rolls back and the files `fn` wrote are restored (see `undo`):
   * a write that fails leaves nothing behind, and says so when the disk is full.
   */
  private exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = async (): Promise<T> => {
      // A catch-up of this process may hold the index's transaction while it reads files.
      while (this.catching) await this.catching;
      this.index.begin();
      this.undo = [];
      try {
        const result = await fn();
        this.index.commit();
        return result;
      } catch (err) {
        this.index.rollback();
        for (const step of this.undo.reverse()) {
          try {
            step();
          } catch {
            /* best effort: the next reconcile reads whatever is on disk */
          }
        }
        throw writeFailure(err, this.root);
      } finally {
        this.undo = [];
      }
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * For reads that keep the index current (reconcile, log catch-up): never waits for another
   * process's write lock (a rebuild can hold it for seconds; the committed index is good enough
   * to read meanwhile), and a disk too full to update the index only costs a warning.
   */
  private async catchUp(fn: () => Promise<void> | void): Promise<void> {
    // A write of this process holds the transaction (awaiting its work, in a server running
    // requests side by side), or another catch-up does: the index is read as it is meanwhile,
    // as when another process holds the lock. One connection has one transaction at a time.
    if (this.index.inTransaction() || !this.index.tryBegin()) return;
    const work = (async () => {
      try {
        await fn();
        this.index.commit();
      } catch (err) {
        this.index.rollback();
        if (!isDiskFull(err, this.root)) throw err;
        const note = `the disk holding the store at ${this.root} is full: reading without updating the index`;
        if (!this.warnings.includes(note)) this.warnings.push(note);
      }
    })();
    this.catching = work.catch(() => undefined);
    try {
      await work;
    } finally {
      this.catching = undefined;
    }
  }

  /** Refuses a write on a store that cannot be written here. */
  private assertWritable(): void {
    if (this.readOnly === DISK_FULL) throw writeFailure(Object.assign(new Error('no space'), { code: 'ENOSPC' }), this.root);
    if (this.readOnly)
      throw new SvcError('storage', `the store at ${this.root} is read-only here (${this.readOnly}): reads work, writes do not`);
    assertStoreWritable(this.root);
  }

  // ---------------------------------------------------------------- reconcile and logs

  private async reconcile(mode: ReconcileMode): Promise<void> {
    await reconcile(this.parts, mode, (fn) => this.catchUp(fn));
  }

  private async rebuildLocked(): Promise<void> {
    await rebuildLocked(this.parts);
  }

  /** Indexes what other processes appended to the logs since we last looked. */
  private async syncLogs(kind: LogKind): Promise<void> {
    await syncLogs(this.parts, kind, (fn) => this.catchUp(fn));
  }

  private appendLogLocked(kind: LogKind, records: Array<Episode | EngramEvent>): void {
    appendLogLocked(this.parts, kind, records, this.undo);
  }
}
