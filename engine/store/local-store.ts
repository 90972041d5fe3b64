import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { EngramDoc } from '../model/engram-schema.js';
import type { EngramWriter, EventNote, StoreStats } from '../backend.js';
import type { LocalBackend, QuarantinedFile } from './local-backend.js';
export type { QuarantinedFile } from './local-backend.js';
import type { EngramEvent, Episode, EventFilter, Session, TimelineFilter } from '../model/records.js';
import { appendLines, readLinesFrom } from './jsonl-log.js';
import { formatId, idDay, idStem, newStorePrefix, parseId, type IdKind } from '../model/ids.js';
import { contentHash } from '../model/content-hash.js';
import { nodeCrypto } from '../lazy-crypto.js';
import { invalid, SvcError } from '../errors.js';
import { SqliteIndex, type FileStamp } from './sqlite-index.js';
import type { ListFilter, SearchHit, VectorHit } from '../backend.js';
import type { Embedder } from '../embed/embedder.js';
import { createFileDurable, fsyncDir, TEMP_PREFIX, writeFileDurable, writeFilesDurable } from './durable-write.js';
import { changeEvent } from '../model/change-event.js';
import { assertStoreWritable, LATEST_STORE_VERSION, storeVersionNotice } from './migrations.js';
import { isDiskFull, writeFailure } from './storage-errors.js';

// The local backend: one YAML file per engram under `engrams/` (the source of truth, in a
// git repository) and the derived SQLite index beside it. Every write holds the index's
// `BEGIN IMMEDIATE` lock, which is the cross-process lock for id allocation, the YAML write
// and the index update. Reads see the index; on open it is reconciled with the files.

/** The layout a new store gets (store migrations in ./migrations.ts move older ones up). */
export const STORE_LAYOUT_VERSION = LATEST_STORE_VERSION;
const ENGRAM_EXT = '.yaml';
/** Engrams embedded per model call while catching up. */
const EMBED_BATCH = 32;
/** Hot paths trust the folder's mtime; a full stat scan runs at least this often. */
const FULL_SCAN_INTERVAL_MS = 30_000;

type LogKind = 'episodes' | 'events';
const LOG_EXT = '.jsonl';

const GITIGNORE = `# Derived or machine-local: never committed.
index.db*
local.yaml
pack-keys.yaml
logs/
models/
remote/
quarantine/
backups/
bin/
.tmp-*
`;

/**
 * `fast`: trust the folder mtime (adds, deletes, renames, git checkouts) and stat every file
 * only every 30 s; for recall, hooks and writes, which run on every prompt. `full`: stat every
 * file (~40 ms per 10,000), for list, status and other inventory commands.
 */
export type ReconcileMode = 'fast' | 'full';


type Yaml = typeof import('./engram-yaml.js');
let yamlModule: Promise<Yaml> | undefined;
// YAML parsing and schema validation cost ~60 ms to import: only writes and reconciles need them.
const loadYaml = (): Promise<Yaml> => (yamlModule ??= import('./engram-yaml.js'));

export class LocalStore implements LocalBackend {
  readonly root: string;
  readonly engramsDir: string;
  readonly quarantineDir: string;
  /** Things the caller should tell the user (quarantined files); the CLI prints them. */
  readonly warnings: string[] = [];
  /** Why this store cannot be written here (a read-only mount), or undefined when it can. */
  readonly readOnly: string | undefined;
  private readonly index: SqliteIndex;
  private queue: Promise<unknown> = Promise.resolve();
  /** Undo steps of the write in progress: what to restore if it fails before it commits. */
  private undo: Array<() => void> = [];

