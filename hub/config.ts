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
import { logLevelFrom } from './observe/logger.js';
import { metricsToken } from './monitor/metrics.js';
import { unreadySeconds } from './monitor/ready.js';

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

// ---------------------------------------------------------------------------------------------
// One view of the configuration (`svc hub config`): every setting the hub reads, its effective
// value and where it came from, secrets redacted; and the check a start runs first, which names
// every wrong or contradictory setting, one line each, instead of the first one it trips on.

/** Where an effective setting came from. */
export type SettingSource = 'default' | 'environment' | 'flag' | 'database';

export interface EffectiveSetting {
  /** The environment variable (or --flag) that sets it. */
  name: string;
  /** What it governs. */
  about: string;
  /** The value in effect, as text; a secret's is never shown ("(set)", "(generated, kept in the database)"). */
  value: string;
  source: SettingSource;
  secret?: boolean;
}

/** The flags of `svc hub` that are settings too. */
export interface StartFlags {
  port?: number;
  host?: string;
  data?: string;
}

type Check = (raw: string, env: NodeJS.ProcessEnv) => string | undefined;

interface SettingSpec {
  name: string;
  about: string;
  /** The default as shown. */
  fallback: string;
  secret?: boolean;
  /** Secrets not given are generated once into the control schema. */
  generated?: boolean;
  /** A value shown redacted another way (a URL's password). */
  show?: (raw: string) => string;
  check?: Check;
}

const wholeNumber =
  (min: number, unit: string): Check =>
  (raw) => {
    const n = Number(raw);
    return Number.isInteger(n) && n >= min
      ? undefined
      : `must be ${min === 1 ? 'a positive whole number' : `a whole number, ${min} or more,`} of ${unit} (got "${raw}")`;
  };
const seconds0 = wholeNumber(0, 'seconds, 0 for none');

/** A URL with its password (and any query) replaced: postgres://hub:***@db/hub. */
function withoutPassword(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password) u.password = '***';
    if (u.search) u.search = '?***';
    return u.toString();
  } catch {
    return '(set, not a URL)';
  }
}

/** A check by the function that reads the setting: its refusal, one line. */
function thrown(read: (env: NodeJS.ProcessEnv) => unknown): Check {
  return (_raw, env) => {
    try {
      read(env);
      return undefined;
    } catch (err) {
      return (err as Error).message.split('\n')[0];
    }
  };
}

