import { matches, parseFilter, terms, type Filter } from './scim-filter.js';
import { scimInvalid } from './scim-errors.js';
import {
  canonicalName,
  extensionOf,
  isMultiValued,
  isReadOnly,
  keyOf,
  PATCH_SCHEMA,
  stripCoreUrn,
  type ResourceKind,
} from './scim-schema.js';

// PATCH (RFC 7644 §3.5.2) applied to a resource as the server returns it; the caller stores
// the result as it stores a PUT. Accepts what Entra ID and Okta send beside the RFC: ops in any
// case ("Replace"), a path-less replace whose value holds dotted ("name.givenName") or
// URN-prefixed keys, the enterprise extension as one object, and removal of members by a value
// list. Booleans sent as strings are fixed by the caller's normalization.
//
// The work one PATCH may cause is bounded whatever the stored resource holds: at most MAX_OPS
// operations, MAX_PATH_TERMS terms in a path's filter, and MAX_WORK element visits in all (an
// element tested against a filter costs its terms). Past a cap the request is a 400 tooMany,
// before anything is stored.

export type PatchOp = { op: 'add' | 'replace' | 'remove'; path?: string; value?: unknown };

export const MAX_OPS = 100;
export const MAX_PATH_TERMS = 10;
export const MAX_WORK = 200_000;

/** Counts element visits; throws tooMany past MAX_WORK. */
class Budget {
  private used = 0;
  spend(n: number): void {
    this.used += n;
    if (this.used > MAX_WORK)
      throw scimInvalid(
        'tooMany',
        `this PATCH would visit more than ${MAX_WORK} attribute values (operations × values × filter terms); send fewer operations or simpler filters`,
      );
  }
}

type Obj = Record<string, unknown>;

interface Target {
  ext: string | undefined;
  attr: string;
  filter?: Filter;
  sub?: string;
}

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The operations of a PatchOp body; invalidSyntax when it is not one. */
export function patchOps(body: unknown): PatchOp[] {
  if (!isObj(body)) throw scimInvalid('invalidSyntax', 'the body must be a PatchOp JSON object');
  const schemas = body[keyOf(body, 'schemas') ?? 'schemas'];
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_SCHEMA))
    throw scimInvalid('invalidSyntax', `schemas must contain "${PATCH_SCHEMA}"`);
  const ops = body[keyOf(body, 'Operations') ?? 'Operations'];
  if (!Array.isArray(ops) || ops.length === 0) throw scimInvalid('invalidSyntax', 'Operations must be a non-empty array');
  if (ops.length > MAX_OPS)
    throw scimInvalid('tooMany', `this PATCH has ${ops.length} operations; at most ${MAX_OPS} are allowed in one request`);
  return ops.map((o, i) => {
    if (!isObj(o)) throw scimInvalid('invalidSyntax', `Operations[${i}] must be an object`);
    const op = String(o[keyOf(o, 'op') ?? 'op'] ?? '').toLowerCase();
    if (op !== 'add' && op !== 'replace' && op !== 'remove')
      throw scimInvalid('invalidSyntax', `Operations[${i}].op must be "add", "replace" or "remove" (got ${JSON.stringify(o.op)})`);
    const pathKey = keyOf(o, 'path');
    const path = pathKey ? o[pathKey] : undefined;
    if (path !== undefined && (typeof path !== 'string' || path.trim() === ''))
      throw scimInvalid('invalidPath', `Operations[${i}].path must be a non-empty string`);
    const valueKey = keyOf(o, 'value');
    return { op, ...(path !== undefined ? { path: path.trim() } : {}), ...(valueKey ? { value: o[valueKey] } : {}) };
  });
}

