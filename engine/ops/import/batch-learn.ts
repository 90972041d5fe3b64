import type { EngramStore, EngramWriter, SearchIndex } from '../../backend.js';
import type { EventNote } from '../../model/records.js';
import type { EngramDoc, Polarity } from '../../model/engram-types.js';
import { SvcError } from '../../errors.js';
import { contentHash } from '../../model/content-hash.js';
import type { OpContext } from '../context.js';
import { learn, type LearnInput } from '../learn.js';

// Learns many statements through learn() itself (secret guard, validation, content-hash dedup,
// recurrence counts), but many per write transaction: learn() takes a backend and opens one
// `backend.write` per call, so each call here gets a stand-in backend whose `write` runs inside
// the batch's open transaction. Two things are changed on the way to the store, by intercepting
// the stand-in transaction's `put`:
//   - onDuplicate 'skip' (import): learn's same-scope dedup write (reference_count + 1, a new
//     `sources` entry) and its revival of a retired twin are dropped, so importing a file twice
//     changes nothing; the item is reported as a duplicate (or a conflict) instead;
//   - a created engram can carry what learn() does not take: the polarity the extractor found,
//     the time the source system learned it (temporal.learned_at), and event details.
// Dry run: the stand-in transaction records its puts in memory and never touches the store.
//
// Lookups by hash read the index (committed state) plus this run's own pending engrams, instead
// of LocalStore's transaction `findByHash`, which hashes every pending engram on each call
// (quadratic over a batch of 500).

export interface BatchItem {
  input: LearnInput;
  /** Sets the created engram's polarity (learn() infers it from the wording otherwise). */
  polarity?: Polarity | null;
  /** When the source system learned it (ISO 8601): temporal.learned_at of a created engram. */
  learnedAt?: string;
  /** Recorded in the history event of a created engram. */
  details?: Record<string, unknown>;
}

export type BatchOutcome =
  /** A new engram (in a dry run: one would be created; its id is then a placeholder). */
  | { action: 'created'; engram: EngramDoc; warnings: string[] }
  /** Same content, same scope, same type, live: nothing written (skip) or reference_count bumped. */
  | { action: 'duplicate'; existing: EngramDoc; warnings: string[]; withinRun: boolean }
  /** Same content at the scope, but retired there (not revived) or of another type: nothing written. */
  | { action: 'conflict'; existing: EngramDoc; reason: string; warnings: string[] }
  /** learn() refused it (validation); nothing written. */
  | { action: 'error'; reason: string };

export interface BatchOptions {
  /** 'skip': write nothing for duplicates (import); 'reference': learn's own dedup write (ingest). */
  onDuplicate: 'skip' | 'reference';
  dryRun?: boolean;
  /** Items per write transaction (default 500). */
  batchSize?: number;
  /** Called after each item, in order. */
  onOutcome?: (index: number, outcome: BatchOutcome) => void;
}

export const DRY_RUN_ID_PREFIX = 'ENG-DRYRUN-';

