// Tension records: the types of a tension (its two sides, what a scan found, the stored record
// and its status) and the store that keeps them as YAML files under `<store>/tensions/`. Kept
// apart from scanning and the lifecycle (tensions.ts), which read and write records through it.

import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramBackend, EngramWriter } from '../backend.js';
import { idDay } from '../model/ids.js';
import { createFileDurable, fsyncDir, TEMP_PREFIX, writeFileDurable } from './durable-write.js';
import { invalid, SvcError } from '../errors.js';
import { parseYaml, stringifyYaml } from './yaml-codec.js';

export const TENSION_STATUSES = ['open', 'confirmed', 'dismissed', 'resolved'] as const;
export type TensionStatus = (typeof TENSION_STATUSES)[number];

export const TENSION_ID = /^T-\d{4}-\d{4}-\d{3,}$/;

export interface TensionSide {
  id: string;
  statement: string;
  scope: string;
  learned_at?: string;
}

/** What a scan found about one pair, before (or without) a record. */
export interface TensionFinding {
  engrams: [TensionSide, TensionSide];
  /** The confidence compared with the threshold: the judge's, discounted when asked. */
  confidence: number;
  judge_confidence: number;
  explanation: string;
  /** Token Jaccard of the two statements' content words, 0..1. */
  overlap: number;
  days_apart: number;
  temporal_discount: boolean;
  model: string;
}

export interface TensionRecord extends TensionFinding {
  id: string;
  status: TensionStatus;
  detected_at: string;
  updated_at: string;
  confirmed_at?: string;
  dismissed_at?: string;
  resolved_at?: string;
  winner?: string;
  loser?: string;
  reason?: string;
}

/** Order-free key of a pair of engram ids. */
export const pairKey = (a: string, b: string): string => (a < b ? `${a}|${b}` : `${b}|${a}`);

// ------------------------------------------------------------------------------ record store

/** Tension records of one store, read and written under the backend's write lock. */
export interface TensionStore {
  readonly backend: EngramBackend;
  /** Every readable record; unreadable files are named in `warnings`, never dropped silently. */
  list(): Promise<{ records: TensionRecord[]; warnings: string[] }>;
  get(id: string): Promise<TensionRecord | null>;
  /** Runs `fn` holding the store's write lock; engram writes through `tx.engrams` commit with it. */
  write<T>(fn: (tx: TensionTx) => Promise<T>): Promise<T>;
}

export interface TensionTx {
  engrams: EngramWriter;
  list(): TensionRecord[];
  get(id: string): TensionRecord | null;
  /** Allocates the next id of the day and writes the record. */
  create(finding: TensionFinding, now: Date): TensionRecord;
  update(record: TensionRecord): void;
  remove(id: string): void;
}

const RECORD_EXT = '.yaml';
/** The last id handed out, so a purged record's id is not handed out again. */
const LAST_ID_FILE = '.last-id';

/** Records as YAML files in `<root>/tensions/`, one per record. */
export class LocalTensionStore implements TensionStore {
  readonly dir: string;

  constructor(
    readonly backend: EngramBackend,
    root: string,
  ) {
    this.dir = join(root, 'tensions');
  }

  async list(): Promise<{ records: TensionRecord[]; warnings: string[] }> {
    return this.readAll();
  }

  async get(id: string): Promise<TensionRecord | null> {
    checkTensionId(id);
    const path = join(this.dir, id + RECORD_EXT);
    if (!existsSync(path)) return null;
    const r = readRecord(path, id);
    if ('error' in r) throw new SvcError('storage', r.error);
    return r.record;
  }