/** Splits `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, each optionally URN-prefixed. */
export function parsePath(kind: ResourceKind, path: string): Target {
  const ext = extensionOf(kind, path);
  let rest = ext ? path.slice(ext.length) : stripCoreUrn(kind, path);
  if (ext) {
    if (rest === '') return { ext, attr: '' };
    if (!rest.startsWith(':')) throw scimInvalid('invalidPath', `path "${path}" is not an attribute path`);
    rest = rest.slice(1);
  }
  const m = /^([A-Za-z$][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z$][\w$-]*))?$/.exec(rest);
  if (!m) throw scimInvalid('invalidPath', `path "${path}" is not an attribute path (attr, attr.sub, attr[filter] or attr[filter].sub)`);
  const [, rawAttr, filterText, rawSub] = m as unknown as [string, string, string | undefined, string | undefined];
  let filter: Filter | undefined;
  if (filterText !== undefined) {
    try {
      filter = parseFilter(filterText);
    } catch (err) {
      throw scimInvalid('invalidPath', `path "${path.slice(0, 200)}": ${(err as Error).message}`);
    }
    const n = terms(filter);
    if (n > MAX_PATH_TERMS)
      throw scimInvalid(
        'tooMany',
        `the filter of path "${path.slice(0, 200)}" has ${n} terms; at most ${MAX_PATH_TERMS} are allowed in a PATCH path`,
      );
  }
  const attr = canonicalName(kind, ext, rawAttr);
  return { ext, attr, ...(filter ? { filter } : {}), ...(rawSub ? { sub: canonicalName(kind, ext, attr, rawSub) } : {}) };
}

/** Applies the operations to a copy of the resource; throws the SCIM error of the first that fails. */
export function applyPatch(kind: ResourceKind, resource: Obj, ops: PatchOp[]): Obj {
  if (ops.length > MAX_OPS) throw scimInvalid('tooMany', `at most ${MAX_OPS} operations are allowed in one PATCH`);
  const doc = structuredClone(resource);
  const budget = new Budget();
  const apply = (kind: ResourceKind, doc: Obj, op: PatchOp['op'], t: Target, value: unknown) => applyOne(kind, doc, op, t, value, budget);
  for (const op of ops) {
    if (op.path === undefined) {
      if (op.op === 'remove') throw scimInvalid('noTarget', 'a remove operation needs a path');
      if (!isObj(op.value)) throw scimInvalid('invalidValue', `an ${op.op} without a path needs an object of attributes as its value`);
      for (const [key, value] of Object.entries(op.value)) {
        const ext = extensionOf(kind, key);
        // The extension as one object ({"urn:…:enterprise:2.0:User": {"department": …}}).
        if (ext && key.length === ext.length && isObj(value)) {
          for (const [k, v] of Object.entries(value)) apply(kind, doc, op.op, parsePath(kind, `${ext}:${k}`), v);
        } else if (!isUnchangedId(doc, key, value)) apply(kind, doc, op.op, parsePath(kind, key), value);
      }
    } else apply(kind, doc, op.op, parsePath(kind, op.path), op.value);
  }
  return doc;
}

/** Okta and Entra echo the id back in a path-less replace: harmless when it is unchanged. */
const isUnchangedId = (doc: Obj, key: string, value: unknown): boolean => key.toLowerCase() === 'id' && value === doc.id;

