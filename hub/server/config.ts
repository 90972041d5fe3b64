import { randomBytes } from 'node:crypto';
import type { Database } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/migrate.js';
import type { JwtSecrets } from '../access/tokens.js';
import { DEFAULT_RATE_LIMITS, type RateLimits } from '../limits/rate-limit.js';

// A deployment's settings: options first, then the environment, then defaults. Secrets not given
// are generated once and kept in the control schema, so every hub process on the database signs
// and verifies with the same ones.

export interface HubConfig {
  docsUrl: string;
  rateLimits: RateLimits;
  jwt: JwtSecrets;
  auditKey: string;
  /** Largest JSON body accepted. */
  bodyLimit: string;
}

export interface ConfigOptions {
  docsUrl?: string;
  rateLimits?: Partial<RateLimits>;
  jwt?: JwtSecrets;
  auditKey?: string;
  env?: NodeJS.ProcessEnv;
}

export const DEFAULT_DOCS_URL = 'https://svc.dev/docs';

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive whole number of requests per minute (got "${raw}")`);
  return n;
}

async function storedSecret(db: Database, name: string): Promise<string> {
  await db.query(`INSERT INTO ${CONTROL_SCHEMA}.secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [name, randomBytes(32).toString('base64url')]);
  return (await db.query<{ value: string }>(`SELECT value FROM ${CONTROL_SCHEMA}.secrets WHERE name = $1`, [name])).rows[0]!.value;
}

export async function loadConfig(db: Database, opts: ConfigOptions = {}): Promise<HubConfig> {
  const env = opts.env ?? process.env;
  const current = opts.jwt?.current ?? env.SVC_HUB_JWT_SECRET ?? (await storedSecret(db, 'jwt_secret'));
  const previous = opts.jwt ? opts.jwt.previous : env.SVC_HUB_JWT_PREVIOUS_SECRET || undefined;
  return {
    docsUrl: (opts.docsUrl ?? env.SVC_HUB_DOCS_URL ?? DEFAULT_DOCS_URL).replace(/\/+$/, ''),
    rateLimits: {
      perMinute: opts.rateLimits?.perMinute ?? positive(env, 'SVC_HUB_RATE_LIMIT', DEFAULT_RATE_LIMITS.perMinute),
      writesPerMinute: opts.rateLimits?.writesPerMinute ?? positive(env, 'SVC_HUB_WRITE_RATE_LIMIT', DEFAULT_RATE_LIMITS.writesPerMinute),
    },
    jwt: { current, ...(previous ? { previous } : {}) },
    auditKey: opts.auditKey ?? env.SVC_HUB_AUDIT_KEY ?? (await storedSecret(db, 'audit_key')),
    bodyLimit: '1mb',
  };
}