  async write<T>(fn: (tx: TensionTx) => Promise<T>): Promise<T> {
    const text = (r: TensionRecord): string => stringifyYaml({ ...r });
    return this.backend.write(async (engrams) => {
      mkdirSync(this.dir, { recursive: true });
      let cache: TensionRecord[] | undefined;
      const all = (): TensionRecord[] => (cache ??= this.readAll().records);
      const tx: TensionTx = {
        engrams,
        list: () => [...all()],
        get: (id) => all().find((r) => r.id === id) ?? null,
        create: (finding, now) => {
          const day = idDay(now);
          const stem = `T-${day}-`;
          // The next number after every record of the day and the last id handed out (its record
          // may have been purged since: an id is never reused).
          const seqOf = (name: string): number =>
            name.startsWith(stem) ? Number(name.slice(stem.length).replace(RECORD_EXT, '')) || 0 : 0;
          let seq = seqOf(this.lastId());
          for (const f of readdirSync(this.dir)) if (f.endsWith(RECORD_EXT)) seq = Math.max(seq, seqOf(f));
          const at = now.toISOString();
          for (;;) {
            seq += 1;
            const id = `${stem}${String(seq).padStart(3, '0')}`;
            const record: TensionRecord = { id, status: 'open', ...finding, detected_at: at, updated_at: at };
            // Exclusive create: an id is never taken twice, even by a writer that ignored the lock.
            if (createFileDurable(join(this.dir, id + RECORD_EXT), text(record))) {
              writeFileDurable(join(this.dir, LAST_ID_FILE), `${id}\n`);
              all().push(record);
              return record;
            }
          }
        },
        update: (record) => {
          checkTensionId(record.id);
          writeFileDurable(join(this.dir, record.id + RECORD_EXT), text(record));
          const list = all();
          const i = list.findIndex((r) => r.id === record.id);
          if (i >= 0) list[i] = record;
          else list.push(record);
        },
        remove: (id) => {
          checkTensionId(id);
          const path = join(this.dir, id + RECORD_EXT);
          if (existsSync(path)) {
            unlinkSync(path);
            fsyncDir(this.dir);
          }
          cache = all().filter((r) => r.id !== id);
        },
      };
      return fn(tx);
    });
  }

  private lastId(): string {
    try {
      return readFileSync(join(this.dir, LAST_ID_FILE), 'utf8').trim();
    } catch {
      return '';
    }
  }

  private readAll(): { records: TensionRecord[]; warnings: string[] } {
    if (!existsSync(this.dir)) return { records: [], warnings: [] };
    const records: TensionRecord[] = [];
    const warnings: string[] = [];
    for (const f of readdirSync(this.dir).sort()) {
      if (!f.endsWith(RECORD_EXT) || f.startsWith(TEMP_PREFIX) || f.startsWith('.')) continue;
      const r = readRecord(join(this.dir, f), f.slice(0, -RECORD_EXT.length));
      if ('error' in r) warnings.push(r.error);
      else records.push(r.record);
    }
    return { records, warnings };
  }
}

function readRecord(path: string, id: string): { record: TensionRecord } | { error: string } {
  let value: unknown;
  try {
    value = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    return { error: `tension record ${path} is unreadable: ${(err as Error).message.split('\n')[0]} (skipped)` };
  }
  const r = value as Partial<TensionRecord> | null;
  const sideOk = (s: unknown): boolean =>
    typeof s === 'object' && s !== null && typeof (s as TensionSide).id === 'string' && typeof (s as TensionSide).statement === 'string';
  if (
    !r ||
    typeof r !== 'object' ||
    r.id !== id ||
    !TENSION_STATUSES.includes(r.status as TensionStatus) ||
    !Array.isArray(r.engrams) ||
    r.engrams.length !== 2 ||
    !r.engrams.every(sideOk)
  ) {
    return { error: `tension record ${path} is not a valid record (needs id ${id}, a status and two engrams; skipped)` };
  }
  return { record: r as TensionRecord };
}

export function checkTensionId(id: string): void {
  if (!TENSION_ID.test(id)) throw invalid(`not a tension id: "${id}" (expected T-YYYY-MMDD-NNN, e.g. T-2026-0101-001)`);
}