function applyOne(kind: ResourceKind, doc: Obj, op: PatchOp['op'], t: Target, value: unknown, budget: Budget): void {
  budget.spend(1);
  if (!t.ext && (isReadOnly(kind, t.attr) || t.attr === 'schemas')) throw scimInvalid('mutability', `${t.attr} cannot be changed`);
  if (op !== 'remove' && value === undefined) throw scimInvalid('invalidValue', `an ${op} operation needs a value`);
  // A value of null asks for the attribute to go (RFC 7644 §3.5.2.3 treats it as unassigned).
  if (op !== 'remove' && value === null) op = 'remove';
  if (t.ext && t.attr === '') {
    if (op === 'remove') delete doc[t.ext];
    else if (!isObj(value)) throw scimInvalid('invalidValue', `the value of ${t.ext} must be an object`);
    else doc[t.ext] = { ...(isObj(doc[t.ext]) ? (doc[t.ext] as Obj) : {}), ...value };
    return;
  }
  const container = t.ext ? (isObj(doc[t.ext]) ? (doc[t.ext] as Obj) : (doc[t.ext] = {})) : doc;
  const key = keyOf(container, t.attr) ?? t.attr;
  const multi = isMultiValued(kind, t.ext, t.attr) || Array.isArray(container[key]);
  if (t.filter) return applyFiltered(kind, container, key, op, t, value, budget);
  const current = container[key];
  if (Array.isArray(current)) budget.spend(current.length);
  if (Array.isArray(value)) budget.spend(value.length);
  if (t.sub) {
    if (multi) {
      // emails.value without a filter: every element.
      for (const item of Array.isArray(current) ? current : []) if (isObj(item)) setSub(item, t.sub, op, value);
      return;
    }
    if (op === 'remove') {
      if (isObj(current)) setSub(current, t.sub, op, value);
      return;
    }
    container[key] = isObj(current) ? current : {};
    setSub(container[key] as Obj, t.sub, op, value);
    return;
  }
  if (op === 'remove') {
    // Entra removes members by listing them: {"op":"Remove","path":"members","value":[{"value":"…"}]}.
    if (multi && Array.isArray(value) && Array.isArray(current)) {
      const gone = new Set(value.map((v) => (isObj(v) ? String(v[keyOf(v, 'value') ?? 'value']) : String(v))));
      container[key] = current.filter((item) => !(isObj(item) && gone.has(String(item.value))));
    } else delete container[key];
    return;
  }
  if (multi) {
    const items = (Array.isArray(value) ? value : [value]).map((v) => (isObj(v) ? v : { value: v }));
    if (op === 'replace' || !Array.isArray(current)) container[key] = items;
    else {
      const have = new Set(current.filter((c) => isObj(c) && c.value !== undefined).map((c) => (c as Obj).value));
      container[key] = [...current, ...items.filter((v) => !have.has(v.value))];
    }
    return;
  }
  // A complex attribute merges: sub-attributes not sent stay as they are (§3.5.2.1, §3.5.2.3).
  container[key] = isObj(current) && isObj(value) ? { ...current, ...value } : value;
}

function setSub(item: Obj, sub: string, op: PatchOp['op'], value: unknown): void {
  const key = keyOf(item, sub) ?? sub;
  if (op === 'remove') delete item[key];
  else item[key] = value;
}

function applyFiltered(
  kind: ResourceKind,
  container: Obj,
  key: string,
  op: PatchOp['op'],
  t: Target,
  value: unknown,
  budget: Budget,
): void {
  const current = container[key];
  const items = Array.isArray(current) ? current : [];
  // Each element is tested once or twice below, each test costing the filter's terms.
  budget.spend(2 * items.length * terms(t.filter!));
  const hit = (item: unknown) => isObj(item) && matches(kind, t.filter!, item, { ext: t.ext, attr: t.attr });
  if (op === 'remove') {
    if (t.sub) items.filter(hit).forEach((item) => setSub(item as Obj, t.sub!, op, value));
    else container[key] = items.filter((item) => !hit(item));
    return;
  }
  const matched = items.filter(hit) as Obj[];
  if (matched.length === 0) {
    // add to emails[type eq "work"].value creates the work address; replace needs a target.
    const seed = op === 'add' ? equalities(t.filter!) : null;
    if (!seed) throw scimInvalid('noTarget', `no value of ${t.attr} matches the filter`);
    container[key] = [...items, t.sub ? { ...seed, [t.sub]: value } : { ...seed, ...(isObj(value) ? value : { value }) }];
    return;
  }
  if (!t.sub && !isObj(value)) throw scimInvalid('invalidValue', `the value for ${t.attr}[…] must be an object`);
  for (const item of matched) if (t.sub) setSub(item, t.sub, op, value);
  if (!t.sub) container[key] = items.map((item) => (hit(item) ? { ...(item as Obj), ...(value as Obj) } : item));
}

/** The element a filter of `eq` comparisons joined by `and` describes, or null for any other filter. */
function equalities(f: Filter): Obj | null {
  if (f.op === 'eq') return { [(f as { attrPath: string }).attrPath]: (f as { compValue: unknown }).compValue };
  if (f.op !== 'and') return null;
  const parts = (f as { filters: Filter[] }).filters.map(equalities);
  return parts.every(Boolean) ? Object.assign({}, ...parts) : null;
}
