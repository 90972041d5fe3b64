import { basename, extname } from 'node:path';
import { invalid } from '../../errors.js';

// `--from generic`: a JSON array, JSON Lines or CSV file of records (objects). The format is
// taken from the extension (.json, .jsonl / .ndjson, .csv / .tsv), else sniffed from the text.
// A file that cannot be read as its format at all is one error (SvcError 'invalid'); a single
// bad record (an unparsable JSONL line, a CSV row with the wrong number of fields) is a row
// error that names its line.

export type GenericFormat = 'json' | 'jsonl' | 'csv' | 'tsv';

export interface SourceRecord {
  /** Line number (JSONL, CSV) or 1-based element number (JSON array). */
  row: number;
  /** How the report names it: "line 7", "item 3". */
  at: string;
  record?: Record<string, unknown>;
  error?: string;
}

/** Top-level keys under which a JSON export commonly keeps its list of records. */
const LIST_KEYS = ['items', 'records', 'data', 'memories', 'results', 'engrams', 'rows'];

export function detectFormat(path: string, text: string): GenericFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.jsonl' || ext === '.ndjson') return 'jsonl';
  if (ext === '.csv') return 'csv';
  if (ext === '.tsv') return 'tsv';
  const head = text.trimStart();
  if (head.startsWith('[')) return 'json';
  if (head.startsWith('{')) {
    try {
      JSON.parse(text);
      return 'json';
    } catch {
      return 'jsonl';
    }
  }
  return 'csv';
}

export async function readGeneric(
  path: string,
  text: string,
  format = detectFormat(path, text),
): Promise<{ format: GenericFormat; records: SourceRecord[]; columns?: string[] }> {
  if (format === 'json') return { format, records: readJson(path, text) };
  if (format === 'jsonl') return { format, records: readJsonl(path, text) };
  // csv-parse is loaded only by imports that read CSV.
  csvModule ??= await import('csv-parse/sync');
  return { format, ...readDelimited(path, text, format === 'tsv' ? '\t' : ',') };
}

/** A JSON element as a record: objects as they are, a bare string as a statement. */
function asRecord(value: unknown): { record?: Record<string, unknown>; error?: string } {
  if (typeof value === 'string') return { record: { statement: value } };
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return { record: value as Record<string, unknown> };
  return { error: `expected an object (or a string), got ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}` };
}

export function jsonList(path: string, data: unknown, keys = LIST_KEYS): unknown[] {
  if (Array.isArray(data)) return data;
  if (data !== null && typeof data === 'object') {
    for (const key of keys) {
      const v = (data as Record<string, unknown>)[key];
      if (Array.isArray(v)) return v;
    }
  }
  throw invalid(
    `${basename(path)} holds no list of records: expected a JSON array, or an object with one of ${keys.map((k) => `"${k}"`).join(', ')} holding an array`,
  );
}

export function parseJsonFile(path: string, text: string): unknown {
  try {
    return JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw invalid(`${basename(path)} is not valid JSON: ${(err as Error).message}`);
  }
}

function readJson(path: string, text: string): SourceRecord[] {
  const list = jsonList(path, parseJsonFile(path, text));
  return list.map((value, i) => ({ row: i + 1, at: `item ${i + 1}`, ...asRecord(value) }));
}

function readJsonl(path: string, text: string): SourceRecord[] {
  const records: SourceRecord[] = [];
  let parsed = 0;
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const at = `line ${i + 1}`;
    try {
      const value = JSON.parse(line) as unknown;
      parsed += 1;
      records.push({ row: i + 1, at, ...asRecord(value) });
    } catch (err) {
      records.push({ row: i + 1, at, error: `not valid JSON: ${(err as Error).message}` });
    }
  }
  // Not one line parsed: this is not a JSONL file with a few bad lines, it is not JSONL.
  if (parsed === 0 && records.length > 0)
    throw invalid(`${basename(path)} is not JSON Lines: line ${records[0]!.row}: ${records[0]!.error}`);
  return records;
}

function readDelimited(path: string, text: string, delimiter: string): { records: SourceRecord[]; columns: string[] } {
  const rows = parseCsv(path, text, delimiter);
  if (rows.length === 0) return { records: [], columns: [] };
  const header = rows[0]!.fields.map((h) => h.trim());
  const seen = new Set<string>();
  for (const name of header) {
    if (name === '') throw invalid(`${basename(path)}: the header (line ${rows[0]!.line}) has an empty column name`);
    if (seen.has(name)) throw invalid(`${basename(path)}: the header (line ${rows[0]!.line}) names column "${name}" twice`);
    seen.add(name);
  }
  const records: SourceRecord[] = [];
  for (const { fields, line } of rows.slice(1)) {
    const at = `line ${line}`;
    if (fields.length !== header.length) {
      records.push({
        row: line,
        at,
        error: `has ${fields.length} field${fields.length === 1 ? '' : 's'}, the header has ${header.length}`,
      });
      continue;
    }
    records.push({ row: line, at, record: Object.fromEntries(header.map((h, i) => [h, fields[i]])) });
  }
  return { records, columns: header };
}

let csvModule: typeof import('csv-parse/sync') | undefined;

function parseCsv(path: string, text: string, delimiter: string): Array<{ fields: string[]; line: number }> {
  // eslint-disable-next-line no-restricted-syntax -- an invariant: the caller loads csv-parse first
  if (!csvModule) throw new Error('csv-parse is not loaded');
  try {
    const out = csvModule.parse(text, {
      delimiter,
      bom: true,
      info: true,
      raw: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as Array<{ record: string[]; info: { lines: number }; raw: string }>;
    // info.lines is the line a record ends on; its raw text (blank lines before it dropped) says
    // how many lines it spans.
    return out.map(({ record, info, raw }) => {
      const body = raw.replace(/\r?\n$/, '').replace(/^(?:\r?\n)+/, '');
      return { fields: record, line: info.lines - (body.match(/\n/g)?.length ?? 0) };
    });
  } catch (err) {
    throw invalid(`${basename(path)} is not valid ${delimiter === '\t' ? 'TSV' : 'CSV'}: ${(err as Error).message}`);
  }
}
