import { readFileSync } from 'node:fs';
import { invalid } from '../../errors.js';
import { ENGRAM_TYPES, VISIBILITIES, type EngramType, type Visibility } from '../../model/engram-types.js';
import { checkScope } from '../../model/scope.js';
import type { BatchItem } from './batch-learn.js';

// What one imported row may set, how a `--mapping` file names where each value comes from, and
// how raw values (JSON values or CSV text) become a learn input. Every refusal is one line that
// names the field, so the report can say exactly what is wrong with a row.

export const MAPPABLE_FIELDS = [
  'statement',
  'type',
  'scope',
  'domain',
  'tags',
  'rationale',
  'source',
  'visibility',
  'status',
  'learned_at',
  'id',
] as const;
export type MappableField = (typeof MAPPABLE_FIELDS)[number];
export type RowValues = Partial<Record<MappableField, unknown>>;

/** A `--mapping` file: `fields` maps an engram field to a source column or dotted path; `defaults` fill blanks. */
export interface ImportMapping {
  /** A column or dotted path; null: never read this field from the rows (defaults still apply). */
  fields: Partial<Record<MappableField, string | null>>;
  defaults: RowValues;
}

/** Where a value is looked for when the mapping does not name a column (first present wins). */
const IMPLICIT: Record<MappableField, string[]> = {
  statement: ['statement', 'content', 'text', 'memory'],
  type: ['type'],
  scope: ['scope'],
  domain: ['domain'],
  tags: ['tags'],
  rationale: ['rationale'],
  source: ['source'],
  visibility: ['visibility'],
  status: ['status'],
  learned_at: ['learned_at', 'created_at'],
  id: ['id'],
};

/** Words other systems use for a kind of knowledge, mapped to engram types. */
const TYPE_ALIASES: Record<string, EngramType> = {
  rule: 'behavioral',
  prohibition: 'behavioral',
  preference: 'behavioral',
  convention: 'behavioral',
  behavior: 'behavioral',
  behaviour: 'behavioral',
  decision: 'architectural',
  architecture: 'architectural',
  definition: 'terminological',
  term: 'terminological',
  glossary: 'terminological',
  terminology: 'terminological',
  procedure: 'procedural',
  process: 'procedural',
  howto: 'procedural',
  steps: 'procedural',
};

export class RowError extends Error {
  override name = 'RowError';
}

export function isBlank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
}

/** A value by exact key first (CSV headers may hold dots), then by dotted path (`meta.topic`, `tags.0`). */
export function lookup(record: Record<string, unknown>, path: string): unknown {
  if (Object.hasOwn(record, path)) return record[path];
  let node: unknown = record;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** The values a record gives, through the mapping (mapped column, else the implicit names, else the default). */
export function mapRecord(record: Record<string, unknown>, mapping?: ImportMapping): RowValues {
  const values: RowValues = {};
  for (const field of MAPPABLE_FIELDS) {
    const mapped = mapping?.fields[field];
    let value: unknown;
    if (mapped === null) value = undefined;
    else if (mapped !== undefined) value = lookup(record, mapped);
    else for (const name of IMPLICIT[field]) if (!isBlank((value = lookup(record, name)))) break;
    if (isBlank(value) && mapping && mapping.defaults[field] !== undefined) value = mapping.defaults[field];
    if (!isBlank(value)) values[field] = value;
  }
  return values;
}

/** The column names a statement is read from (for messages). */
export function statementColumns(mapping?: ImportMapping): string[] {
  const mapped = mapping?.fields.statement;
  return typeof mapped === 'string' ? [mapped] : IMPLICIT.statement;
}

function text(value: unknown, field: string): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new RowError(
    `${field}: must be text, got ${Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : typeof value}`,
  );
}

export function toType(value: unknown): EngramType {
  const raw = text(value, 'type').toLowerCase();
  if ((ENGRAM_TYPES as readonly string[]).includes(raw)) return raw as EngramType;
  const alias = TYPE_ALIASES[raw.replace(/[\s_-]+/g, '')];
  if (alias) return alias;
  throw new RowError(`type: "${raw}" is not one of ${ENGRAM_TYPES.join(', ')}`);
}

function toTags(value: unknown): string[] {
  const list = Array.isArray(value) ? value.map((v) => text(v, 'tags')) : text(value, 'tags').split(/[,;]/);
  return [...new Set(list.map((t) => t.trim()).filter(Boolean))];
}

function toDate(value: unknown): string {
  let ms: number;
  if (typeof value === 'number')
    ms = value < 1e11 ? value * 1000 : value; // seconds or milliseconds since 1970
  else ms = Date.parse(text(value, 'learned_at'));
  if (!Number.isFinite(ms)) throw new RowError(`learned_at: "${String(value)}" is not a date`);
  return new Date(ms).toISOString();
}

