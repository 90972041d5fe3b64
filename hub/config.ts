import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Database } from './contracts.js';
import { CONTROL_SCHEMA } from './data/sql.js';
import { invalid } from '../engine/errors.js';
import type { JwtSecrets } from './access/tokens.js';
import { checkpointKey, type CheckpointKey } from './audit/checkpoints.js';
import { DEFAULT_RATE_LIMITS, type RateLimits } from './limits/rate-limit.js';
import type { OutboundPolicy } from './net/outbound.js';
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from './webhooks/delivery-worker.js';
import { mailSettings, type MailSettings } from './mail/mailer.js';
import { secretBoxFromEnv, type SecretBox } from './data/secret-box.js';

// A deployment's settings: options first, then the environment, then defaults. Secrets not given
// are generated once and kept in the control schema, so every hub process on the database signs
// and verifies with the same ones; the hub warns about the audit keys kept that way. Kept there,
// they are sealed under SVC_HUB_SECRET_KEY when it is set (data/secret-box.ts).

export interface HubConfig {
  docsUrl: string;
  /** The hub's address as browsers and identity providers reach it (sign-in redirects); absent: the request's own origin. */
  publicUrl?: string;
  rateLimits: RateLimits;
  jwt: JwtSecrets;
  auditKey: string;
  /** Signs audit checkpoints (Ed25519). */
  checkpointKey: CheckpointKey;
  /** Where the hub writes checkpoints (every checkpointEveryRows rows or checkpointIntervalMs); absent: only on demand. */
  checkpointDir?: string;
  checkpointIntervalMs: number;
  checkpointEveryRows: number;
  /** Audit keys that live in the database (and so in the hands of whoever holds it). */
  keysInDatabase: Array<'audit' | 'checkpoint'>;
  /** Seals and opens the secrets kept in the database (SVC_HUB_SECRET_KEY; without it, stored as given). */
  secrets: SecretBox;
  /** Largest JSON body accepted. */
  bodyLimitBytes: number;
  /** Where the hub may send requests on a user's behalf (packs by URL, webhooks). */
  outbound: OutboundPolicy;
  mcp: McpLimits;
  webhooks: WebhookSettings;
  /** Engrams whose BM25 postings this process holds in memory, over all organizations (0: none). */
  cacheEngrams: number;
  /** SMTP for invitations and sign-in links (SVC_HUB_SMTP_URL, SVC_HUB_MAIL_FROM); absent: links are shown to copy. */
  mail?: MailSettings;
}

/** Bounds of the MCP surface (hub/mcp). */
export interface McpLimits {
  /** Open sessions one token may hold; the oldest idle one makes room. */
  maxSessionsPerToken: number;
  /** Open sessions (and so SSE streams) one person may hold over all their tokens. */
  maxSessionsPerUser: number;
  /** Messages in one JSON-RPC batch; each counts against the MCP message limit. */
  maxBatch: number;
  /** A session unused this long is closed. */
  idleSeconds: number;
  /** Largest JSON-RPC message accepted. */
  maxMessageBytes: number;
}

export interface ConfigOptions {
  docsUrl?: string;
  publicUrl?: string;
  rateLimits?: Partial<RateLimits>;
  jwt?: JwtSecrets;
  auditKey?: string;
  /** PKCS#8 PEM of an Ed25519 key. */
  checkpointKey?: string;
  checkpointDir?: string;
  checkpointIntervalMs?: number;
  checkpointEveryRows?: number;
  /** Let outbound requests reach private, loopback and link-local addresses, and plain http. */
  allowPrivateUrls?: boolean;
  outboundTimeoutMs?: number;
  outboundMaxBytes?: number;
  mcp?: Partial<McpLimits>;
  webhooks?: Partial<WebhookSettings>;
  cacheEngrams?: number;
  mail?: MailSettings;
  env?: NodeJS.ProcessEnv;
}

