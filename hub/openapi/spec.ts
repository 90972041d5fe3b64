import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { packageRoot } from '../../engine/package-info.js';
import { badRequest } from '../http/problem.js';

// The OpenAPI description is the one source of the request and response shapes: the hub
// validates request bodies against its schemas, and the tests validate every response. It is
// written in hub/openapi/openapi.yaml; the build copies it to dist/ with a JSON twin
// (scripts/build-openapi.ts), which the hub reads: the YAML text is only served.

/** The description as written, in the sources. */
export const OPENAPI_SOURCE = join(packageRoot(), 'hub', 'openapi', 'openapi.yaml');
const BUILT = join(packageRoot(), 'dist', 'hub', 'openapi');
export const OPENAPI_YAML = join(BUILT, 'openapi.yaml');
export const OPENAPI_JSON = join(BUILT, 'openapi.json');

let loading: Promise<{ text: string; doc: OpenApiDoc; ajv: import('ajv').default }> | undefined;

interface OpenApiDoc {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }>; $ref?: string }> }>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, { content: Record<string, { schema: unknown }> }> };
}

/** The description, parsed once per process (concurrent first callers share the one load). */
function load() {
  loading ??= (async () => {
    const [{ default: Ajv2020 }, { default: addFormats }] = await Promise.all([import('ajv/dist/2020.js'), import('ajv-formats')]);
    const text = readFileSync(OPENAPI_YAML, 'utf8');
    const doc = JSON.parse(readFileSync(OPENAPI_JSON, 'utf8')) as OpenApiDoc;
    const ajv = new (Ajv2020 as unknown as typeof import('ajv').default)({ allErrors: true, strict: false, useDefaults: true });
    (addFormats as unknown as (a: unknown) => void)(ajv);
    ajv.addSchema({ $id: 'openapi', components: doc.components });
    return { text, doc, ajv };
  })().catch((err: unknown) => {
    loading = undefined; // the next request tries again, and reports the failure itself
    throw err;
  });
  return loading;
}

/**
 * Loads the description now (a few hundred milliseconds, mostly compiling ajv), so that the first
 * request that validates a body does not wait for it: `svc hub` calls this once it listens.
 */
export function preloadOpenApi(): void {
  load().catch(() => undefined);
}

export async function openApiText(): Promise<string> {
  return (await load()).text;
}

export async function openApiDocument(): Promise<OpenApiDoc> {
  return (await load()).doc;
}

const validators = new Map<string, ValidateFunction>();

async function schemaValidator(name: string): Promise<ValidateFunction> {
  let v = validators.get(name);
  if (!v) {
    const { ajv } = await load();
    v = ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
    validators.set(name, v);
  }
  return v;
}

/** One line per broken rule, each naming the field: `tags[0]: must be a string`. */
export function describeErrors(errors: ErrorObject[] | null | undefined): string[] {
  const lines = new Set<string>();
  for (const e of errors ?? []) {
    if (e.keyword === 'oneOf' || e.keyword === 'anyOf' || e.keyword === 'if') continue;
    const path = e.instancePath
      .replace(/^\//, '')
      .replace(/\/(\d+)(?=\/|$)/g, '[$1]')
      .replace(/\//g, '.');
    const at = path || 'body';
    if (e.keyword === 'additionalProperties')
      lines.add(`${at === 'body' ? '' : at + '.'}${(e.params as { additionalProperty: string }).additionalProperty}: unknown field`);
    else if (e.keyword === 'required')
      lines.add(`${at === 'body' ? '' : at + '.'}${(e.params as { missingProperty: string }).missingProperty}: is required`);
    else if (e.keyword === 'enum')
      lines.add(
        `${at}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((x) => JSON.stringify(x)).join(', ')}`,
      );
    else if (e.keyword === 'pattern' && e.params && (e.params as { pattern: string }).pattern === '\\S')
      lines.add(`${at}: must not be blank`);
    else lines.add(`${at}: ${e.message}`);
  }
  return [...lines];
}

/** The body, checked against a request schema of the description (defaults filled in); 400 otherwise. */
export async function validBody<T>(schema: string, body: unknown): Promise<T> {
  const v = await schemaValidator(schema);
  const value = body === undefined ? {} : structuredClone(body);
  if (!v(value)) {
    const errors = describeErrors(v.errors);
    throw badRequest(`the request body is invalid: ${errors.join('; ')}`, errors);
  }
  return value as T;
}

/** For tests: does a response match what the description says for this route and status? */
export async function responseErrors(
  method: string,
  pathTemplate: string,
  status: number,
  contentType: string,
  body: unknown,
): Promise<string[]> {
  const { doc, ajv } = await load();
  const op = doc.paths[pathTemplate]?.[method.toLowerCase()];
  if (!op) return [`${method} ${pathTemplate} is not described`];
  let response = op.responses?.[String(status)] ?? op.responses?.default;
  if (!response) return [`${method} ${pathTemplate} has no response ${status}`];
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').pop()!] as typeof response;
  if (status === 204 && !response.content)
    return body === undefined || body === '' || body === null ? [] : [`${method} ${pathTemplate} 204 has a body`];
  const media = contentType.split(';')[0]!.trim();
  const schema = response.content?.[media]?.schema;
  if (!schema) return [`${method} ${pathTemplate} ${status}: no schema for ${media}`];
  const rewritten = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/'));
  const v = ajv.compile(rewritten);
  return v(body) ? [] : describeErrors(v.errors);
}
