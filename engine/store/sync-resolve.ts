import { existsSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { EngramDoc } from '../model/engram-types.js';
import type { LocalBackend } from './local-backend.js';
import { fsyncDir, writeFileDurable } from './durable-write.js';
import { otherVersion, readConflicts, type StoredConflict } from './sync-conflicts.js';
import { invalid, notFound } from '../errors.js';
import type { OpContext } from '../ops/context.js';
import { changeStatement } from '../ops/edit.js';

// Sync conflicts (see engine/store/sync-conflicts.ts): listing them, and resolving one by
// keeping what the merge kept or taking the other machine's version. Resolving writes through
// the store (history recorded, index updated) and deletes the record; both reach the other
// machines at their next sync.

export type ConflictChoice = 'current' | 'other';

export function listConflicts(store: LocalBackend): { conflicts: StoredConflict[]; problems: string[] } {
  return readConflicts(store.root);
}

/** A record by its id, or the one record of an engram; several records of one engram must be named. */
export function findConflict(store: LocalBackend, target: string): StoredConflict {
  const { conflicts } = readConflicts(store.root);
  const exact = conflicts.find((c) => c.id === target);
  if (exact) return exact;
  const ofEngram = conflicts.filter((c) => c.engram_id === target);
  if (ofEngram.length === 1) return ofEngram[0]!;
  if (ofEngram.length > 1)
    throw invalid(`${target} has ${ofEngram.length} open conflicts: name one (${ofEngram.map((c) => c.id).join(', ')})`);
  throw notFound(`no open sync conflict ${target} (svc conflicts lists them)`);
}

export interface ResolveResult {
  id: string;
  path: string;
  kept: ConflictChoice;
  /** The engram as it stands after the choice, for engram conflicts. */
  engram?: EngramDoc;
}

export async function resolveConflict(store: LocalBackend, target: string, keep: ConflictChoice, ctx: OpContext): Promise<ResolveResult> {
  const record = findConflict(store, target);
  let engram: EngramDoc | undefined;
  if (keep === 'other') {
    if (record.engram_id && record.fields && record.other) {
      const id = record.engram_id;
      const other = record.other;
      engram = await store.write(async (tx) => {
        const current = await tx.get(id);
        if (!current) throw notFound(`engram ${id} of conflict ${record.id} no longer exists`);
        const next: EngramDoc = structuredClone(current);
        const now = ctx.now().toISOString();
        for (const field of record.fields!) {
          const value = other[field];
          if (field === 'statement' && typeof value === 'string') changeStatement(next, value, now);
          else if (value === null || value === undefined) delete (next as Record<string, unknown>)[field];
          else (next as Record<string, unknown>)[field] = value;
        }
        await tx.put(next, {
          action: 'updated',
          at: now,
          session: ctx.sessionId ?? undefined,
          details: { sync_conflict: record.id, kept: 'other' },
        });
        return next;
      });
    } else {
      // A whole file (or an engram file that did not read as one): the other version replaces it.
      writeFileDurable(join(store.root, record.path), otherVersion(record), { mkdir: true });
    }
  }
  if (existsSync(record.file)) {
    unlinkSync(record.file);
    fsyncDir(dirname(record.file));
  }
  return { id: record.id, path: record.path, kept: keep, ...(engram ? { engram } : {}) };
}
