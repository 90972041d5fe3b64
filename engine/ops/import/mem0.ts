import { basename } from 'node:path';
import { invalid } from '../../errors.js';
import { jsonList, parseJsonFile } from './generic.js';
import type { RowValues } from './fields.js';

// mem0 (github.com/mem0ai/mem0) sources. Formats as read in the mem0ai/mem0 repository:
//
// --from mem0-json: what `Memory.get_all()` returns, saved as JSON (mem0/memory/main.py,
//   `_get_all_from_vector_store`): `{"results": [ {"id", "memory", "hash", "metadata",
//   "created_at", "updated_at", "user_id", "agent_id", "run_id", ...} ]}` (v1.1 API; a graph
//   store adds "relations", ignored), or the bare list (v1.0 API). Platform exports may add
//   "categories" (kept as tags). metadata.memory_type "procedural_memory" (mem0's procedural
//   memories) becomes type procedural; everything else the learn default (behavioral). A list
//   of history entries (`Memory.history()` output: "memory_id", "old_memory", "new_memory",
//   "event", ...) is read like the SQLite history below.
//
// --from mem0-sqlite: mem0's local history database (default ~/.mem0/history.db). Schemas:
//   - Python SDK, mem0/memory/storage.py `SQLiteManager`: table `history` (id TEXT, memory_id,
//     old_memory, new_memory, event, created_at, updated_at, is_deleted, actor_id, role);
//   - older Python SDK (same file, before the migration it performs): table `history`
//     (id, memory_id, prev_value, new_value, event, timestamp, is_deleted);
//   - TypeScript SDK, mem0-ts/src/oss/src/storage/SQLiteManager.ts: table `memory_history`
//     (id INTEGER, memory_id, previous_value, new_value, action, created_at, updated_at, is_deleted).
//   Events are ADD, UPDATE and DELETE (main.py `_create_memory`, `_update_memory`,
//   `_delete_memory`; a DELETE row has new value NULL, is_deleted 1 and no created_at). Each
//   memory_id is replayed in insertion order (rowid): its text is the newest ADD/UPDATE value, its
//   learned_at the first event's created_at; a memory with a DELETE event (or is_deleted = 1)
//   was deleted in mem0 and is skipped.

export interface Mem0Row {
  row: number;
  at: string;
  id?: string;
  values?: RowValues;
  skip?: string;
  error?: string;
}

interface HistoryEvent {
  memory_id: string;
  new_value: unknown;
  event: string;
  created_at: unknown;
  is_deleted: boolean;
}

const DELETED_REASON = 'deleted in mem0';

function str(v: unknown): string | undefined {
  if (typeof v === 'string' && v.trim() !== '') return v;
  if (typeof v === 'number') return String(v);
  return undefined;
}

function isDeletedFlag(v: unknown): boolean {
  return v === true || v === 1 || v === '1' || v === 'true';
}

// --------------------------------------------------------------------------------- JSON export

export function readMem0Json(path: string, text: string): Mem0Row[] {
  const list = jsonList(path, parseJsonFile(path, text), ['results', 'memories', 'items']);
  const looksLikeHistory =
    list.length > 0 && list.every((e) => e !== null && typeof e === 'object' && 'memory_id' in e && ('event' in e || 'action' in e));
  if (looksLikeHistory) {
    const events = (list as Array<Record<string, unknown>>).map(historyEvent);
    return replay(events);
  }
  const isMemory = (e: unknown): boolean => e !== null && typeof e === 'object' && ('memory' in e || 'data' in e || 'text' in e);
  if (list.length > 0 && !list.some(isMemory)) {
    throw invalid(
      `${basename(path)} is not a mem0 export: none of its ${list.length} entries has a "memory" (expected the JSON of Memory.get_all(): {"results": [{"id", "memory", ...}]})`,
    );
  }
  return list.map((item, i): Mem0Row => {
    const row = i + 1;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      return { row, at: `item ${row}`, error: 'expected a mem0 memory object ({"id", "memory", ...})' };
    }
    const m = item as Record<string, unknown>;
    const id = str(m.id);
    const at = id ? `memory ${id}` : `item ${row}`;
    if (isDeletedFlag(m.is_deleted) || String(m.event ?? '').toUpperCase() === 'DELETE') return { row, at, id, skip: DELETED_REASON };
    const memory = m.memory ?? m.data ?? m.text;
    if (typeof memory !== 'string' || memory.trim() === '') return { row, at, id, error: 'no "memory" text' };
    const metadata = m.metadata !== null && typeof m.metadata === 'object' ? (m.metadata as Record<string, unknown>) : {};
    const values: RowValues = { statement: memory, source: id ? `mem0:${id}` : 'mem0' };
    if (metadata.memory_type === 'procedural_memory') values.type = 'procedural';
    const categories = Array.isArray(m.categories) ? m.categories.filter((c): c is string => typeof c === 'string' && c.trim() !== '') : [];
    if (categories.length) values.tags = categories;
    const created = str(m.created_at);
    if (created) values.learned_at = created;
    if (id) values.id = id;
    return { row, at, id, values };
  });
}

