// One error type for everything the engine refuses or cannot do. The CLI turns it into
// one line and an exit code; the hub will turn it into an RFC 9457 problem document.

export type ErrorKind =
  | 'invalid' // bad input: a field, a flag, a JSON argument
  | 'not_found' // no such engram (or hidden by permissions)
  | 'forbidden' // the caller may see it but not do this (the hub's policy)
  | 'conflict' // state forbids it: promote a retired engram, duplicate id
  | 'no_results' // a search found nothing (exit 2 on the CLI)
  | 'storage'; // the store cannot be read or written

/** On every SvcError's prototype, whichever copy of this module made it (see below). */
const SVC_ERROR = Symbol.for('svc.error');

export class SvcError extends Error {
  readonly kind: ErrorKind;
  /** For `invalid`: one line per broken rule, each naming the field. */
  readonly details: string[];

  constructor(kind: ErrorKind, message: string, details: string[] = []) {
    super(message);
    this.name = 'SvcError';
    this.kind = kind;
    this.details = details;
  }

  /**
   * `svc hub` runs as ES modules beside the CLI's bundle (scripts/bundle-cli.ts), so that process
   * holds two copies of this module: the dispatcher's `instanceof SvcError` must know the hub's
   * errors too. Subclasses keep the ordinary check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== SvcError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && SVC_ERROR in value;
  }
}
Object.defineProperty(SvcError.prototype, SVC_ERROR, { value: true });

export function invalid(message: string, details: string[] = []): SvcError {
  return new SvcError('invalid', message, details);
}

export function notFound(message: string): SvcError {
  return new SvcError('not_found', message);
}

export function conflict(message: string): SvcError {
  return new SvcError('conflict', message);
}