const origin: Check = (raw) =>
  /^https?:\/\/[^/?#\s]+\/?$/.test(raw) ? undefined : `must be an origin such as https://hub.example.com (got "${raw}")`;

/** Every setting the hub reads from its environment, in the order `svc hub config` lists them. */
export const SETTINGS: readonly SettingSpec[] = [
  {
    name: 'DATABASE_URL',
    about: 'the PostgreSQL server (else PGlite in --data)',
    fallback: 'PGlite in --data',
    show: withoutPassword,
    check: (raw) => (/^postgres(ql)?:\/\//.test(raw) ? undefined : 'must be a postgres:// or postgresql:// URL'),
  },
  { name: 'SVC_HUB_DATABASE_WAIT', about: 'seconds a start waits for an unreachable PostgreSQL', fallback: '60', check: seconds0 },
  { name: 'SVC_HUB_STATEMENT_TIMEOUT', about: 'seconds a database statement may run', fallback: '30', check: seconds0 },
  {
    name: 'SVC_HUB_IDLE_TRANSACTION_TIMEOUT',
    about: 'seconds a transaction may sit idle before it is rolled back',
    fallback: '60',
    check: seconds0,
  },
  {
    name: 'SVC_HUB_PUBLIC_URL',
    about: "the hub's address in browsers (sign-in redirects, links)",
    fallback: "the request's origin",
    check: origin,
  },
  {
    name: 'SVC_HUB_DOCS_URL',
    about: 'where problem documents point',
    fallback: DEFAULT_DOCS_URL,
    check: (raw) => (/^https?:\/\/\S+$/.test(raw) ? undefined : `must be an http(s) URL (got "${raw}")`),
  },
  {
    name: 'SVC_HUB_RATE_LIMIT',
    about: 'requests per minute per token',
    fallback: String(DEFAULT_RATE_LIMITS.perMinute),
    check: wholeNumber(1, 'requests per minute'),
  },
  {
    name: 'SVC_HUB_WRITE_RATE_LIMIT',
    about: 'writes per minute per token',
    fallback: String(DEFAULT_RATE_LIMITS.writesPerMinute),
    check: wholeNumber(1, 'writes per minute'),
  },
  {
    name: 'SVC_HUB_AUTH_FAILURE_LIMIT',
    about: 'failed authentications per minute per address',
    fallback: String(DEFAULT_RATE_LIMITS.authFailuresPerMinute),
    check: wholeNumber(1, 'failed authentications per minute'),
  },
  {
    name: 'SVC_HUB_MCP_MESSAGE_LIMIT',
    about: 'MCP messages per minute per token',
    fallback: String(DEFAULT_RATE_LIMITS.mcpMessagesPerMinute),
    check: wholeNumber(1, 'MCP messages per minute'),
  },
  {
    name: 'SVC_HUB_INGEST_LIMIT',
    about: 'writes per minute per user through MCP',
    fallback: String(DEFAULT_RATE_LIMITS.ingestPerMinute),
    check: wholeNumber(1, 'writes per minute'),
  },
  { name: 'SVC_HUB_MCP_SESSIONS_PER_TOKEN', about: 'open MCP sessions per token', fallback: '16', check: wholeNumber(1, 'sessions') },
  { name: 'SVC_HUB_MCP_SESSIONS_PER_USER', about: 'open MCP sessions per person', fallback: '32', check: wholeNumber(1, 'sessions') },
  { name: 'SVC_HUB_MCP_MAX_BATCH', about: 'messages in one JSON-RPC batch', fallback: '20', check: wholeNumber(1, 'messages') },
  {
    name: 'SVC_HUB_MCP_IDLE_SECONDS',
    about: 'seconds before an unused MCP session closes',
    fallback: '1800',
    check: wholeNumber(1, 'seconds'),
  },
  {
    name: 'SVC_HUB_MCP_MAX_MESSAGE_BYTES',
    about: 'largest JSON-RPC message',
    fallback: String(1024 * 1024),
    check: wholeNumber(1, 'bytes'),
  },
  {
    name: 'SVC_HUB_WEBHOOK_TIMEOUT',
    about: 'seconds a webhook receiver has to answer',
    fallback: String(DEFAULT_WEBHOOK_SETTINGS.timeoutMs / 1000),
    check: wholeNumber(1, 'seconds'),
  },
  {
    name: 'SVC_HUB_WEBHOOK_RETRY_BASE',
    about: 'seconds before the first retry (doubling up to an hour)',
    fallback: String(DEFAULT_WEBHOOK_SETTINGS.retryBaseMs / 1000),
    check: wholeNumber(1, 'seconds'),
  },
  {
    name: 'SVC_HUB_WEBHOOK_ATTEMPTS',
    about: 'attempts per delivery before giving up',
    fallback: String(DEFAULT_WEBHOOK_SETTINGS.maxAttempts),
    check: wholeNumber(1, 'attempts'),
  },
  {
    name: 'SVC_HUB_ALLOW_PRIVATE_URLS',
    about: 'packs by URL and webhooks may reach private addresses and http',
    fallback: '0',
    check: (raw) => (raw === '0' || raw === '1' ? undefined : `must be 1 or 0 (got "${raw}")`),
  },
  {
    name: 'SVC_HUB_CACHE_ENGRAMS',
    about: 'engrams whose postings this process holds in memory (0: none)',
    fallback: String(DEFAULT_CACHE_ENGRAMS),
    check: wholeNumber(0, 'engrams'),
  },
  { name: 'SVC_HUB_DRAIN_SECONDS', about: 'on SIGTERM, how long queued audit rows may take', fallback: '10', check: seconds0 },
  { name: 'SVC_HUB_AUDIT_KEY', about: "the audit chain's HMAC key", fallback: '', secret: true, generated: true },
  {
    name: 'SVC_HUB_CHECKPOINT_KEY',
    about: 'Ed25519 key (PEM, or a file holding it) that signs audit checkpoints',
    fallback: '',
    secret: true,
    generated: true,
    check: (raw) => {
      try {
        checkpointKey(pemFrom(raw));
        return undefined;
      } catch (err) {
        return raw.includes('-----BEGIN')
          ? 'is not an Ed25519 private key in PKCS#8 PEM'
          : `names no readable Ed25519 PEM file (${(err as Error).message.split('\n')[0]})`;
      }
    },
  },
  { name: 'SVC_HUB_CHECKPOINT_DIR', about: 'where signed audit checkpoints are written', fallback: 'none (only on demand)' },
  {
    name: 'SVC_HUB_CHECKPOINT_INTERVAL',
    about: 'seconds between checkpoints of a grown chain',
    fallback: '60',
    check: wholeNumber(1, 'seconds'),
  },
  {
    name: 'SVC_HUB_CHECKPOINT_ROWS',
    about: 'rows after which a chain is checkpointed at once',
    fallback: '100',
    check: wholeNumber(1, 'rows'),
  },
  { name: 'SVC_HUB_JWT_SECRET', about: 'signs session and OAuth tokens', fallback: '', secret: true, generated: true },
  { name: 'SVC_HUB_JWT_PREVIOUS_SECRET', about: 'the one before it, still accepted (rotation)', fallback: 'none', secret: true },
  {
    name: 'SVC_HUB_SMTP_URL',
    about: 'SMTP server for invitations and sign-in links',
    fallback: 'none (links shown to copy)',
    show: withoutPassword,
  },
  { name: 'SVC_HUB_MAIL_FROM', about: 'their sender', fallback: 'none' },
  {
    name: 'SVC_HUB_SECRET_KEY',
    about: 'seals the secrets kept in the database (AES-256-GCM)',
    fallback: 'none (stored in clear)',
    secret: true,
    check: thrown(secretBoxFromEnv),
  },
  {
    name: 'SVC_HUB_SECRET_KEY_OLD',
    about: 'earlier keys that still open what they sealed',
    fallback: 'none',
    secret: true,
    check: thrown(secretBoxFromEnv),
  },
  { name: 'SVC_HUB_LOG_LEVEL', about: 'the least level logged', fallback: 'info', check: thrown(logLevelFrom) },
  {
    name: 'SVC_HUB_METRICS_TOKEN',
    about: 'the bearer token /metrics asks for',
    fallback: 'none (/metrics off)',
    secret: true,
    check: thrown(metricsToken),
  },
  {
    name: 'SVC_HUB_UNREADY_SECONDS',
    about: 'how long a stopping hub serves on while /ready answers 503',
    fallback: '0',
    check: thrown(unreadySeconds),
  },
];

const GENERATED = '(generated, kept in the database)';

/** Each setting in effect and where it came from; a secret's value is never in it. */
export function effectiveSettings(
  env: NodeJS.ProcessEnv = process.env,
  flags: StartFlags = {},
  dataDefault = '<store>/hub',
): EffectiveSetting[] {
  const rows: EffectiveSetting[] = [
    flagRow('--port', 'port the hub listens on', flags.port, '8080'),
    flagRow('--host', 'address the hub binds', flags.host, '127.0.0.1'),
    flagRow('--data', 'PGlite data folder (and where models are kept)', flags.data, dataDefault),
  ];
  for (const s of SETTINGS) {
    const raw = env[s.name];
    const set = raw !== undefined && raw !== '';
    const row: EffectiveSetting = {
      name: s.name,
      about: s.about,
      value: set ? (s.secret ? '(set)' : s.show ? s.show(raw) : raw) : s.generated ? GENERATED : s.fallback,
      source: set ? 'environment' : s.generated ? 'database' : 'default',
    };
    if (s.secret) row.secret = true;
    rows.push(row);
  }
  return rows;
}

function flagRow(name: string, about: string, given: string | number | undefined, fallback: string): EffectiveSetting {
  return given === undefined ? { name, about, value: fallback, source: 'default' } : { name, about, value: String(given), source: 'flag' };
}

/**
 * Every wrong or contradictory setting, one line each (empty: the hub may start). A start runs
 * this before it opens the database, so an operator sees all of them at once.
 */
export function settingProblems(env: NodeJS.ProcessEnv = process.env, flags: StartFlags = {}): string[] {
  const problems: string[] = [];
  const value = (name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  for (const s of SETTINGS) {
    const raw = value(s.name);
    if (raw === undefined || !s.check) continue;
    const why = s.check(raw, env);
    if (why && !problems.includes(why)) problems.push(why.startsWith('SVC_HUB_') ? why : `${s.name} ${why}`);
  }
  const bad = new Set(problems.map((p) => p.split(' ')[0]));
  const num = (name: string, fallback: number): number => (value(name) === undefined || bad.has(name) ? fallback : Number(value(name)));

  if (flags.port !== undefined && (!Number.isInteger(flags.port) || flags.port < 0 || flags.port > 65535))
    problems.push(`--port must be a port number, 0 to 65535 (got ${flags.port})`);
  try {
    mailSettings(env);
  } catch (err) {
    problems.push((err as Error).message);
  }
  const jwt = value('SVC_HUB_JWT_SECRET');
  if (jwt && jwt === value('SVC_HUB_JWT_PREVIOUS_SECRET'))
    problems.push(
      'SVC_HUB_JWT_PREVIOUS_SECRET equals SVC_HUB_JWT_SECRET: on a rotation the new secret goes in SVC_HUB_JWT_SECRET, the old one in PREVIOUS',
    );
  if (!value('SVC_HUB_CHECKPOINT_DIR'))
    for (const name of ['SVC_HUB_CHECKPOINT_INTERVAL', 'SVC_HUB_CHECKPOINT_ROWS'])
      if (value(name) !== undefined)
        problems.push(
          `${name} is set but SVC_HUB_CHECKPOINT_DIR is not: checkpoints are written only to a folder; set SVC_HUB_CHECKPOINT_DIR, or unset ${name}`,
        );
  const perToken = num('SVC_HUB_MCP_SESSIONS_PER_TOKEN', 16);
  const perUser = num('SVC_HUB_MCP_SESSIONS_PER_USER', 32);
  if (perToken > perUser)
    problems.push(
      `SVC_HUB_MCP_SESSIONS_PER_TOKEN (${perToken}) is above SVC_HUB_MCP_SESSIONS_PER_USER (${perUser}): one person's token can never hold more than the person may`,
    );
  const retryBase = num('SVC_HUB_WEBHOOK_RETRY_BASE', DEFAULT_WEBHOOK_SETTINGS.retryBaseMs / 1000);
  if (retryBase * 1000 > DEFAULT_WEBHOOK_SETTINGS.retryCapMs)
    problems.push(
      `SVC_HUB_WEBHOOK_RETRY_BASE (${retryBase} s) is above the longest wait between retries (${DEFAULT_WEBHOOK_SETTINGS.retryCapMs / 1000} s)`,
    );
  const writes = num('SVC_HUB_WRITE_RATE_LIMIT', DEFAULT_RATE_LIMITS.writesPerMinute);
  const all = num('SVC_HUB_RATE_LIMIT', DEFAULT_RATE_LIMITS.perMinute);
  if (value('SVC_HUB_WRITE_RATE_LIMIT') !== undefined && writes > all)
    problems.push(
      `SVC_HUB_WRITE_RATE_LIMIT (${writes}) is above SVC_HUB_RATE_LIMIT (${all}): a write is a request too, so it could never be reached`,
    );
  return problems;
}

/** Settings that are allowed but unsafe: the start warns about each, `svc hub config` lists them. */
export function settingWarnings(env: NodeJS.ProcessEnv = process.env): string[] {
  const warnings: string[] = [];
  const publicUrl = env.SVC_HUB_PUBLIC_URL;
  if (publicUrl && !origin(publicUrl, env)) {
    const u = new URL(publicUrl);
    const loopback = u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\./.test(u.hostname);
    if (u.protocol === 'http:' && !loopback)
      warnings.push(
        `SVC_HUB_PUBLIC_URL is plain http on ${u.hostname}: sign-in cookies and API keys cross the network in clear; put the hub behind https and name that origin`,
      );
  }
  return warnings;
}
