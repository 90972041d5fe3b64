/**
 * Import: migrate memories from another system into svc.
 *
 * Supported sources (`svc import --from <source> --path <file>`, MCP tool `svc_import`):
 *
 *   generic      A file of records in one of three formats, chosen by extension (else sniffed):
 *                  .json            a JSON array of objects (or of plain strings, each a statement),
 *                                   or an object holding such an array under "items", "records",
 *                                   "data", "memories", "results", "engrams" or "rows";
 *                  .jsonl, .ndjson  JSON Lines: one object per line; blank lines are ignored;
 *                  .csv, .tsv       a header row naming the columns, then one record per row.
 *                Without a mapping, each field is read from the column of the same name:
 *                statement (else content, text or memory), type, scope, domain, tags (a list, or
 *                text split on "," or ";"), rationale, source, visibility, status (active or
 *                candidate), learned_at (else created_at; a date, or seconds or milliseconds since
 *                1970) and id (the row's id in the old system, used to name it in the report).
 *                `--mapping <file.json>` changes that:
 *                  {"fields":   {"statement": "body", "domain": "meta.topic", "type": null},
 *                   "defaults": {"type": "procedural", "tags": ["migrated"]}}
 *                `fields` maps an engram field to a source column or dotted path (null: never read
 *                that field); `defaults` fill fields a row leaves blank. type also accepts rule,
 *                prohibition, preference, convention (behavioral), decision (architectural),
 *                definition, term (terminological), procedure, process, steps (procedural).
 *
 *   mem0-json    mem0's memory export: the JSON of `Memory.get_all()`, i.e. {"results": [{"id",
 *                "memory", "hash", "metadata", "created_at", "updated_at", "user_id", ...}]}, or the
 *                bare list of such objects, or a list of mem0 history entries. Each memory becomes
 *                one engram with source "mem0:<id>" and learned_at = created_at; categories become
 *                tags; metadata.memory_type "procedural_memory" becomes type procedural.
 *
 *   mem0-sqlite  mem0's local SQLite history database (default ~/.mem0/history.db; table `history`
 *                of the Python SDK, old or current schema, or `memory_history` of the TypeScript
 *                SDK). Each memory's history is replayed: its latest ADD/UPDATE text is imported;
 *                memories with a DELETE event are skipped.
 *
 * Every row goes through learn() (secret guard, validation, content-hash dedup), 500 rows per
 * write transaction. `--scope` puts every row in that scope; otherwise a row's own scope, else
 * the mapping's default, else the project's (.svc.yaml), else global. Content that looks like a
 * secret aimed at a shared scope is stored in scope "local" instead, and the report lists it
 * under "demoted". `--dry-run` reads and checks everything and writes nothing: the same report.
 *
 * The report counts every row of the input as exactly one of:
 *   imported  a new engram was created (dry run: would be);
 *   skipped   nothing to do: the same statement (after normalizing case, spaces and final
 *             punctuation) is already live in the target scope with the same type, in the store
 *             or earlier in the same file; or the source marks the memory deleted;
 *   conflict  the same statement exists in the target scope but cannot be merged: it was retired
 *             there (import never revives what someone forgot), or it is stored with another type
 *             than the row gives. Nothing is written; the report names the existing engram;
 *   error     the row cannot become an engram: unreadable line, wrong number of CSV fields, no
 *             statement, an invalid type, scope, visibility, status or date. Nothing is written.
 * Every row that was not imported is listed with its position (line number for JSONL and CSV,
 * element number for JSON, memory id for mem0) and the reason. A file that cannot be read as its
 * format at all (not JSON, no list of records, not a SQLite database, no history table) fails as
 * a whole with one error and nothing is written. `svc import` exits 0 when no row is an error,
 * and 1 when any row is (the other rows are still imported and the report is still printed).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { EngramStore, SearchIndex } from '../../backend.js';
import { invalid, SvcError } from '../../errors.js';
import { DEFAULT_SCOPE } from '../../model/scope.js';
import type { OpContext } from '../context.js';
import { learnBatch, type BatchItem, type BatchOutcome } from './batch-learn.js';
import { loadMapping, mapRecord, parseMapping, RowError, statementColumns, toItem, type ImportMapping, type RowValues } from './fields.js';
import { readGeneric } from './generic.js';
import { readMem0Json, readMem0Sqlite } from './mem0.js';

export const IMPORT_SOURCES = ['generic', 'mem0-json', 'mem0-sqlite'] as const;
export type ImportSource = (typeof IMPORT_SOURCES)[number];

export const IMPORT_BATCH_SIZE = 500;

export interface ImportOptions {
  from: string;
  /** The input file. */
  path: string;
  dryRun?: boolean;
  /** Every row goes to this scope. */
  scope?: string;
  /** For generic: a mapping file's path, or the mapping itself (checked like a file's). */
  mapping?: string | ImportMapping;
  /** The project's scope and domain (.svc.yaml), for rows that give none. */
  project?: { scope?: string; domain?: string };
  batchSize?: number;
}

