import { randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../../engine/errors.js';
import type { Org, Queryable, Role } from '../contracts.js';
import { ident } from '../data/migrate.js';
import { authChanged } from '../access/epoch.js';

// An organization's identity providers: where its people sign in. Admins configure them through
// /api/v1/admin/identity-providers; the client secret is stored and never shown again.

export type ProviderKind = 'oidc' | 'github' | 'gitlab';
export const PROVIDER_KINDS: readonly ProviderKind[] = ['oidc', 'github', 'gitlab'];

export interface IdentityProvider {
  id: string;
  name: string;
  kind: ProviderKind;
  issuer: string;
  client_id: string;
  allowed_domains: string[];
  create_users: boolean;
  default_role: Role;
  created_at: string;
  updated_at: string;
}

/** What the login flow needs besides the public fields. */
export interface ProviderWithSecret extends IdentityProvider {
  client_secret: string;
}

export interface ProviderInput {
  name?: string;
  kind?: ProviderKind;
  issuer?: string;
  client_id?: string;
  client_secret?: string;
  allowed_domains?: string[];
  create_users?: boolean;
  default_role?: Role;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,39}$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const DEFAULT_BASE: Partial<Record<ProviderKind, string>> = { github: 'https://github.com', gitlab: 'https://gitlab.com' };

/** Plain http is for a provider on this machine only (tests, a developer's own IdP). */
export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

function checkIssuer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(`issuer "${raw}" is not a URL`);
  }
  if (url.protocol !== 'https:' && !isLoopbackHttp(url)) throw invalid(`issuer "${raw}" must be an https URL (plain http only on loopback)`);
  if (url.username || url.password || url.search || url.hash) throw invalid(`issuer "${raw}" must not carry credentials, a query or a fragment`);
  return url.href.replace(/\/$/, '');
}

function checkInput(input: ProviderInput, creating: boolean): void {
  if (creating || input.name !== undefined) {
    if (typeof input.name !== 'string' || !NAME.test(input.name)) throw invalid('name must be 1 to 40 lowercase letters, digits or "-", starting with a letter or digit');
  }
  if (creating && !PROVIDER_KINDS.includes(input.kind as ProviderKind)) throw invalid(`kind must be one of ${PROVIDER_KINDS.join(', ')}`);
  for (const f of ['client_id', 'client_secret'] as const) {
    if ((creating || input[f] !== undefined) && (typeof input[f] !== 'string' || input[f]!.length === 0 || input[f]!.length > 500)) throw invalid(`${f} must be a string of 1 to 500 characters`);
  }
  for (const d of input.allowed_domains ?? []) if (!DOMAIN.test(d)) throw invalid(`allowed_domains: "${d}" is not a lowercase domain name`);
}

const COLUMNS = 'id, name, kind, issuer, client_id, allowed_domains, create_users, default_role, created_at, updated_at';

const toProvider = (r: IdentityProvider): IdentityProvider => ({
  ...r,
  allowed_domains: r.allowed_domains ?? [],
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

export async function createProvider(db: Queryable, org: Org, input: ProviderInput): Promise<IdentityProvider> {
  checkInput(input, true);
  const issuerRaw = input.issuer ?? DEFAULT_BASE[input.kind!];
  if (!issuerRaw) throw invalid('issuer is required for an oidc provider');
  const r = await db.query<IdentityProvider>(
    `INSERT INTO ${ident(org.schema)}.identity_providers (id, name, kind, issuer, client_id, client_secret, allowed_domains, create_users, default_role)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
    [randomUUID(), input.name, input.kind, checkIssuer(issuerRaw), input.client_id, input.client_secret, input.allowed_domains ?? [], input.create_users ?? false, input.default_role ?? 'viewer'],
  );
  if (!r.rows[0]) throw conflict(`an identity provider named "${input.name}" exists already`);
  return toProvider(r.rows[0]);
}

export async function listProviders(db: Queryable, org: Org): Promise<IdentityProvider[]> {
  return (await db.query<IdentityProvider>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.identity_providers ORDER BY name`)).rows.map(toProvider);
}

export async function getProvider(db: Queryable, org: Org, id: string): Promise<IdentityProvider | null> {
  const r = await db.query<IdentityProvider>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.identity_providers WHERE id = $1`, [id]);
  return r.rows[0] ? toProvider(r.rows[0]) : null;
}

export async function providerByName(db: Queryable, org: Org, name: string): Promise<ProviderWithSecret | null> {
  const r = await db.query<ProviderWithSecret>(`SELECT ${COLUMNS}, client_secret FROM ${ident(org.schema)}.identity_providers WHERE name = $1`, [name]);
  return r.rows[0] ? { ...toProvider(r.rows[0]), client_secret: r.rows[0].client_secret } : null;
}

export async function updateProvider(db: Queryable, org: Org, id: string, input: ProviderInput): Promise<IdentityProvider> {
  if (input.kind !== undefined) throw invalid('kind cannot change: delete the provider and create another');
  checkInput(input, false);
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (input.name !== undefined) set('name', input.name);
  if (input.issuer !== undefined) set('issuer', checkIssuer(input.issuer));
  if (input.client_id !== undefined) set('client_id', input.client_id);
  if (input.client_secret !== undefined) set('client_secret', input.client_secret);
  if (input.allowed_domains !== undefined) set('allowed_domains', input.allowed_domains);
  if (input.create_users !== undefined) set('create_users', input.create_users);
  if (input.default_role !== undefined) set('default_role', input.default_role);
  const r = await db
    .query<IdentityProvider>(`UPDATE ${ident(org.schema)}.identity_providers SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`, values)
    .catch((err: { code?: string }) => {
      throw err.code === '23505' ? conflict(`an identity provider named "${input.name}" exists already`) : err;
    });
  if (!r.rows[0]) throw notFound(`no identity provider ${id}`);
  return toProvider(r.rows[0]);
}

/** Removing a provider ends the sessions signed in through it. */
export async function deleteProvider(db: Queryable, org: Org, id: string): Promise<void> {
  const s = ident(org.schema);
  await db.query(`UPDATE ${s}.login_sessions SET revoked_at = now() WHERE provider_id = $1 AND revoked_at IS NULL`, [id]);
  const r = await db.query(`DELETE FROM ${s}.identity_providers WHERE id = $1 RETURNING id`, [id]);
  if (!r.rows[0]) throw notFound(`no identity provider ${id}`);
  await authChanged(db, org);
}
