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