export type RowStatus = 'imported' | 'skipped' | 'conflict' | 'error';

export interface ImportRowReport {
  /** Line number (JSONL, CSV), element number (JSON), memory number (mem0 history). */
  row: number;
  /** The row as a person finds it: "line 7", "item 3", "memory 3f2a...". */
  at: string;
  /** The row's id in the source system, when it has one. */
  id?: string;
  status: Exclude<RowStatus, 'imported'>;
  reason: string;
  /** The engram already holding the statement (skipped duplicates, conflicts). */
  engram?: string;
}

export interface DemotedRow {
  row: number;
  at: string;
  id?: string;
  /** The created engram (absent in a dry run). */
  engram?: string;
  scope: string;
  reason: string;
}

export interface ImportReport {
  from: ImportSource;
  /** generic: json, jsonl, csv or tsv. */
  format?: string;
  path: string;
  dry_run: boolean;
  /** Rows read from the input. */
  total: number;
  imported: number;
  skipped: number;
  conflict: number;
  error: number;
  /** Every row not imported, in input order. */
  rows: ImportRowReport[];
  /** Imported rows moved to a private scope because they look like they hold a secret. */
  demoted: DemotedRow[];
  elapsed_ms: number;
}

/** One input row, read and mapped, before learning. */
interface PreparedRow {
  row: number;
  at: string;
  id?: string;
  item?: BatchItem;
  skip?: string;
  error?: string;
}

function isSource(from: string): from is ImportSource {
  return (IMPORT_SOURCES as readonly string[]).includes(from);
}

function checkInput(path: string): void {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw invalid(
      code === 'ENOENT' ? `the input file ${path} does not exist` : `cannot read the input file ${path}: ${code ?? (err as Error).message}`,
    );
  }
  if (st.isDirectory()) throw invalid(`the input ${path} is a folder, not a file`);
}

