import type { Context, Next } from 'koa';
import { badRequest, HubProblem } from './problem.js';

// What a request may carry before any route sees it. PostgreSQL text holds no NUL and jsonb no
// lone surrogate, and a route should never meet a structure deeper than any real body, so all
// three are refused here with a 400 rather than found later as a 500:
//   the path: valid percent-encoding, no NUL once decoded;
//   the body: JSON only (the one multipart route reads its own), UTF-8 only, within the size
//   limit, strictly valid UTF-8, at most MAX_DEPTH levels deep, no NUL or lone surrogate in any
//   string or key.

declare module 'koa' {
  interface Request {
    /** The parsed JSON body (undefined when the request has none). */
    body?: unknown;
    /** A digest of a body its route reads itself (a multipart upload), for Idempotency-Key. */
    bodyDigest?: string;
  }
}

export const MAX_DEPTH = 32;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored, or null when it can. */
export function unstorableText(s: string): string | null {
  if (s.includes('\u0000')) return 'contains a NUL (\\u0000) character';
  if (LONE_SURROGATE.test(s)) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return null;
}

/** Refuses a path that does not decode, or decodes to something no resource can be named. */
export async function checkPath(ctx: Context, next: Next): Promise<void> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(ctx.path);
  } catch {
    throw badRequest('the request path is not valid percent-encoded UTF-8', ['path: malformed percent-encoding']);
  }
  const why = unstorableText(decoded);
  if (why) throw badRequest(`the request path ${why}`, [`path: ${why}`]);
  if (ctx.querystring.toLowerCase().includes('%00')) throw badRequest('the query string contains a NUL (%00)', ['query: contains %00']);
  await next();
}

const hasBody = (ctx: Context): boolean =>
  ctx.get('transfer-encoding') !== '' || (ctx.get('content-length') !== '' && ctx.get('content-length') !== '0');

/**
 * Reads a JSON body into ctx.request.body. `ownBody(ctx)` names the requests whose route reads
 * the body itself (multipart uploads).
 */
export function jsonBody(limitFor: (ctx: Context) => number, ownBody: (ctx: Context) => boolean) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!hasBody(ctx) || ownBody(ctx)) return next();
    const limitBytes = limitFor(ctx);
    if (!ctx.is('application/json')) {
      throw new HubProblem(415, 'unsupported-media-type', 'Unsupported media type', 'send the body as application/json');
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(ctx.get('content-type'))?.[1]?.toLowerCase();
    if (charset && charset !== 'utf-8' && charset !== 'utf8') {
      throw new HubProblem(415, 'unsupported-media-type', 'Unsupported media type', `the body must be UTF-8 (got charset=${charset})`);
    }
    const bytes = await readLimited(ctx, limitBytes);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw badRequest('the body is not valid UTF-8', ['body: invalid UTF-8']);
    }
    if (text.trim() === '') return next();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new HubProblem(400, 'malformed-json', 'Malformed JSON', `the body is not valid JSON: ${(err as Error).message.split('\n')[0]}`);
    }
    const problem = unstorableValue(value);
    if (problem) throw badRequest(`the request body is invalid: ${problem}`, [problem]);
    ctx.request.body = value;
    await next();
  };
}

export async function readLimited(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || 0);
  const tooLarge = () => new HubProblem(413, 'payload-too-large', 'Payload too large', `the body is larger than ${limit} bytes`);
  if (declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so the client gets its 413 instead of a reset
      // connection; past eight times the limit the connection is cut.
      if (size > 8 * limit) {
        ctx.req.destroy();
        break;
      }
      if (size <= limit) chunks.push(chunk);
    }
  } catch (err) {
    // The client went away mid-body: its failure, not ours (and no one reads the answer).
    if ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || ctx.req.destroyed)
      throw badRequest('the client closed the connection before the whole body arrived', ['body: incomplete']);
    throw err;
  }
  if (size > limit) {
    ctx.set('Connection', 'close');
    throw tooLarge();
  }
  return Buffer.concat(chunks);
}

/** Walks a parsed body without recursion: too deep, or a string or key that cannot be stored. */
export function unstorableValue(root: unknown): string | null {
  const stack: Array<{ v: unknown; depth: number; path: string }> = [{ v: root, depth: 0, path: 'body' }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v === 'string') {
      const why = unstorableText(v);
      if (why) return `${path}: ${why}`;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_DEPTH) return `${path}: nested more than ${MAX_DEPTH} levels deep`;
    if (Array.isArray(v)) {
      v.forEach((x, i) => stack.push({ v: x, depth: depth + 1, path: `${path}[${i}]` }));
      continue;
    }
    for (const [k, x] of Object.entries(v)) {
      const why = unstorableText(k);
      if (why) return `${path}: a key ${why}`;
      stack.push({ v: x, depth: depth + 1, path: path === 'body' ? k : `${path}.${k}` });
    }
  }
  return null;
}
