// Small SQL helpers every hub module uses: quoting the schema names the hub makes, the control
// schema's name, and turning timestamp columns into the ISO strings the API answers with.

/** The schema that holds organizations, keys and the hub's own settings. */
export const CONTROL_SCHEMA = 'svc_hub';

/** Quotes a schema name made by the hub (always [a-z0-9_]). */
export const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** A timestamp column (Date from pg, string from PGlite) as ISO 8601. */
export const iso = (v: Date | string | number): string => new Date(v).toISOString();

/** Like iso, for a nullable column. */
export const isoOrNull = (v: Date | string | number | null | undefined): string | null => (v === null || v === undefined ? null : iso(v));

/** A string as an SQL literal, right whether or not the server takes backslashes as escapes. */
function quoteLiteral(s: string): string {
  const body = s.replace(/'/g, "''");
  return s.includes('\\') ? `E'${body.replace(/\\/g, '\\\\')}'` : `'${body}'`;
}

/** An element of an array literal: double-quoted, backslash-escaped (PostgreSQL's array syntax). */
const arrayElement = (v: string | number | null): string =>
  v === null ? 'NULL' : `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** A parameter as the untyped literal PostgreSQL would infer the same type for; undefined when it has no plain one. */
function literal(v: unknown): string | undefined {
  if (v === null || v === undefined) return 'NULL';
  // A NUL would end the query text on the wire: such a string stays a parameter (and is refused as one).
  if (typeof v === 'string') return v.includes('\0') ? undefined : quoteLiteral(v);
  if (typeof v === 'number') return Number.isFinite(v) ? `'${v}'` : undefined;
  if (typeof v === 'boolean') return `'${v}'`;
  if (
    Array.isArray(v) &&
    v.every((x) => x === null || (typeof x === 'string' && !x.includes('\0')) || (typeof x === 'number' && Number.isFinite(x)))
  )
    return quoteLiteral(`{${(v as Array<string | number | null>).map(arrayElement).join(',')}}`);
  return undefined;
}

/**
 * A statement with its $n parameters written in as literals, so that it can follow other
 * statements in one simple query (one round trip); undefined when a parameter has no plain
 * literal (a Date, a Buffer, an object). The statement must hold no $n outside its parameters
 * (in a string or a comment).
 */
export function inlineParams(sql: string, params: readonly unknown[] = []): string | undefined {
  const literals = params.map(literal);
  if (literals.includes(undefined)) return undefined;
  let missing = false;
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => literals[Number(n) - 1] ?? ((missing = true), ''));
  return missing ? undefined : text;
}

/**
 * The statement that takes an organization's write lock until the transaction ends: every engram
 * write, a write group and an erasure take this one lock (as does the duplicate check's SQL
 * function, migrations/hub/control/012-learn-read.sql).
 */
export const writeLockSql = (schema: string): string => `SELECT pg_advisory_xact_lock(hashtext(${literal(`svc_hub:write:${schema}`)}))`;

/** The parameters as literals (see inlineParams); undefined when one has no plain literal. */
export function literalParams(params: readonly unknown[] = []): string[] | undefined {
  const literals = params.map(literal);
  return literals.includes(undefined) ? undefined : (literals as string[]);
}

/** `EXECUTE name(...)` of a prepared statement, its parameters written in as literals (literalParams). */
export const executeStatement = (name: string, literals: string[]): string =>
  literals.length ? `EXECUTE ${name}(${literals.join(', ')})` : `EXECUTE ${name}`;