/** The input as text: binary data (NUL bytes, invalid UTF-8) and an empty file are not data to import. */
function readText(path: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw invalid(`cannot read the input file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (bytes.includes(0)) throw invalid(`${basename(path)} is not a text file (binary data): import reads JSON, JSONL or CSV text`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalid(`${basename(path)} is not UTF-8 text: import reads JSON, JSONL or CSV encoded in UTF-8`);
  }
  if (text.trim() === '') throw invalid(`${basename(path)} is empty: nothing to import`);
  return text;
}

function resolveMapping(mapping: ImportOptions['mapping']): ImportMapping | undefined {
  if (mapping === undefined) return undefined;
  if (typeof mapping === 'string') return loadMapping(mapping);
  return parseMapping(mapping);
}

/** Reads the input into rows, each with a learn input, a reason to skip or an error. */
async function prepare(opts: ImportOptions & { from: ImportSource }): Promise<{ rows: PreparedRow[]; format?: string }> {
  const path = opts.path;
  checkInput(path);
  const itemOpts = {
    forceScope: opts.scope,
    fallbackScope: opts.project?.scope,
    fallbackDomain: opts.project?.domain,
  };
  const build = (row: number, at: string, values: RowValues | undefined, id?: string): PreparedRow => {
    const details = { via: 'import', from: opts.from, file: basename(path), at, ...(id ? { source_id: id } : {}) };
    try {
      return { row, at, id, item: toItem(values ?? {}, { ...itemOpts, details }) };
    } catch (err) {
      if (!(err instanceof RowError)) throw err;
      return { row, at, id, error: err.message };
    }
  };

  if (opts.from === 'generic') {
    const mapping = resolveMapping(opts.mapping);
    const { format, records, columns } = await readGeneric(path, readText(path));
    if (columns && records.length > 0) {
      const wanted = statementColumns(mapping);
      if (!wanted.some((c) => columns.includes(c))) {
        throw invalid(
          `${basename(path)}: no statement column in the header (looked for ${wanted.map((c) => `"${c}"`).join(', ')}; the header has ${columns.map((c) => `"${c}"`).join(', ')}); name it with --mapping {"fields": {"statement": "<column>"}}`,
        );
      }
    }
    const rows = records.map((r): PreparedRow => {
      if (r.error !== undefined || !r.record) return { row: r.row, at: r.at, error: r.error ?? 'unreadable' };
      const values = mapRecord(r.record, mapping);
      values.source ??= `import:${basename(path)}`;
      const id = values.id === undefined ? undefined : String(values.id);
      return build(r.row, id ? `${r.at} (id ${id})` : r.at, values, id);
    });
    return { rows, format };
  }

  if (opts.mapping !== undefined) throw invalid(`--mapping applies only to --from generic (not ${opts.from})`);
  const mem0 = opts.from === 'mem0-json' ? readMem0Json(path, readText(path)) : await readMem0Sqlite(path);
  const rows = mem0.map((r): PreparedRow => {
    if (r.error !== undefined) return { row: r.row, at: r.at, id: r.id, error: r.error };
    if (r.skip !== undefined) return { row: r.row, at: r.at, id: r.id, skip: r.skip };
    return build(r.row, r.at, r.values, r.id);
  });
  return { rows };
}

/** Imports a file into `backend` through learn(); see the comment at the top of this file. */
export async function importFile(backend: EngramStore & SearchIndex, opts: ImportOptions, ctx: OpContext): Promise<ImportReport> {
  const started = performance.now();
  const from = opts.from;
  if (!isSource(from)) throw invalid(`--from must be one of ${IMPORT_SOURCES.join(', ')} (got "${from}")`);
  const path = resolve(opts.path);
  const { rows, format } = await prepare({ ...opts, from, path });

  const report: ImportReport = {
    from,
    ...(format ? { format } : {}),
    path,
    dry_run: opts.dryRun === true,
    total: rows.length,
    imported: 0,
    skipped: 0,
    conflict: 0,
    error: 0,
    rows: [],
    demoted: [],
    elapsed_ms: 0,
  };

  const outcomes = new Map<number, BatchOutcome>();
  const learnable = rows.filter((r) => r.item);
  try {
    await learnBatch(
      backend,
      learnable.map((r) => r.item!),
      ctx,
      { onDuplicate: 'skip', dryRun: opts.dryRun, batchSize: opts.batchSize ?? IMPORT_BATCH_SIZE, onOutcome: (i, o) => outcomes.set(i, o) },
    );
  } catch (err) {
    const at = learnable[outcomes.size]?.at ?? learnable[learnable.length - 1]?.at ?? 'the start';
    const message = err instanceof Error ? err.message : String(err);
    const kept = opts.dryRun ? '' : '; batches written before it stay imported (importing the file again skips them)';
    throw new SvcError(
      err instanceof SvcError ? err.kind : 'storage',
      `import stopped near ${at}: ${message}${kept}`,
      err instanceof SvcError ? err.details : [],
    );
  }

  let k = 0;
  for (const r of rows) {
    const base = { row: r.row, at: r.at, ...(r.id ? { id: r.id } : {}) };
    if (r.error !== undefined) {
      report.error += 1;
      report.rows.push({ ...base, status: 'error', reason: r.error });
      continue;
    }
    if (r.skip !== undefined) {
      report.skipped += 1;
      report.rows.push({ ...base, status: 'skipped', reason: r.skip });
      continue;
    }
    const o = outcomes.get(k++)!;
    switch (o.action) {
      case 'created': {
        report.imported += 1;
        const requested = r.item!.input.scope ?? DEFAULT_SCOPE;
        if (o.engram.scope !== requested) {
          const reason = o.warnings.find((w) => w.includes('secret')) ?? `stored in scope ${o.engram.scope} instead of ${requested}`;
          report.demoted.push({ ...base, ...(opts.dryRun ? {} : { engram: o.engram.id }), scope: o.engram.scope, reason });
        }
        break;
      }
      case 'duplicate':
        report.skipped += 1;
        report.rows.push({
          ...base,
          status: 'skipped',
          reason: o.withinRun
            ? `duplicate of an earlier row of this file (same statement, scope ${o.existing.scope})`
            : `already in the store as ${o.existing.id} (same statement, scope ${o.existing.scope})`,
          ...(o.withinRun && opts.dryRun ? {} : { engram: o.existing.id }),
        });
        break;
      case 'conflict':
        report.conflict += 1;
        report.rows.push({ ...base, status: 'conflict', reason: o.reason, engram: o.existing.id });
        break;
      case 'error':
        report.error += 1;
        report.rows.push({ ...base, status: 'error', reason: o.reason });
        break;
    }
  }
  report.rows.sort((a, b) => a.row - b.row);
  report.elapsed_ms = Math.round(performance.now() - started);
  return report;
}

/** Imports into the store at `root`; a dry run into a store that does not exist creates nothing. */
export async function importIntoStore(
  root: string,
  opts: ImportOptions,
  ctx: OpContext,
): Promise<{ report: ImportReport; warnings: string[] }> {
  const { LocalStore } = await import('../../store/local-store.js');
  // Opening a store creates its layout; a dry run must leave no trace, so it reads an empty
  // throwaway store instead of creating the real one.
  const throwaway = opts.dryRun && !existsSync(join(root, 'local.yaml')) ? mkdtempSync(join(tmpdir(), 'svc-import-dry-')) : undefined;
  const store = await LocalStore.open(throwaway ? join(throwaway, 'store') : root, 'fast');
  try {
    const report = await importFile(store, opts, ctx);
    return { report, warnings: store.warnings.splice(0) };
  } finally {
    store.close();
    if (throwaway) rmSync(throwaway, { recursive: true, force: true });
  }
}
