import type { EngramDoc } from '../model/engram-types.js';
import { boundSources } from '../model/sources.js';
import { parseEngramYaml, stringifyEngram } from './engram-yaml.js';
import { committedLog, LOG_PATH, lines, unionLines } from './sync-logs.js';
import { conflictRecordPath, conflictRecordText, type ConflictRecord } from './sync-conflicts.js';

// The merge of a sync, as a plan: given each file that the remote changed since the common
// base (its base, local and remote content), what to write to the working tree, what to stage
// for the merge commit, and what the user must hear about. No git and no disk here, so every
// rule is tested on its own (engine/test/sync-merge.test.ts); git-sync.ts applies the plan.
//
// Rules, file by file (never a text merge, never conflict markers):
//   - changed on one side only: that side;
//   - the JSON-lines logs: the union of both sides' lines;
//   - an engram changed on both sides (even to the very same bytes): field by field. Counters add each side's increments
//     (feedback, usage, reference and recurrence counts, activation frequency), timestamps and
//     strengths take the later or larger value, lists (tags, sources, episode ids, relations)
//     take the union. Any other field both sides changed differently is a conflict: the
//     engram keeps this machine's value (with everything else merged), and a conflict record
//     in conflicts/ keeps the other machine's. The record is committed like any file, so both
//     machines see it (`svc conflicts`, `svc status`, the browser) and either can resolve it;
//   - any other file changed on both sides (or added on both): this machine's version stays and
//     the other one goes into a conflict record;
//   - deleted on one side and changed on the other: the changed version stays, reported.
// Engrams of scope `local` never enter the merge commit.

export type FileBytes = Buffer;

export interface MergeEntry {
  path: string;
  base: FileBytes | null;
  /** The working tree's file (null: absent here). */
  local: FileBytes | null;
  remote: FileBytes | null;
}

export interface MergeContext {
  /** Engrams of scope local (their lines and files stay on this machine). */
  localIds: ReadonlySet<string>;
  /** The remote commit being merged (short form in records). */
  remoteCommit: string;
  now: Date;
  /** This machine (its store prefix), named in conflict records. */
  machine: string;
}

export interface SyncConflict {
  /** Path in the store, e.g. engrams/ENG-KQ7M-2026-1122-001.yaml */
  path: string;
  engram_id?: string;
  kind: 'edited-on-both' | 'added-on-both' | 'deleted-remotely' | 'deleted-locally';
  /** What svc did, in a sentence. */
  resolution: string;
  /** For engrams: the fields both sides changed differently. */
  fields?: string[];
  /** The conflict record (conflicts/...) holding the other version, when there is one. */
  record?: string;
}

/** One index entry of the merge commit: the blob for a path, or its removal. */
export type StagedEntry = { path: string; data: FileBytes } | { path: string; remove: true };

export interface MergePlan {
  /** Working-tree files to write (durably). */
  write: Array<{ path: string; data: FileBytes }>;
  /** Working-tree files to delete. */
  remove: string[];
  stage: StagedEntry[];
  pulled: { files: number; engrams: number; removed: number };
  merged_logs: string[];
  merged_engrams: string[];
  conflicts: SyncConflict[];
  /** Every path now holds exactly the remote blob (a fast-forward is possible). */
  tookRemote: boolean;
}

export const ENGRAM_PATH = /^engrams\/([^/]+)\.yaml$/;
/** Derived or machine-local files (the store's .gitignore lists them too): never committed, never taken. */
export const MACHINE_LOCAL =
  /^(index\.db|local\.yaml$|pack-keys\.yaml$|models\/|quarantine\/|backups\/|bin\/|logs\/|remote\/)|(^|\/)\.tmp-/;

const same = (a: FileBytes | null, b: FileBytes | null): boolean => (a === null || b === null ? a === b : a.equals(b));
const text = (b: FileBytes): string => b.toString('utf8');

/**
 * The scope an engram file declares, or undefined when it cannot be read. svc writes `scope:`
 * as a plain top-level line (read without parsing: a sync looks at thousands of files);
 * anything else is parsed.
 */
export function scopeOfText(source: string): string | undefined {
  const plain = /^scope:[ \t]*([A-Za-z0-9][A-Za-z0-9:/._@+-]*)[ \t]*$/m.exec(source);
  if (plain) return plain[1];
  const r = parseEngramYaml(source);
  return r.ok ? r.engram.scope : undefined;
}

