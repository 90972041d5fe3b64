import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import type { HubState } from '../contracts.js';
import { canonicalJson } from '../../engine/canonical-json.js';
import { ident } from '../data/sql.js';
import type { SecretBox } from '../data/secret-box.js';
import { badRequest, HubProblem } from './problem.js';

// Idempotency-Key on writes (after the IETF httpapi draft "The Idempotency-Key HTTP Header
// Field"): the key is claimed in the write's own transaction, so of two requests with one key
// the second waits on the first's row and then replays its answer; a request whose write fails
// rolls its claim back with it, so it may be retried. The same key with another request (method,
// path or body) is a 422. Keys belong to their user and are kept 24 hours. A kept answer may hold
// a secret shown once (a new key, a webhook's secret): it is sealed like every stored secret
// (data/secret-box.ts, under SVC_HUB_SECRET_KEY).

const KEY = /^[\x21-\x7e]{1,255}$/;
const KEEP_HOURS = 24;
/** Answer headers a replay repeats. */
const KEPT_HEADERS = ['location', 'svc-learn-action'];

export function idempotency(isWrite: (method: string, path: string) => boolean, box: SecretBox): Middleware<HubState> {
  return async (ctx, next) => {
    const key = ctx.get('idempotency-key');
    if (!key || !ctx.state.principal || !isWrite(ctx.method, ctx.path)) return next();
    if (!KEY.test(key)) throw badRequest('Idempotency-Key must be 1 to 255 printable ASCII characters', ['Idempotency-Key: invalid']);
    const p = ctx.state.principal;
    const db = ctx.state.db;
    const s = ident(p.org.schema);
    // The body is read before the claim (a multipart upload by its middleware): the claim opens
    // the write's transaction, which must never wait on a client's body.
    const body = ctx.request.bodyDigest ?? (ctx.request.body === undefined ? '' : canonicalJson(ctx.request.body));
    const hash = createHash('sha256').update(`${ctx.method} ${ctx.path}?${ctx.querystring}\n${body}`).digest('hex');
    await db.query(`DELETE FROM ${s}.idempotency_keys WHERE user_id = $1 AND created_at < now() - interval '${KEEP_HOURS} hours'`, [
      p.userId,
    ]);
    // Waits here while another transaction holds this key; then either wins it or finds its answer.
    const claimed = await db.query(
      `INSERT INTO ${s}.idempotency_keys (user_id, key, request_hash) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING key`,
      [p.userId, key, hash],
    );
    if (claimed.rows.length === 0) {
      const prior = (
        await db.query<{ request_hash: string; status: number; response: unknown; headers: Record<string, string> }>(
          `SELECT request_hash, status, response, headers FROM ${s}.idempotency_keys WHERE user_id = $1 AND key = $2`,
          [p.userId, key],
        )
      ).rows[0]!;
      if (prior.request_hash !== hash) {
        throw new HubProblem(
          422,
          'idempotency-key-reused',
          'Idempotency-Key reused',
          `Idempotency-Key "${key}" was used with another request in the last ${KEEP_HOURS} hours; use a new key for a new request`,
        );
      }
      ctx.status = Number(prior.status);
      for (const [k, v] of Object.entries(prior.headers)) ctx.set(k, v);
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = unseal(box, prior.response) ?? undefined;
      ctx.state.auditDetails = { idempotent_replay: key };
      return;
    }
    await next();
    if (ctx.status >= 400) return; // rolled back with the write: the client may try again
    const headers = Object.fromEntries(KEPT_HEADERS.map((h) => [h, ctx.response.get(h)]).filter(([, v]) => v));
    const response = ctx.body === undefined || ctx.body === null ? null : typeof ctx.body === 'string' ? jsonOrText(ctx.body) : ctx.body;
    await db.query(
      `UPDATE ${s}.idempotency_keys SET status = $3, response = $4::jsonb, headers = $5::jsonb WHERE user_id = $1 AND key = $2`,
      [
        p.userId,
        key,
        ctx.status,
        JSON.stringify(box.keyId && response !== null ? { sealed: box.seal(JSON.stringify(response)) } : response),
        JSON.stringify(headers),
      ],
    );
  };
}

/** A kept answer as it was sent: opened when it was sealed. */
function unseal(box: SecretBox, kept: unknown): unknown {
  const sealed = (kept as { sealed?: unknown } | null)?.sealed;
  return kept && typeof kept === 'object' && Object.keys(kept).length === 1 && typeof sealed === 'string'
    ? JSON.parse(box.open(sealed))
    : kept;
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
