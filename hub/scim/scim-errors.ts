import { SvcError } from '../../engine/errors.js';
import { HubProblem } from '../http/problem.js';

// SCIM answers its errors in its own shape (RFC 7644 §3.12), not as problem documents: status
// as a string, and a scimType the client can act on. Everything a SCIM route throws becomes one
// of these; anything unexpected is a bare 500 with nothing internal in it.

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

export class ScimError extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly scimType?: ScimType,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ScimError';
  }
}

export const scimInvalid = (scimType: ScimType, detail: string): ScimError => new ScimError(400, detail, scimType);
export const scimNotFound = (detail: string): ScimError => new ScimError(404, detail);

/** PostgreSQL's unique_violation: two writers raced for one userName. */
const isUniqueViolation = (err: unknown): boolean => (err as { code?: string })?.code === '23505';

export function toScimError(err: unknown): ScimError {
  if (err instanceof ScimError) return err;
  if (err instanceof HubProblem) {
    // The hub's own checks before a route (token, body size, media type, malformed JSON).
    const scimType = err.slug === 'malformed-json' || err.slug === 'validation-error' ? 'invalidSyntax' : undefined;
    return new ScimError(err.status, err.message, scimType, err.headers ?? {});
  }
  if (err instanceof SvcError) {
    if (err.kind === 'conflict') return new ScimError(409, err.message, 'uniqueness');
    if (err.kind === 'not_found') return new ScimError(404, err.message);
    if (err.kind === 'invalid') return new ScimError(400, err.message, 'invalidValue');
  }
  if (isUniqueViolation(err)) return new ScimError(409, 'a resource with that unique attribute exists already', 'uniqueness');
  return new ScimError(500, 'the server could not complete the request; it has been logged');
}

export function errorBody(e: ScimError): Record<string, unknown> {
  return { schemas: [ERROR_SCHEMA], status: String(e.status), ...(e.scimType ? { scimType: e.scimType } : {}), detail: e.message };
}
