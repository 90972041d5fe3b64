// Validates engram documents against engramJsonSchema and fills its defaults. The validator
// itself is generated ahead of time by ajv (see generate-validator.ts), so no ajv compile runs.
import type { ErrorObject } from 'ajv';
import { requireWithCodeCache } from '../code-cache.cjs';
import { codeFile } from '../package-info.js';
import { engramJsonSchema, PATTERN_HINTS } from './engram-schema.js';
import { type EngramDoc } from './engram-types.js';

export type EngramValidation = { ok: true; engram: EngramDoc } | { ok: false; errors: string[] };

interface GeneratedValidator {
  (value: unknown): boolean;
  errors?: ErrorObject[] | null;
}

// Required, not imported: importing CommonJS from ESM first scans the whole 136 KB file for its
// export names, which took longer than compiling it; and compiled from its code cache, when the
// build wrote one (svc learn pays this on every call).
const validate = requireWithCodeCache(codeFile('engine/model/engram-validator.gen.cjs')) as GeneratedValidator;

export function validateEngram(value: unknown): EngramValidation {
  const check = validate;
  if (check(value)) return { ok: true, engram: value as EngramDoc };
  const errors = (check.errors ?? []).map((e) => toMessage(e, value));
  return { ok: false, errors: [...new Set(errors)] };
}

/** `/associations/0/strength` as `associations[0].strength`, using the data to tell indices from keys. */
function fieldPath(pointer: string, root: unknown): string {
  let path = '';
  let node = root;
  for (const segment of pointer.split('/').slice(1)) {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
    path += Array.isArray(node) ? `[${key}]` : path ? `.${key}` : key;
    node = (node as Record<string, unknown> | null | undefined)?.[key];
  }
  return path;
}

const ARTICLES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const FORMATS: Record<string, string> = {
  'date-time': 'an ISO 8601 date-time',
  uri: 'a URI',
};

function toMessage(e: ErrorObject, root: unknown): string {
  const at = fieldPath(e.instancePath, root);
  const field = at || 'engram';
  const child = (key: string) => (at ? `${at}.${key}` : key);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${child(String(p.missingProperty))}: is required`;
    case 'additionalProperties':
      return `${field}: unknown key "${String(p.additionalProperty)}" (no other keys allowed)`;
    case 'type': {
      const types = String(p.type).split(',');
      return `${field}: must be ${types.map((t) => ARTICLES[t] ?? t).join(' or ')}`;
    }
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).map((v) => (v === null ? 'null' : String(v)));
      return `${field}: must be one of ${allowed.join(', ')} (got ${JSON.stringify(e.data)})`;
    }
    case 'minimum':
      return `${field}: must be at least ${String(p.limit)} (minimum)`;
    case 'maximum':
      return `${field}: must be at most ${String(p.limit)} (maximum)`;
    case 'minLength':
      return p.limit === 1
        ? `${field}: must not be empty (minLength)`
        : `${field}: must be at least ${String(p.limit)} characters (minLength)`;
    case 'maxLength':
      return `${field}: must be at most ${String(p.limit)} characters (maxLength)`;
    case 'pattern': {
      const pattern = String(p.pattern);
      return `${field}: ${PATTERN_HINTS[pattern] ?? `must match ${pattern}`} (pattern)`;
    }
    case 'format':
      return `${field}: must be ${FORMATS[String(p.format)] ?? String(p.format)} (format)`;
    case 'minProperties': {
      // Only dual_coding uses it: "at least one of its (closed set of) properties".
      const keys = Object.keys((e.parentSchema?.properties ?? {}) as object);
      return `${field}: needs ${keys.map((k) => `"${k}"`).join(' or ')}`;
    }
    default:
      return `${field}: ${e.message ?? 'is invalid'} (${e.keyword})`;
  }
}

interface SchemaNode {
  default?: unknown;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
}

/**
 * A copy of the engram with the schema's defaults filled in wherever a field is missing,
 * inside present nested objects and array items too. Present values, null included, win;
 * unknown keys stay where they were.
 */
export function applyEngramDefaults(e: EngramDoc): EngramDoc {
  const copy = structuredClone(e);
  fillDefaults(copy, engramJsonSchema as SchemaNode);
  return copy;
}

function fillDefaults(value: unknown, schema: SchemaNode): void {
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) fillDefaults(item, schema.items);
    return;
  }
  if (typeof value !== 'object' || value === null || !schema.properties) return;
  const record = value as Record<string, unknown>;
  for (const [key, sub] of Object.entries(schema.properties)) {
    if (record[key] === undefined) {
      if ('default' in sub) record[key] = structuredClone(sub.default);
    } else {
      fillDefaults(record[key], sub);
    }
  }
}