export interface ItemOptions {
  /** --scope: wins over every row's own scope. */
  forceScope?: string;
  /** The project's scope and domain (.svc.yaml), for rows that give none. */
  fallbackScope?: string;
  fallbackDomain?: string;
  /** Recorded on the created engram's history event. */
  details?: Record<string, unknown>;
}

/** A row's values as a learn input; throws RowError naming the first bad field. */
export function toItem(values: RowValues, opts: ItemOptions = {}): BatchItem {
  if (isBlank(values.statement)) throw new RowError('statement: missing or empty');
  const statement = text(values.statement, 'statement');
  const item: BatchItem = { input: { statement } };
  const input = item.input;
  if (!isBlank(values.type)) input.type = toType(values.type);
  const scope = opts.forceScope ?? (isBlank(values.scope) ? opts.fallbackScope : text(values.scope, 'scope'));
  if (scope !== undefined) {
    const bad = checkScope(scope);
    if (bad) throw new RowError(bad);
    input.scope = scope;
  }
  const domain = isBlank(values.domain) ? opts.fallbackDomain : text(values.domain, 'domain');
  if (domain !== undefined) {
    if (/\s/.test(domain)) throw new RowError(`domain: must be a dotted path without whitespace (got "${domain}")`);
    input.domain = domain;
  }
  if (!isBlank(values.tags)) {
    const tags = toTags(values.tags);
    if (tags.length) input.tags = tags;
  }
  if (!isBlank(values.rationale)) input.rationale = text(values.rationale, 'rationale');
  if (!isBlank(values.source)) input.source = text(values.source, 'source');
  if (!isBlank(values.visibility)) {
    const v = text(values.visibility, 'visibility').toLowerCase();
    if (!(VISIBILITIES as readonly string[]).includes(v)) throw new RowError(`visibility: "${v}" is not one of ${VISIBILITIES.join(', ')}`);
    input.visibility = v as Visibility;
  }
  if (!isBlank(values.status)) {
    const s = text(values.status, 'status').toLowerCase();
    if (s !== 'active' && s !== 'candidate') throw new RowError(`status: "${s}" is not one of active, candidate`);
    input.status = s;
  }
  if (!isBlank(values.learned_at)) item.learnedAt = toDate(values.learned_at);
  if (opts.details) item.details = opts.details;
  return item;
}

/** Reads and checks a `--mapping` file; a bad file is one clear error. */
export function loadMapping(path: string): ImportMapping {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (err) {
    throw invalid(`cannot read the mapping file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (err) {
    throw invalid(`the mapping file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  return parseMapping(data, path);
}

export function parseMapping(data: unknown, where = 'the mapping'): ImportMapping {
  const problems: string[] = [];
  const allowed = MAPPABLE_FIELDS.join(', ');
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw invalid(`${where} must be a JSON object with "fields" and/or "defaults"`);
  const obj = data as Record<string, unknown>;
  for (const key of Object.keys(obj))
    if (key !== 'fields' && key !== 'defaults') problems.push(`unknown key "${key}" (expected "fields" and "defaults")`);
  const fields: ImportMapping['fields'] = {};
  const defaults: RowValues = {};
  const section = (name: 'fields' | 'defaults'): Record<string, unknown> => {
    const v = obj[name];
    if (v === undefined) return {};
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      problems.push(`${name}: must be an object`);
      return {};
    }
    return v as Record<string, unknown>;
  };
  for (const [target, column] of Object.entries(section('fields'))) {
    if (!(MAPPABLE_FIELDS as readonly string[]).includes(target))
      problems.push(`fields.${target}: not an engram field (fields map an engram field to a source column: ${allowed})`);
    else if (column === null && target !== 'statement') fields[target as MappableField] = null;
    else if (typeof column !== 'string' || column.trim() === '')
      problems.push(
        `fields.${target}: must name a source column or dotted path${target === 'statement' ? '' : ' (or be null: never read it)'}`,
      );
    else fields[target as MappableField] = column;
  }
  for (const [target, value] of Object.entries(section('defaults'))) {
    if (!(MAPPABLE_FIELDS as readonly string[]).includes(target)) problems.push(`defaults.${target}: not an engram field (${allowed})`);
    else if (target === 'statement' || target === 'id') problems.push(`defaults.${target}: cannot have a default`);
    else defaults[target as MappableField] = value;
  }
  // Check the defaults as a row would be checked, so a bad default fails once, not on every row.
  try {
    toItem({ ...defaults, statement: 'x' });
  } catch (err) {
    if (!(err instanceof RowError)) throw err;
    problems.push(`defaults.${err.message}`);
  }
  if (problems.length) throw invalid(`${where} is not a valid mapping`, problems);
  return { fields, defaults };
}