function historyEvent(e: Record<string, unknown>): HistoryEvent {
  return {
    memory_id: String(e.memory_id ?? ''),
    new_value: e.new_memory ?? e.new_value,
    event: String(e.event ?? e.action ?? '').toUpperCase(),
    created_at: e.created_at ?? e.timestamp,
    is_deleted: isDeletedFlag(e.is_deleted),
  };
}

/** One row per memory_id, in order of first appearance. */
function replay(events: HistoryEvent[]): Mem0Row[] {
  const byId = new Map<string, HistoryEvent[]>();
  for (const e of events) {
    const list = byId.get(e.memory_id);
    if (list) list.push(e);
    else byId.set(e.memory_id, [e]);
  }
  const rows: Mem0Row[] = [];
  for (const [id, list] of byId) {
    const row = rows.length + 1;
    if (id === '') {
      rows.push({ row, at: `item ${row}`, error: `${list.length} history entr${list.length === 1 ? 'y has' : 'ies have'} no memory_id` });
      continue;
    }
    const at = `memory ${id}`;
    if (list.some((e) => e.event === 'DELETE' || e.is_deleted)) {
      rows.push({ row, at, id, skip: DELETED_REASON });
      continue;
    }
    const latest = [...list].reverse().find((e) => (e.event === 'ADD' || e.event === 'UPDATE') && str(e.new_value) !== undefined);
    if (!latest) {
      rows.push({ row, at, id, error: 'no ADD or UPDATE event with a memory text' });
      continue;
    }
    const values: RowValues = { statement: str(latest.new_value), source: `mem0:${id}`, id };
    const created = list.map((e) => str(e.created_at)).find((c) => c !== undefined);
    if (created) values.learned_at = created;
    rows.push({ row, at, id, values });
  }
  return rows;
}

// ----------------------------------------------------------------------------- SQLite history

export async function readMem0Sqlite(path: string): Promise<Mem0Row[]> {
  const { openSqlite } = await import('../../store/sqlite-open.js');
  const name = basename(path);
  let db: import('better-sqlite3').Database;
  try {
    db = openSqlite(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw invalid(`cannot open ${name} as a SQLite database: ${(err as Error).message}`);
  }
  try {
    let tables: string[];
    try {
      tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name);
    } catch (err) {
      throw invalid(`${name} is not a SQLite database: ${(err as Error).message}`);
    }
    const table = tables.includes('history') ? 'history' : tables.includes('memory_history') ? 'memory_history' : undefined;
    if (!table)
      throw invalid(
        `${name} is not a mem0 history database: it has no "history" (or "memory_history") table (tables: ${tables.join(', ') || 'none'})`,
      );
    const cols = new Set((db.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string }>).map((c) => c.name));
    const pick = (...names: string[]): string | undefined => names.find((n) => cols.has(n));
    const newCol = pick('new_memory', 'new_value');
    const eventCol = pick('event', 'action');
    if (!cols.has('memory_id') || !newCol || !eventCol) {
      throw invalid(
        `${name}: table "${table}" does not look like mem0 history: it needs memory_id, new_memory (or new_value) and event (or action); it has ${[...cols].join(', ')}`,
      );
    }
    const createdCol = pick('created_at', 'timestamp');
    const deletedCol = pick('is_deleted');
    const sql =
      `SELECT memory_id, "${newCol}" AS new_value, "${eventCol}" AS event` +
      `, ${createdCol ? `"${createdCol}"` : 'NULL'} AS created_at, ${deletedCol ? `"${deletedCol}"` : '0'} AS is_deleted` +
      ` FROM "${table}" ORDER BY rowid`;
    const rows = db.prepare(sql).all() as Array<Record<string, unknown>>;
    return replay(rows.map(historyEvent));
  } finally {
    db.close();
  }
}
