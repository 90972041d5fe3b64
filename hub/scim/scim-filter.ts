import { parse, type Filter } from 'scim2-parse-filter';
import { scimInvalid } from './scim-errors.js';
import { isCaseExact, keyOf, splitPath, type AttrPath, type ResourceKind } from './scim-schema.js';

// SCIM filters (RFC 7644 §3.4.2.2): parsed by scim2-parse-filter, evaluated here over a
// resource as the server would return it, because the library's own evaluator knows nothing of
// the schema: attribute names match in any case, strings compare case-insensitively unless the
// attribute is caseExact (id, externalId), a complex multi-valued attribute without a
// sub-attribute compares its "value", and ordering on booleans is an invalidFilter.
//
// The library reads `emails[type eq "work"].value eq "x"` as `emails[type eq "work"] and
// emails.value eq "x"`: both must hold, though not necessarily on the same element.

export type { Filter };

const MAX_FILTER = 2000;
/** The most comparisons (and, or, not and [] count too) one filter may hold: its cost per resource. */
export const MAX_FILTER_TERMS = 50;
const DATES = new Set(['meta.created', 'meta.lastmodified']);

export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER) throw scimInvalid('invalidFilter', `the filter is longer than ${MAX_FILTER} characters`);
  let f: Filter;
  try {
    f = parse(text);
  } catch (err) {
    throw scimInvalid('invalidFilter', `the filter "${text.slice(0, 200)}" does not parse: ${(err as Error).message}`);
  }
  check(f);
  const n = terms(f);
  if (n > MAX_FILTER_TERMS) throw scimInvalid('tooMany', `the filter has ${n} terms; at most ${MAX_FILTER_TERMS} are allowed`);
  return f;
}

/** How many nodes a filter has: what one evaluation of it costs. */
export function terms(f: Filter): number {
  switch (f.op) {
    case 'and':
    case 'or':
      return 1 + (f as { filters: Filter[] }).filters.reduce((n, x) => n + terms(x), 0);
    case 'not':
      return 1 + terms((f as { filter: Filter }).filter);
    case '[]':
      return 1 + terms((f as { valFilter: Filter }).valFilter);
    default:
      return 1;
  }
}

/** Refuses operators on values they cannot apply to, before any resource is read. */
function check(f: Filter): void {
  switch (f.op) {
    case 'and':
    case 'or':
      (f as { filters: Filter[] }).filters.forEach(check);
      return;
    case 'not':
      check((f as { filter: Filter }).filter);
      return;
    case '[]':
      check((f as { valFilter: Filter }).valFilter);
      return;
    case 'pr':
      return;
    case 'co':
    case 'sw':
    case 'ew':
      if (typeof (f as { compValue: unknown }).compValue !== 'string')
        throw scimInvalid('invalidFilter', `"${f.op}" compares strings only`);
      return;
    case 'gt':
    case 'ge':
    case 'lt':
    case 'le': {
      const v = (f as { compValue: unknown }).compValue;
      if (typeof v === 'boolean' || v === null)
        throw scimInvalid('invalidFilter', `"${f.op}" cannot order ${String(v)}: booleans and null have no order`);
      return;
    }
    case 'eq':
    case 'ne':
      return;
    default:
      throw scimInvalid('invalidFilter', `unknown filter operator "${(f as { op: string }).op}"`);
  }
}

const field = (obj: unknown, name: string): unknown => {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  const k = keyOf(obj as Record<string, unknown>, name);
  return k === undefined ? undefined : (obj as Record<string, unknown>)[k];
};

/** The leaf values a path names in a resource: several for a multi-valued attribute. */
function valuesAt(kind: ResourceKind, root: Record<string, unknown>, path: string): unknown[] {
  const { ext, attr, sub } = splitPath(kind, path);
  const top = field(ext ? field(root, ext) : root, attr);
  const items = Array.isArray(top) ? top : top === undefined ? [] : [top];
  const leaf = (v: unknown): unknown => (sub ? field(v, sub) : v && typeof v === 'object' && !Array.isArray(v) ? field(v, 'value') : v);
  return items.map(leaf).filter((v) => v !== undefined && v !== null);
}

function compare(op: string, actual: unknown, expected: unknown, exact: boolean, date: boolean): boolean {
  if (typeof expected === 'boolean' || typeof actual === 'boolean') {
    const a = typeof actual === 'string' ? actual.toLowerCase() === 'true' : actual;
    return op === 'eq' ? a === expected : false;
  }
  if (typeof expected === 'number' && typeof actual === 'number') return order(op, actual - expected);
  if (typeof expected !== 'string' || typeof actual !== 'string') return op === 'eq' ? actual === expected : false;
  if (date && !Number.isNaN(Date.parse(actual)) && !Number.isNaN(Date.parse(expected)))
    return order(op, Date.parse(actual) - Date.parse(expected));
  const a = exact ? actual : actual.toLowerCase();
  const e = exact ? expected : expected.toLowerCase();
  switch (op) {
    case 'co':
      return a.includes(e);
    case 'sw':
      return a.startsWith(e);
    case 'ew':
      return a.endsWith(e);
    default:
      return order(op, a < e ? -1 : a > e ? 1 : 0);
  }
}

function order(op: string, diff: number): boolean {
  switch (op) {
    case 'eq':
      return diff === 0;
    case 'gt':
      return diff > 0;
    case 'ge':
      return diff >= 0;
    case 'lt':
      return diff < 0;
    case 'le':
      return diff <= 0;
    default:
      return false;
  }
}

/** Whether a resource (or, inside a value filter, one element of a multi-valued attribute) matches. */
export function matches(kind: ResourceKind, f: Filter, root: Record<string, unknown>, within?: AttrPath): boolean {
  switch (f.op) {
    case 'and':
      return (f as { filters: Filter[] }).filters.every((x) => matches(kind, x, root, within));
    case 'or':
      return (f as { filters: Filter[] }).filters.some((x) => matches(kind, x, root, within));
    case 'not':
      return !matches(kind, (f as { filter: Filter }).filter, root, within);
    case '[]': {
      const { attrPath, valFilter } = f as { attrPath: string; valFilter: Filter };
      const { ext, attr } = splitPath(kind, attrPath);
      const top = field(ext ? field(root, ext) : root, attr);
      const items = Array.isArray(top) ? top : top === undefined ? [] : [top];
      return items.some(
        (item) => item && typeof item === 'object' && matches(kind, valFilter, item as Record<string, unknown>, { ext, attr }),
      );
    }
  }
  const { attrPath, compValue } = f as { attrPath: string; compValue?: unknown };
  // Inside emails[...], "type" means emails.type.
  const path = within ? `${within.ext ? within.ext + ':' : ''}${within.attr}.${attrPath}` : attrPath;
  const values = within ? [field(root, attrPath)].filter((v) => v !== undefined && v !== null) : valuesAt(kind, root, path);
  if (f.op === 'pr') return values.some((v) => v !== '' && !(Array.isArray(v) && v.length === 0));
  const { ext, attr, sub } = splitPath(kind, path);
  const exact = isCaseExact(kind, ext, attr, sub);
  const date = DATES.has(`${attr}.${sub ?? ''}`.toLowerCase());
  if (compValue === null) return f.op === 'eq' ? values.length === 0 : values.length > 0;
  if (f.op === 'ne') return !values.some((v) => compare('eq', v, compValue, exact, date));
  return values.some((v) => compare(f.op, v, compValue, exact, date));
}