export async function learnBatch(
  backend: EngramStore & SearchIndex,
  items: BatchItem[],
  ctx: OpContext,
  opts: BatchOptions,
): Promise<BatchOutcome[]> {
  const size = Math.max(1, opts.batchSize ?? 500);
  const outcomes: BatchOutcome[] = [];
  // This run's engrams not yet visible in the index (cleared when a batch commits).
  const pending = new Map<string, EngramDoc>();
  const pendingByHash = new Map<string, Set<string>>();
  // Ids created by this run, to tell an in-file duplicate from one already in the store.
  const createdHere = new Set<string>();
  let dryIds = 0;

  // learn() does not touch an engram after putting it; lookups hand out copies.
  const remember = (doc: EngramDoc): void => {
    pending.set(doc.id, doc);
    const hash = doc.content_hash ?? contentHash(doc.statement);
    let ids = pendingByHash.get(hash);
    if (!ids) pendingByHash.set(hash, (ids = new Set()));
    ids.add(doc.id);
  };

  const runBatch = async (tx: EngramWriter | null, slice: BatchItem[], offset: number): Promise<void> => {
    for (const [i, item] of slice.entries()) {
      let dropped: { action: string; doc: EngramDoc } | undefined;
      const writer: EngramWriter = {
        get: async (id) => (pending.has(id) ? structuredClone(pending.get(id)!) : tx ? tx.get(id) : backend.get(id)),
        findByHash: async (hash) => {
          const found = new Map((await backend.findByHash(hash)).map((e) => [e.id, e]));
          for (const id of pendingByHash.get(hash) ?? []) found.set(id, structuredClone(pending.get(id)!));
          return [...found.values()];
        },
        allocateId: async (kind, now, scope) =>
          tx ? tx.allocateId(kind, now, scope) : `${DRY_RUN_ID_PREFIX}${String(++dryIds).padStart(6, '0')}`,
        put: async (engram: EngramDoc, note?: EventNote) => {
          const action = note?.action;
          if ((action === 'deduplicated' || action === 'reactivated') && (opts.onDuplicate === 'skip' || action === 'reactivated')) {
            dropped = { action, doc: engram };
            return;
          }
          if (action === 'deduplicated' && engram.type !== item.input.type && item.input.type !== undefined) {
            // Same words, other kind of knowledge: do not merge them silently.
            dropped = { action: 'type-conflict', doc: engram };
            return;
          }
          const doc = action === 'created' ? { ...engram } : engram;
          let finalNote = note;
          if (action === 'created') {
            if (item.polarity !== undefined) doc.polarity = item.polarity;
            if (item.learnedAt)
              doc.temporal = {
                ...doc.temporal,
                learned_at: item.learnedAt,
                ingested_at: doc.temporal?.learned_at ?? ctx.now().toISOString(),
              };
            if (item.details) finalNote = { ...note, details: { ...note?.details, ...item.details } };
            createdHere.add(doc.id);
          }
          remember(doc);
          if (tx) await tx.put(doc, finalNote);
        },
      };
      const stand = standIn(backend, writer);
      let outcome: BatchOutcome;
      try {
        const result = await learn(stand, item.input, ctx);
        const d = dropped as { action: string; doc: EngramDoc } | undefined;
        if (d?.action === 'reactivated') {
          outcome = {
            action: 'conflict',
            existing: d.doc,
            reason: `the same statement was retired at scope ${d.doc.scope} (${d.doc.id}); not revived`,
            warnings: result.warnings,
          };
        } else if (
          d?.action === 'type-conflict' ||
          (result.action === 'deduplicated' && item.input.type && result.engram.type !== item.input.type)
        ) {
          const existing = d?.doc ?? result.engram;
          outcome = {
            action: 'conflict',
            existing,
            reason: `the same statement is stored at scope ${existing.scope} as ${existing.id} with type ${existing.type}, not ${item.input.type}`,
            warnings: result.warnings,
          };
        } else if (result.action === 'created') {
          outcome = { action: 'created', engram: pending.get(result.engram.id) ?? result.engram, warnings: result.warnings };
        } else {
          const existing = d?.doc ?? result.engram;
          outcome = { action: 'duplicate', existing, warnings: result.warnings, withinRun: createdHere.has(existing.id) };
        }
      } catch (error) {
        if (!(error instanceof SvcError) || error.kind !== 'invalid') throw error;
        outcome = { action: 'error', reason: error.details.length ? `${error.message}: ${error.details.join('; ')}` : error.message };
      }
      outcomes.push(outcome);
      opts.onOutcome?.(offset + i, outcome);
    }
  };

  for (let start = 0; start < items.length; start += size) {
    const slice = items.slice(start, start + size);
    if (opts.dryRun) {
      await runBatch(null, slice, start);
    } else {
      await backend.write((tx) => runBatch(tx, slice, start));
      // Committed: the index now answers for these engrams.
      pending.clear();
      pendingByHash.clear();
    }
  }
  return outcomes;
}

/** The backend learn() sees: its `write` runs in the batch's transaction (or the dry-run recorder). */
function standIn(backend: EngramStore & SearchIndex, writer: EngramWriter): EngramStore & SearchIndex {
  return new Proxy(backend, {
    get(target, prop, receiver) {
      if (prop === 'write') return <T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T> => fn(writer);
      if (prop === 'findByHash') return writer.findByHash;
      if (prop === 'get') return writer.get;
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
