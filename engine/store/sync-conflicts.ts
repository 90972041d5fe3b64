import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../errors.js';
import { byCodeUnit } from '../text.js';
import { sha256Hex } from '../text-hash.js';
import { parseYaml, stringifyYaml } from './yaml-codec.js';

// Sync conflict records: when two machines changed the same thing differently, the version a
// merge did not keep lives in conflicts/<name>.yaml, a file of the store like any other: it is
// committed and synced, so every machine sees it and any can resolve it (engine/ops/conflicts.ts
// applies the choice and deletes the record; the deletion syncs too). Nothing a user wrote is
// lost to a merge.

export const CONFLICTS_DIR = 'conflicts';

export interface ConflictRecord {
  kind: 'edited-on-both' | 'added-on-both';
  /** The file in conflict, e.g. engrams/ENG-KQ7M-2026-1122-001.yaml */
  path: string;
  engram_id?: string;
  /** For engrams: the fields both machines changed differently. */
  fields?: string[];
  /** Those fields as the merge kept them. */
  kept?: Record<string, unknown>;
  /** Those fields as the other machine had them. */
  other?: Record<string, unknown>;
  /** The other machine's whole file: text, or base64 when `encoding` says so. */
  other_version: string;
  encoding?: 'base64';
  detected_at: string;
  /** The machine (store prefix) whose merge found it. */
  detected_on: string;
  other_commit: string;
}

export interface StoredConflict extends ConflictRecord {
  /** The record's name (its file name without .yaml): what `svc conflicts resolve` takes. */
  id: string;
  file: string;
}

/** conflicts/<engram id or flattened path>-<8 hex of the other version>.yaml */
export function conflictRecordPath(r: ConflictRecord): string {
  const subject = r.engram_id ?? r.path.replace(/[^A-Za-z0-9._-]+/g, '_');
  const tag = sha256Hex(r.other_version).slice(0, 8);
  return `${CONFLICTS_DIR}/${subject}-${tag}.yaml`;
}

export function conflictRecordText(r: ConflictRecord): string {
  return stringifyYaml({ ...r });
}

/** The other machine's version of the file, as bytes. */
export function otherVersion(r: ConflictRecord): Buffer {
  return Buffer.from(r.other_version, r.encoding === 'base64' ? 'base64' : 'utf8');
}

/** Every conflict record of a store, oldest first; unreadable files are named in `problems`. */
export function readConflicts(root: string): { conflicts: StoredConflict[]; problems: string[] } {
  const dir = join(root, CONFLICTS_DIR);
  const conflicts: StoredConflict[] = [];
  const problems: string[] = [];
  if (!existsSync(dir)) return { conflicts, problems };
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.yaml'))
    .sort()) {
    const file = join(dir, name);
    try {
      const r = parseYaml(readFileSync(file, 'utf8')) as ConflictRecord;
      if (typeof r?.path !== 'string' || typeof r.other_version !== 'string') throw new SvcError('storage', 'not a conflict record');
      conflicts.push({ ...r, id: name.slice(0, -'.yaml'.length), file });
    } catch (err) {
      problems.push(`${file}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  conflicts.sort((a, b) => byCodeUnit(a.detected_at, b.detected_at) || byCodeUnit(a.id, b.id));
  return { conflicts, problems };
}