export function planMerge(entries: MergeEntry[], ctx: MergeContext): MergePlan {
  const plan: MergePlan = {
    write: [],
    remove: [],
    stage: [],
    pulled: { files: 0, engrams: 0, removed: 0 },
    merged_logs: [],
    merged_engrams: [],
    conflicts: [],
    tookRemote: true,
  };
  const isLocalEngram = (path: string, data: FileBytes | null): boolean => {
    const id = ENGRAM_PATH.exec(path)?.[1];
    return id !== undefined && (ctx.localIds.has(id) || (data !== null && scopeOfText(text(data)) === 'local'));
  };
  const stage = (path: string, data: FileBytes | null): void => {
    if (data === null || isLocalEngram(path, data)) plan.stage.push({ path, remove: true });
    else plan.stage.push({ path, data: LOG_PATH.test(path) ? Buffer.from(committedLog(path, text(data), ctx.localIds)) : data });
  };
  const take = (path: string, data: FileBytes | null): void => {
    plan.pulled.files += 1;
    if (ENGRAM_PATH.test(path)) plan.pulled.engrams += 1;
    if (data === null) {
      plan.pulled.removed += 1;
      plan.remove.push(path);
    } else plan.write.push({ path, data });
    stage(path, data);
  };
  const record = (r: ConflictRecord): string => {
    const path = conflictRecordPath(r);
    const data = Buffer.from(conflictRecordText(r));
    plan.write.push({ path, data });
    plan.stage.push({ path, data });
    return path;
  };

  for (const c of entries) {
    if (MACHINE_LOCAL.test(c.path)) {
      // Another machine's local.yaml (its id prefix!), index or models: never taken.
      plan.tookRemote = false;
      continue;
    }
    const engramId = ENGRAM_PATH.exec(c.path)?.[1];

    if (LOG_PATH.test(c.path)) {
      if (c.remote === null) {
        plan.tookRemote = false; // deleted remotely: an append-only log is kept
        continue;
      }
      const mine = c.local === null ? '' : text(c.local);
      const merged = unionLines(mine, text(c.remote));
      if (merged !== mine) plan.write.push({ path: c.path, data: Buffer.from(merged) });
      const localLines = new Set(lines(mine));
      const remoteLines = new Set(lines(text(c.remote)));
      const remoteAdded = [...remoteLines].some((l) => !localLines.has(l));
      const localAdded = [...localLines].some((l) => !remoteLines.has(l));
      if (remoteAdded && localAdded) plan.merged_logs.push(c.path);
      else if (remoteAdded) plan.pulled.files += 1;
      const committed = Buffer.from(committedLog(c.path, merged, ctx.localIds));
      plan.stage.push({ path: c.path, data: committed });
      if (!committed.equals(c.remote)) plan.tookRemote = false;
      continue;
    }

    // Already the same here. Not so for an engram both sides changed alike: each side's counter
    // increments still add up (two machines giving one engram the same feedback at once).
    const bothChangedEngram = engramId !== undefined && c.base !== null && c.local !== null && !same(c.local, c.base);
    if (same(c.local, c.remote) && !bothChangedEngram) {
      stage(c.path, c.remote);
      continue;
    }
    if (same(c.local, c.base)) {
      take(c.path, c.remote); // unchanged here: the remote side
      continue;
    }
    plan.tookRemote = false;
    if (same(c.remote, c.base)) {
      stage(c.path, c.local); // unchanged there: this side
      continue;
    }

    // Changed on both sides.
    if (c.remote === null) {
      stage(c.path, c.local);
      plan.conflicts.push({
        path: c.path,
        ...(engramId ? { engram_id: engramId } : {}),
        kind: 'deleted-remotely',
        resolution: 'deleted on another machine, changed here: kept the local version',
      });
      continue;
    }
    if (c.local === null) {
      take(c.path, c.remote);
      plan.conflicts.push({
        path: c.path,
        ...(engramId ? { engram_id: engramId } : {}),
        kind: 'deleted-locally',
        resolution: 'deleted here, changed on another machine: restored the remote version',
      });
      continue;
    }
    const kind = c.base ? 'edited-on-both' : 'added-on-both';
    const common = {
      kind,
      path: c.path,
      detected_at: ctx.now.toISOString(),
      detected_on: ctx.machine,
      other_commit: ctx.remoteCommit.slice(0, 7),
    } as const;
    if (engramId) {
      const merged = mergeEngramFiles(c.base, c.local, c.remote);
      if (merged) {
        plan.write.push({ path: c.path, data: merged.data });
        stage(c.path, merged.data);
        if (merged.clash.length === 0) {
          plan.merged_engrams.push(engramId);
          continue;
        }
        const path = record({
          ...common,
          engram_id: engramId,
          fields: merged.clash,
          kept: merged.kept,
          other: merged.other,
          other_version: text(c.remote),
        });
        plan.conflicts.push({
          path: c.path,
          engram_id: engramId,
          kind,
          fields: merged.clash,
          record: path,
          resolution: `kept this machine's ${merged.clash.join(', ')} (everything else merged); the other machine's is in ${path}: svc conflicts resolve ${engramId} picks one`,
        });
        continue;
      }
    }
    // Not an engram, or a file that does not read as one: keep ours, record theirs whole.
    stage(c.path, c.local);
    const path = record({
      ...common,
      ...(engramId ? { engram_id: engramId } : {}),
      other_version: c.remote.toString('base64'),
      encoding: 'base64',
    });
    plan.conflicts.push({
      path: c.path,
      ...(engramId ? { engram_id: engramId } : {}),
      kind,
      record: path,
      resolution: `kept this machine's version; the other machine's is in ${path}`,
    });
  }
  return plan;
}