  private constructor(root: string) {
    this.root = root;
    this.engramsDir = join(root, 'engrams');
    this.quarantineDir = join(root, 'quarantine');
    if (existsSync(root) && !statSync(root).isDirectory()) throw invalid(`the store path ${root} is a file, not a folder: point SVC_PATH or --path at a folder`);
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
      if (!store.readOnly && !store.index.hasAddedIndexes()) await store.exclusive(async () => store.index.createAddedIndexes());
      if (!store.readOnly && !existsSync(join(root, 'local.yaml'))) await store.exclusive(() => store.initLayout());
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

  async searchText(query: string, limit: number, mode: 'any' | 'all' = 'any'): Promise<SearchHit[]> {
    return this.index.searchText(query, limit, mode);
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
    const { retired = 0, ...live } = this.index.countByStatus();
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
    return `${kind}-${this.idPrefix()}-${idDay(now)}-${nodeCrypto().randomBytes(4).toString('hex')}`;
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
    const { stringify } = await import('yaml');
    const dir = join(this.root, 'sessions');
    await this.exclusive(() => {
      this.assertWritable();
      mkdirSync(dir, { recursive: true });
      writeFileDurable(join(dir, `${session.id}.yaml`), stringify(session, { lineWidth: 0 }));
    });
  }

  async getSession(id: string): Promise<Session | null> {
    if (!/^[A-Za-z0-9._-]+$/.test(id)) throw invalid(`not a session id: "${id}"`);
    const path = join(this.root, 'sessions', `${id}.yaml`);
    if (!existsSync(path)) return null;
    const { parse } = await import('yaml');
    try {
      const value = parse(readFileSync(path, 'utf8')) as Session;
      if (!value || typeof value !== 'object' || value.id !== id) throw new Error('not a session record');
      return value;
    } catch (err) {
      throw new SvcError('storage', `session file ${path} is unreadable: ${(err as Error).message.split('\n')[0]}`);
    }
  }

  quarantined(): QuarantinedFile[] {
    if (!existsSync(this.quarantineDir)) return [];
    return readdirSync(this.quarantineDir)
      .filter((f) => !f.endsWith('.reason.txt'))
      .sort()
      .map((file) => {
        const reasonPath = join(this.quarantineDir, `${file}.reason.txt`);
        const reason = existsSync(reasonPath) ? readFileSync(reasonPath, 'utf8').trim() : 'unknown';
        return { file: join(this.quarantineDir, file), reason };
      });
  }

  idPrefix(): string {
    const text = readFileSync(join(this.root, 'local.yaml'), 'utf8');
    const m = /^id_prefix:\s*([A-Z][A-Z0-9]+)\s*$/m.exec(text);
    if (!m) throw new SvcError('storage', `local.yaml in ${this.root} has no valid id_prefix`);
    return m[1]!;
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
      const dirWasKnown = this.dirMtime() === this.index.getMeta('dir_mtime');
      const pending = new Map<string, EngramDoc>();
      const notes = new Map<string, EventNote>();
      const tx: EngramWriter = {
        get: async (id) => pending.get(id) ?? this.index.get(id),
        findByHash: async (hash) => {
          const found = new Map(this.index.findByHash(hash).map((e) => [e.id, e]));
          for (const e of pending.values()) if (contentHash(e.statement) === hash) found.set(e.id, e);
          return [...found.values()];
        },
        allocateId: async (kind, now) => this.allocateId(kind, now, pending),
        put: async (engram, note) => {
          pending.set(engram.id, structuredClone(engram));
          if (note) notes.set(engram.id, note);
        },
      };
      const result = await fn(tx);
      await this.flush([...pending.values()], notes);
      // Our own renames change the folder mtime; record it so readers do not rescan for them.
      if (dirWasKnown) this.index.setMeta('dir_mtime', this.dirMtime());
      return result;
    });
  }

  /** Drops the index content and rebuilds it from the YAML files. */
  async rebuild(): Promise<void> {
    await this.exclusive(() => this.rebuildLocked());
  }

  private async flush(docs: EngramDoc[], notes: Map<string, EventNote>): Promise<void> {
    if (docs.length === 0) return;
    const { stringifyEngram } = await loadYaml();
    const { validateEngram } = await import('../model/validate-engram.js');
    for (const doc of docs) {
      const check = validateEngram(doc);
      if (!check.ok) throw invalid(`engram ${doc.id} is invalid`, check.errors);
    }
    const targets = docs.map((doc) => join(this.engramsDir, doc.id + ENGRAM_EXT));
    // If the write fails before it commits, each file goes back to what it was (or away).
    for (const target of targets) {
      const before = existsSync(target) ? readFileSync(target) : null;
      this.undo.push(() => (before === null ? rmSync(target, { force: true }) : writeFileDurable(target, before)));
    }
    writeFilesDurable(docs.map((doc, i) => [targets[i]!, stringifyEngram(doc)] as const));
    const events: EngramEvent[] = [];
    for (const doc of docs) {
      const file = doc.id + ENGRAM_EXT;
      const before = this.index.get(doc.id);
      this.index.upsert(doc, file, stampOf(join(this.engramsDir, file)));
      const event = changeEvent(before, doc, notes.get(doc.id));
      if (event) events.push(event);
    }
    // The history is appended under the same lock, right after the files it describes.
    if (events.length) this.appendLogLocked('events', events);
  }

  private allocateId(kind: IdKind, now: Date, pending: Map<string, EngramDoc>): string {
    const stem = idStem(kind, this.idPrefix(), idDay(now));
    let seq = this.index.lastSeq(stem);
    let id: string;
    // A file can exist without its row if a writer died between the two: never reuse it.
    do {
      seq += 1;
      id = formatId(kind, this.idPrefix(), idDay(now), seq);
    } while (pending.has(id) || existsSync(join(this.engramsDir, id + ENGRAM_EXT)));
    this.index.setLastSeq(stem, seq);
    return id;
  }

  /**
   * Serializes writers in this process, then across processes with BEGIN IMMEDIATE. If `fn` or
   * the commit fails, the index rolls back and the files `fn` wrote are restored (see `undo`):
   * a write that fails leaves nothing behind, and says so when the disk is full.
   */
  private exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = async (): Promise<T> => {
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
    if (!this.index.tryBegin()) return;
    try {
      await fn();
      this.index.commit();
    } catch (err) {
      this.index.rollback();
      if (!isDiskFull(err, this.root)) throw err;
      const note = `the disk holding the store at ${this.root} is full: reading without updating the index`;
      if (!this.warnings.includes(note)) this.warnings.push(note);
    }
  }

  /** Refuses a write on a store that cannot be written here. */
  private assertWritable(): void {
    if (this.readOnly === DISK_FULL) throw writeFailure(Object.assign(new Error('no space'), { code: 'ENOSPC' }), this.root);
    if (this.readOnly) throw new SvcError('storage', `the store at ${this.root} is read-only here (${this.readOnly}): reads work, writes do not`);
    assertStoreWritable(this.root);
  }

  // ---------------------------------------------------------------- layout and reconcile

  /** First open of a store (or of a fresh clone): git repository, config and this machine's id prefix. */
  private async initLayout(): Promise<void> {
    if (!existsSync(join(this.root, '.git'))) {
      const [{ default: git }, fs] = await Promise.all([import('isomorphic-git'), import('node:fs')]);
      await git.init({ fs, dir: this.root, defaultBranch: 'main' });
    }
    if (!existsSync(join(this.root, '.gitignore'))) writeFileDurable(join(this.root, '.gitignore'), GITIGNORE);
    if (!existsSync(join(this.root, 'config.yaml'))) {
      writeFileDurable(join(this.root, 'config.yaml'), `store_version: ${STORE_LAYOUT_VERSION}\n`);
    }
    // local.yaml is written last: its presence means the layout is complete.
    createFileDurable(join(this.root, 'local.yaml'), `# This machine's copy of the store.\nid_prefix: ${newStorePrefix((n) => nodeCrypto().randomBytes(n))}\n`);
  }

  private dirMtime(): string {
    return String(statSync(this.engramsDir).mtimeMs);
  }

  private engramFiles(): string[] {
    return readdirSync(this.engramsDir).filter((f) => f.endsWith(ENGRAM_EXT) && !f.startsWith(TEMP_PREFIX));
  }

  private async reconcile(mode: ReconcileMode): Promise<void> {
    const dirMtime = this.dirMtime();
    if (mode === 'fast') {
      const lastFull = Number(this.index.getMeta('full_scan_at') ?? 0);
      if (dirMtime === this.index.getMeta('dir_mtime') && Date.now() - lastFull < FULL_SCAN_INTERVAL_MS) return;
    }
    const { changed, removed } = this.diff();
    if (changed.length > 0 || removed.length > 0) {
      await this.catchUp(async () => {
        const yaml = await loadYaml();
        for (const file of changed) {
          const path = join(this.engramsDir, file);
          if (!existsSync(path)) continue;
          const stamp = stampOf(path);
          const known = this.index.stampOf(file);
          if (known && known.mtime === stamp.mtime && known.size === stamp.size) continue; // a writer beat us to it
          this.indexFile(file, path, stamp, yaml);
        }
        for (const file of removed) if (!existsSync(join(this.engramsDir, file))) this.index.removeFile(file);
        if (!this.readOnly) this.removeTempFiles();
      });
    }
    await this.catchUp(() => {
      this.index.setMeta('dir_mtime', dirMtime);
      this.index.setMeta('full_scan_at', String(Date.now()));
    });
  }

  private diff(): { changed: string[]; removed: string[] } {
    const indexed = this.index.indexedFiles();
    const changed: string[] = [];
    for (const file of this.engramFiles()) {
      const known = indexed.get(file);
      indexed.delete(file);
      const stamp = stampOf(join(this.engramsDir, file));
      if (!known || known.mtime !== stamp.mtime || known.size !== stamp.size) changed.push(file);
    }
    return { changed, removed: [...indexed.keys()] };
  }

  private indexFile(file: string, path: string, stamp: FileStamp, yaml: Yaml): void {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      this.quarantine(file, `unreadable: ${(err as Error).message}`);
      return;
    }
    const parsed = yaml.parseEngramYaml(text);
    if (!parsed.ok) {
      this.quarantine(file, parsed.reason);
      return;
    }
    const expected = file.slice(0, -ENGRAM_EXT.length);
    if (parsed.engram.id !== expected) {
      this.quarantine(file, `id "${parsed.engram.id}" does not match the file name`);
      return;
    }
    // A file that lost keys its indexed version had was cut short: never read (and rewritten) as whole.
    const previous = this.index.get(expected);
    const lost = previous ? yaml.lostFields(previous, parsed.keys) : [];
    if (lost.length > 0) {
      this.quarantine(file, `it lost ${lost.join(', ')}, which its previous version had: the file was cut short or damaged`);
      return;
    }
    // parseEngramYaml has just computed the statement's hash.
    this.index.upsert(parsed.engram, file, stamp, parsed.engram.content_hash);
    this.bumpCounter(expected);
  }

  /** Moves a bad file aside (never deletes it), drops it from the index and reports it. */
  private quarantine(file: string, reason: string): void {
    mkdirSync(this.quarantineDir, { recursive: true });
    const dest = join(this.quarantineDir, `${file}.${new Date().toISOString().replace(/[:.]/g, '-')}`);
    renameSync(join(this.engramsDir, file), dest);
    writeFileDurable(`${dest}.reason.txt`, `${reason}\n`);
    fsyncDir(this.engramsDir);
    this.index.removeFile(file);
    // Its id stays taken: a later engram must not reuse the name of a quarantined one.
    this.bumpCounter(file.slice(0, -ENGRAM_EXT.length));
    this.warnings.push(`quarantined ${file}: ${reason} (moved to ${dest})`);
  }

  private bumpCounter(id: string): void {
    const p = parseId(id);
    if (p) this.index.setLastSeq(idStem(p.kind, p.prefix, p.day), p.seq);
  }

  private removeTempFiles(): void {
    // Under the write lock no writer is mid-write, so any temp file belongs to a dead process.
    for (const f of readdirSync(this.engramsDir)) {
      if (f.startsWith(TEMP_PREFIX)) unlinkSync(join(this.engramsDir, f));
    }
  }

  private logFiles(kind: LogKind): string[] {
    const dir = join(this.root, kind);
    return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(LOG_EXT)).sort() : [];
  }

  /** Indexes what other processes appended to the logs since we last looked. */
  private async syncLogs(kind: LogKind): Promise<void> {
    const behind = this.logFiles(kind).some((f) => statSync(join(this.root, kind, f)).size !== this.index.logIndexed(`${kind}/${f}`));
    if (behind) await this.catchUp(() => this.syncLogsLocked(kind));
  }

  private syncLogsLocked(kind: LogKind): void {
    for (const f of this.logFiles(kind)) {
      const rel = `${kind}/${f}`;
      const path = join(this.root, kind, f);
      let indexed = this.index.logIndexed(rel);
      if (statSync(path).size < indexed) {
        this.index.forgetLog(rel); // rewritten behind our back (a git checkout): read it again
        indexed = 0;
      }
      const { lines, end } = readLinesFrom(path, indexed);
      for (const line of lines) this.indexLogLine(kind, rel, line);
      this.index.setLogIndexed(rel, end);
    }
  }

  private indexLogLine(kind: LogKind, rel: string, line: string): void {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      this.warnings.push(`skipped an unreadable line in ${rel}`);
      return;
    }
    if (kind === 'episodes') this.index.addEpisode(record as Episode, rel);
    else this.index.addEvent(record as EngramEvent, rel);
  }

  /** Appends records to this month's (events) or today's (episodes) log and indexes them. */
  private appendLogLocked(kind: LogKind, records: Array<Episode | EngramEvent>): void {
    const dir = join(this.root, kind);
    makeDirs(dir);
    this.syncLogsLocked(kind);
    const byFile = new Map<string, Array<Episode | EngramEvent>>();
    for (const r of records) {
      const day = r.at.slice(0, kind === 'events' ? 7 : 10);
      const f = `${day}${LOG_EXT}`;
      byFile.set(f, [...(byFile.get(f) ?? []), r]);
    }
    for (const [f, group] of byFile) {
      const rel = `${kind}/${f}`;
      const path = join(dir, f);
      const before = existsSync(path) ? statSync(path).size : null;
      this.undo.push(() => (before === null ? rmSync(path, { force: true }) : truncateSync(path, before)));
      const size = appendLines(path, group.map((r) => JSON.stringify(r)));
      for (const r of group) this.indexLogLine(kind, rel, JSON.stringify(r));
      this.index.setLogIndexed(rel, size);
    }
  }

  private async rebuildLocked(): Promise<void> {
    const yaml = await loadYaml();
    this.index.clear();
    this.removeTempFiles();
    for (const file of this.engramFiles().sort()) {
      const path = join(this.engramsDir, file);
      this.indexFile(file, path, stampOf(path), yaml);
    }
    if (existsSync(this.quarantineDir)) {
      for (const f of readdirSync(this.quarantineDir)) {
        const id = f.split(ENGRAM_EXT)[0]!;
        this.bumpCounter(id);
      }
    }
    this.syncLogsLocked('episodes');
    this.syncLogsLocked('events');
    this.index.setMeta('dir_mtime', this.dirMtime());
    this.index.setMeta('full_scan_at', String(Date.now()));
  }
}

function stampOf(path: string): FileStamp {
  const st = statSync(path);
  return { mtime: st.mtimeMs, size: st.size };
}

function countEntries(dir: string, ext = ''): number {
  return existsSync(dir) ? readdirSync(dir).filter((f) => !f.startsWith('.') && f.endsWith(ext)).length : 0;
}

const DISK_FULL = 'its disk is full';

/** Why a store folder cannot be written here (a read-only mount, no permission), or undefined. */
function unwritable(root: string): string | undefined {
  if (!existsSync(root)) return undefined;
  try {
    accessSync(root, constants.W_OK);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EROFS' ? 'a read-only file system' : 'no permission to write it';
  }
}

/**
 * Creates a folder and its missing parents one level at a time. (mkdirSync's recursive mode
 * loops for ever where mkdir answers ENOENT for a parent that exists, as in /proc.)
 */
function makeDirs(dir: string): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDirs(parent);
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new SvcError('storage', `cannot create the folder ${dir}: ${(err as Error).message}`);
  }
}