/** About 4 KB of memory per engram held (postings, map entries, the document's JSON): 530 MB resident at 100,000. */
export const DEFAULT_CACHE_ENGRAMS = 200_000;

export const DEFAULT_DOCS_URL = 'https://svc.dev/docs';

/** A whole number from the environment, at least `min`; a clear error when it is not one. */
function positive(env: NodeJS.ProcessEnv, name: string, fallback: number, unit: string, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw invalid(`${name} must be ${min === 1 ? 'a positive whole number' : `a whole number, ${min} or more,`} of ${unit} (got "${raw}")`);
  return n;
}

async function storedSecret(
  db: Database,
  box: SecretBox,
  name: string,
  make: () => string = () => randomBytes(32).toString('base64url'),
): Promise<string> {
  const sealed = box.seal(make());
  await db.query(`INSERT INTO ${CONTROL_SCHEMA}.secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [name, sealed]);
  const stored = await db.query<{ value: string }>(`SELECT value FROM ${CONTROL_SCHEMA}.secrets WHERE name = $1`, [name]);
  return box.open(stored.rows[0]!.value);
}

const newEd25519Pem = (): string => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

/** A PEM given inline, or the path of a file holding one. */
const pemFrom = (v: string): string => (v.includes('-----BEGIN') ? v : readFileSync(v, 'utf8'));

export async function loadConfig(db: Database, opts: ConfigOptions = {}): Promise<HubConfig> {
  const env = opts.env ?? process.env;
  const secrets = secretBoxFromEnv(env);
  const current = opts.jwt?.current ?? env.SVC_HUB_JWT_SECRET ?? (await storedSecret(db, secrets, 'jwt_secret'));
  const previous = opts.jwt ? opts.jwt.previous : env.SVC_HUB_JWT_PREVIOUS_SECRET || undefined;
  const keysInDatabase: HubConfig['keysInDatabase'] = [];
  let auditKey = opts.auditKey ?? env.SVC_HUB_AUDIT_KEY;
  if (!auditKey) {
    auditKey = await storedSecret(db, secrets, 'audit_key');
    keysInDatabase.push('audit');
  }
  let pem = opts.checkpointKey ?? (env.SVC_HUB_CHECKPOINT_KEY ? pemFrom(env.SVC_HUB_CHECKPOINT_KEY) : undefined);
  if (!pem) {
    pem = await storedSecret(db, secrets, 'checkpoint_key', newEd25519Pem);
    keysInDatabase.push('checkpoint');
  }
  const publicUrl = opts.publicUrl ?? (env.SVC_HUB_PUBLIC_URL || undefined);
  if (publicUrl !== undefined && !/^https?:\/\/[^/?#\s]+\/?$/.test(publicUrl))
    throw invalid(`SVC_HUB_PUBLIC_URL must be an origin such as https://hub.example.com (got "${publicUrl}")`);
  const mail = mailSettings(env, opts.mail);
  return {
    ...(mail ? { mail } : {}),
    docsUrl: (opts.docsUrl ?? env.SVC_HUB_DOCS_URL ?? DEFAULT_DOCS_URL).replace(/\/+$/, ''),
    ...(publicUrl ? { publicUrl: publicUrl.replace(/\/$/, '') } : {}),
    rateLimits: {
      perMinute: opts.rateLimits?.perMinute ?? positive(env, 'SVC_HUB_RATE_LIMIT', DEFAULT_RATE_LIMITS.perMinute, 'requests per minute'),
      writesPerMinute:
        opts.rateLimits?.writesPerMinute ??
        positive(env, 'SVC_HUB_WRITE_RATE_LIMIT', DEFAULT_RATE_LIMITS.writesPerMinute, 'writes per minute'),
      authFailuresPerMinute:
        opts.rateLimits?.authFailuresPerMinute ??
        positive(env, 'SVC_HUB_AUTH_FAILURE_LIMIT', DEFAULT_RATE_LIMITS.authFailuresPerMinute, 'failed authentications per minute'),
      mcpMessagesPerMinute:
        opts.rateLimits?.mcpMessagesPerMinute ??
        positive(env, 'SVC_HUB_MCP_MESSAGE_LIMIT', DEFAULT_RATE_LIMITS.mcpMessagesPerMinute, 'MCP messages per minute'),
      ingestPerMinute:
        opts.rateLimits?.ingestPerMinute ?? positive(env, 'SVC_HUB_INGEST_LIMIT', DEFAULT_RATE_LIMITS.ingestPerMinute, 'writes per minute'),
    },
    mcp: {
      maxSessionsPerToken: opts.mcp?.maxSessionsPerToken ?? positive(env, 'SVC_HUB_MCP_SESSIONS_PER_TOKEN', 16, 'sessions'),
      maxSessionsPerUser: opts.mcp?.maxSessionsPerUser ?? positive(env, 'SVC_HUB_MCP_SESSIONS_PER_USER', 32, 'sessions'),
      maxBatch: opts.mcp?.maxBatch ?? positive(env, 'SVC_HUB_MCP_MAX_BATCH', 20, 'messages'),
      idleSeconds: opts.mcp?.idleSeconds ?? positive(env, 'SVC_HUB_MCP_IDLE_SECONDS', 1800, 'seconds'),
      maxMessageBytes: opts.mcp?.maxMessageBytes ?? positive(env, 'SVC_HUB_MCP_MAX_MESSAGE_BYTES', 1024 * 1024, 'bytes'),
    },
    webhooks: {
      timeoutMs:
        opts.webhooks?.timeoutMs ?? positive(env, 'SVC_HUB_WEBHOOK_TIMEOUT', DEFAULT_WEBHOOK_SETTINGS.timeoutMs / 1000, 'seconds') * 1000,
      maxAttempts:
        opts.webhooks?.maxAttempts ?? positive(env, 'SVC_HUB_WEBHOOK_ATTEMPTS', DEFAULT_WEBHOOK_SETTINGS.maxAttempts, 'attempts'),
      retryBaseMs:
        opts.webhooks?.retryBaseMs ??
        positive(env, 'SVC_HUB_WEBHOOK_RETRY_BASE', DEFAULT_WEBHOOK_SETTINGS.retryBaseMs / 1000, 'seconds') * 1000,
      retryCapMs: opts.webhooks?.retryCapMs ?? DEFAULT_WEBHOOK_SETTINGS.retryCapMs,
      pollMs: opts.webhooks?.pollMs ?? DEFAULT_WEBHOOK_SETTINGS.pollMs,
      secrets,
    },
    cacheEngrams: opts.cacheEngrams ?? positive(env, 'SVC_HUB_CACHE_ENGRAMS', DEFAULT_CACHE_ENGRAMS, 'engrams', 0),
    jwt: { current, ...(previous ? { previous } : {}) },
    auditKey,
    checkpointKey: checkpointKey(pem),
    checkpointDir: opts.checkpointDir ?? (env.SVC_HUB_CHECKPOINT_DIR || undefined),
    checkpointIntervalMs: opts.checkpointIntervalMs ?? positive(env, 'SVC_HUB_CHECKPOINT_INTERVAL', 60, 'seconds') * 1000,
    checkpointEveryRows: opts.checkpointEveryRows ?? positive(env, 'SVC_HUB_CHECKPOINT_ROWS', 100, 'rows'),
    keysInDatabase,
    secrets,
    bodyLimitBytes: 1024 * 1024,
    outbound: {
      allowPrivate: opts.allowPrivateUrls ?? env.SVC_HUB_ALLOW_PRIVATE_URLS === '1',
      timeoutMs: opts.outboundTimeoutMs ?? 10_000,
      maxBytes: opts.outboundMaxBytes ?? 20 * 1024 * 1024,
    },
  };
}