/** A three-way merge of engram files; null when one side does not read as an engram. */
function mergeEngramFiles(
  base: FileBytes | null,
  local: FileBytes,
  remote: FileBytes,
): { data: FileBytes; clash: string[]; kept: Record<string, unknown>; other: Record<string, unknown> } | null {
  const parse = (b: FileBytes | null): EngramDoc | null => {
    if (b === null) return null;
    const r = parseEngramYaml(text(b));
    return r.ok ? r.engram : null;
  };
  const l = parse(local);
  const r = parse(remote);
  if (!l || !r) return null;
  const b = parse(base) ?? ({} as EngramDoc);
  const { doc, clash } = mergeEngramDocs(b, l, r);
  const data = Buffer.from(stringifyEngram(doc));
  if (!parseEngramYaml(text(data)).ok) return null;
  const pick = (d: EngramDoc) => Object.fromEntries(clash.map((k) => [k, d[k] ?? null]));
  return { data, clash, kept: pick(doc), other: pick(r) };
}

/** Counters that add each side's increments. */
const ADD = new Set([
  'reference_count',
  'recurrence_count',
  'sources_omitted',
  'feedback_signals.positive',
  'feedback_signals.negative',
  'feedback_signals.neutral',
  'usage.injections',
  'usage.hits',
  'usage.misses',
  'activation.frequency',
]);
/** Values where the later or larger one wins. */
const MAX = new Set([
  'activation.last_accessed',
  'activation.retrieval_strength',
  'activation.storage_strength',
  'usage.last_hit_at',
  'temporal.ingested_at',
]);
/** Lists whose merge is the union of both sides. */
const UNION = new Set([
  'tags',
  'sources',
  'episode_ids',
  'contraindications',
  'source_patterns',
  'associations',
  'knowledge_anchors',
  'entities',
]);
/** Objects merged key by key with these rules. */
const NESTED = new Set(['feedback_signals', 'usage', 'activation', 'relations', 'temporal']);
/** What follows the statement: whichever statement stays brings these along. */
const WITH_STATEMENT = ['content_hash', 'polarity', 'engram_version', 'previous_version_ref'];

const json = (v: unknown): string => JSON.stringify(v) ?? 'undefined';
const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Merges two versions of an engram against their common base. The result holds every merged
 * field and, for each field both changed differently (`clash`), the local value.
 */
export function mergeEngramDocs(base: EngramDoc, local: EngramDoc, remote: EngramDoc): { doc: EngramDoc; clash: string[] } {
  const clash: string[] = [];
  const merged: Record<string, unknown> = {};
  const statementClash =
    json(local.statement) !== json(remote.statement) &&
    json(local.statement) !== json(base.statement) &&
    json(remote.statement) !== json(base.statement);
  const keys = [...new Set([...Object.keys(local), ...Object.keys(remote), ...Object.keys(base)])];
  for (const k of keys) {
    if (WITH_STATEMENT.includes(k)) {
      // Follows the statement that stays; merged normally when the statements did not clash.
      if (statementClash) {
        if (local[k] !== undefined) merged[k] = local[k];
        continue;
      }
      if (k === 'engram_version' && json(local[k]) !== json(remote[k])) {
        merged[k] = Math.max(Number(local[k] ?? 1), Number(remote[k] ?? 1));
        continue;
      }
    }
    const v = merge3(base[k], local[k], remote[k], k, clash);
    if (v !== undefined) merged[k] = v;
  }
  // Keep the local key order, then keys only the remote has.
  const ordered: Record<string, unknown> = {};
  for (const k of [...Object.keys(local), ...Object.keys(remote)]) if (k in merged && !(k in ordered)) ordered[k] = merged[k];
  boundSources(ordered as EngramDoc);
  return { doc: ordered as EngramDoc, clash: [...new Set(clash)] };
}

function merge3(b: unknown, l: unknown, r: unknown, path: string, clash: string[]): unknown {
  // Counters (and the objects holding them) first: two machines that each counted one vote both
  // hold 1, and mean 2.
  if (ADD.has(path) && typeof l === 'number' && typeof r === 'number') return l + r - (typeof b === 'number' ? b : 0);
  if (NESTED.has(path) && isPlain(l) && isPlain(r)) {
    const bo = isPlain(b) ? b : {};
    const out: Record<string, unknown> = {};
    for (const k of new Set([...Object.keys(l), ...Object.keys(r)])) {
      const v = merge3(bo[k], l[k], r[k], `${path}.${k}`, clash);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }
  if (json(l) === json(r)) return l;
  if (json(l) === json(b)) return r;
  if (json(r) === json(b)) return l;
  if (MAX.has(path) && l !== undefined && r !== undefined) {
    if (typeof l === 'number' && typeof r === 'number') return Math.max(l, r);
    return String(l) > String(r) ? l : r; // ISO 8601 timestamps order as text
  }
  if ((UNION.has(path) || path.startsWith('relations.')) && Array.isArray(l) && Array.isArray(r)) {
    const seen = new Set(l.map(json));
    return [...l, ...r.filter((x) => !seen.has(json(x)) && (seen.add(json(x)), true))];
  }
  clash.push(path.split('.')[0]!);
  return l;
}
