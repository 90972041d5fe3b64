import { SvcError, type ErrorKind } from '../../engine/errors.js';

// Every error the hub answers is an RFC 9457 problem document, built here and only here.

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  /** For validation errors: one line per broken rule, each naming the field. */
  errors?: string[];
  /** The request's id (its X-Request-Id answer header): the key to its line in the hub's log. */
  request_id?: string;
  [member: string]: unknown;
}

/** An error a route throws on purpose; the central handler turns it into a problem document. */
export class HubProblem extends Error {
  readonly status: number;
  /** The last segment of the `type` URI, e.g. `insufficient-permission`. */
  readonly slug: string;
  readonly title: string;
  readonly errors?: string[];
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers?: Record<string, string>;
  /** Extension members of the document, e.g. `violated-policies` on 429. */
  readonly members?: Record<string, unknown>;

  constructor(
    status: number,
    slug: string,
    title: string,
    detail: string,
    extra: { errors?: string[]; headers?: Record<string, string>; members?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.name = 'HubProblem';
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.errors = extra.errors;
    this.headers = extra.headers;
    this.members = extra.members;
  }
}

export const badRequest = (detail: string, errors?: string[]): HubProblem =>
  new HubProblem(400, 'validation-error', 'Invalid request', detail, { errors });
/**
 * 401 with the RFC 6750 challenge: no error code when no credentials came (the client should
 * just send some), `invalid_request` for a malformed header, `invalid_token` for a bad token.
 */
export const unauthorized = (detail: string, error?: 'invalid_request' | 'invalid_token'): HubProblem =>
  new HubProblem(401, 'invalid-token', 'Missing or invalid token', detail, {
    headers: {
      'WWW-Authenticate': `Bearer realm="svc"${error ? `, error="${error}", error_description="${detail.replace(/["\\]/g, "'")}"` : ''}`,
    },
  });
export const forbidden = (detail: string): HubProblem => new HubProblem(403, 'insufficient-permission', 'Insufficient permission', detail);
/** Also for resources hidden by permissions: the body never tells the two apart. */
export const notFoundProblem = (detail: string): HubProblem => new HubProblem(404, 'not-found', 'Not found', detail);
export const conflictProblem = (detail: string): HubProblem => new HubProblem(409, 'conflict', 'Conflict', detail);

const KIND_STATUS: Record<ErrorKind, [number, string, string]> = {
  invalid: [400, 'validation-error', 'Invalid request'],
  not_found: [404, 'not-found', 'Not found'],
  forbidden: [403, 'insufficient-permission', 'Insufficient permission'],
  conflict: [409, 'conflict', 'Conflict'],
  no_results: [404, 'not-found', 'Not found'],
  storage: [503, 'storage-unavailable', 'Storage unavailable'],
};

/** The engine's refusals (SvcError) as problems; anything else is a 500 with no internals shown. */
export function toProblem(err: unknown): HubProblem {
  if (err instanceof HubProblem) return err;
  if (err instanceof SvcError) {
    const [status, slug, title] = KIND_STATUS[err.kind];
    return new HubProblem(status, slug, title, err.message, { errors: err.details.length ? err.details : undefined });
  }
  return new HubProblem(500, 'internal-error', 'Internal server error', 'the server could not complete the request; it has been logged');
}

export function problemDocument(p: HubProblem, docsUrl: string, instance: string, requestId?: string): ProblemDocument {
  const doc: ProblemDocument = {
    ...p.members,
    type: `${docsUrl}/errors/${p.slug}`,
    title: p.title,
    status: p.status,
    detail: p.message,
    instance,
  };
  if (p.errors?.length) doc.errors = p.errors;
  if (requestId) doc.request_id = requestId;
  return doc;
}
