import { createPublicKey, randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../../engine/errors.js';
import type { Org, Queryable, Role } from '../contracts.js';
import { ident } from '../data/sql.js';
import type { SecretBox } from '../data/secret-box.js';
import { authChanged } from '../access/epoch.js';
import { checkUrl as checkOutbound, RefusedUrl, type OutboundPolicy } from '../net/outbound.js';

// An organization's identity providers: where its people sign in. Admins configure them through
// /api/v1/admin/identity-providers; the client secret is stored (sealed under SVC_HUB_SECRET_KEY
// when it is set, data/secret-box.ts), opened only where sign-in uses it, never shown again. A SAML
// IdP is given by its metadata, or by its entity ID, SSO URL and signing certificate. The URL the
// hub itself fetches (an OAuth or OIDC issuer) must pass the outbound policy when it is saved, as
// it must again at each fetch (a name may resolve elsewhere later). A provider whose issuer, or
// SAML signing key, changes is another identity provider: the accounts linked through the old
// one are unlinked, so an account of the new one signs nobody in as an old one's person.

export type ProviderKind = 'oidc' | 'github' | 'gitlab' | 'saml';
export const PROVIDER_KINDS: readonly ProviderKind[] = ['oidc', 'github', 'gitlab', 'saml'];

export interface IdentityProvider {
  id: string;
  name: string;
  kind: ProviderKind;
  issuer: string;
  client_id: string | null;
  sso_url: string | null;
  idp_cert: string | null;
  allowed_domains: string[];
  create_users: boolean;
  default_role: Role;
  created_at: string;
  updated_at: string;
}

/** What the login flow needs besides the public fields. */
export interface ProviderWithSecret extends IdentityProvider {
  client_secret: string | null;
}

export interface ProviderInput {
  name?: string;
  kind?: ProviderKind;
  issuer?: string;
  client_id?: string;
  client_secret?: string;
  sso_url?: string;
  idp_cert?: string;
  /** SAML: the IdP's metadata XML, from which issuer, sso_url and idp_cert are read. */
  idp_metadata?: string;
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

function checkUrl(raw: string, field: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(`${field} "${raw}" is not a URL`);
  }
  if (url.protocol !== 'https:' && !isLoopbackHttp(url))
    throw invalid(`${field} "${raw}" must be an https URL (plain http only on loopback)`);
  if (url.username || url.password || url.hash || (field === 'issuer' && url.search))
    throw invalid(`${field} "${raw}" must not carry credentials, a fragment${field === 'issuer' ? ' or a query' : ''}`);
  return field === 'issuer' ? url.href.replace(/\/$/, '') : url.href;
}

/** An issuer the hub will fetch, refused now when the outbound policy would refuse it (a name that does not resolve yet is checked at each fetch). */
async function fetchable(issuer: string, outbound: OutboundPolicy): Promise<string> {
  try {
    await checkOutbound(issuer, outbound);
  } catch (err) {
    if (err instanceof RefusedUrl) throw invalid(`issuer: ${err.message}`);
  }
  return issuer;
}

/** The public key a PEM certificate or key holds, comparable across encodings. */
const keyOf = (pem: string | null): string | null =>
  pem ? createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('base64') : null;

/** A PEM certificate or public key, or a certificate's bare base64 (as metadata holds it), as PEM. */
function checkCert(raw: string): string {
  const text = raw.trim();
  const pem = text.startsWith('-----BEGIN')
    ? text
    : `-----BEGIN CERTIFICATE-----\n${text.replace(/\s+/g, '').replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----`;
  try {
    createPublicKey(pem);
  } catch {
    throw invalid('idp_cert is not a PEM certificate or public key');
  }
  return pem;
}

function checkInput(input: ProviderInput, creating: boolean, kind: ProviderKind): void {
  if (creating || input.name !== undefined) {
    if (typeof input.name !== 'string' || !NAME.test(input.name))
      throw invalid('name must be 1 to 40 lowercase letters, digits or "-", starting with a letter or digit');
  }
  if (creating && !PROVIDER_KINDS.includes(input.kind as ProviderKind)) throw invalid(`kind must be one of ${PROVIDER_KINDS.join(', ')}`);
  if (kind === 'saml') {
    if (input.client_id !== undefined || input.client_secret !== undefined)
      throw invalid('a saml provider has no client_id or client_secret: give idp_metadata, or issuer, sso_url and idp_cert');
  } else {
    if (input.sso_url !== undefined || input.idp_cert !== undefined || input.idp_metadata !== undefined)
      throw invalid(`sso_url, idp_cert and idp_metadata are for saml providers, not ${kind}`);
    for (const f of ['client_id', 'client_secret'] as const) {
      if ((creating || input[f] !== undefined) && (typeof input[f] !== 'string' || input[f]!.length === 0 || input[f]!.length > 500))
        throw invalid(`${f} must be a string of 1 to 500 characters`);
    }
  }
  for (const d of input.allowed_domains ?? []) if (!DOMAIN.test(d)) throw invalid(`allowed_domains: "${d}" is not a lowercase domain name`);
}

/** The SAML fields of an input, metadata read first; each checked. */
async function samlFields(input: ProviderInput): Promise<{ issuer?: string; sso_url?: string; idp_cert?: string }> {
  const fromMetadata = input.idp_metadata !== undefined ? await readIdpMetadata(input.idp_metadata) : {};
  const issuer = input.issuer ?? fromMetadata.issuer;
  const sso = input.sso_url ?? fromMetadata.sso_url;
  const cert = input.idp_cert ?? fromMetadata.idp_cert;
  if (issuer !== undefined && (issuer.length === 0 || issuer.length > 1000))
    throw invalid('issuer (the IdP entity ID) must be 1 to 1,000 characters');
  return {
    ...(issuer !== undefined ? { issuer } : {}),
    ...(sso !== undefined ? { sso_url: checkUrl(sso, 'sso_url') } : {}),
    ...(cert !== undefined ? { idp_cert: checkCert(cert) } : {}),
  };
}

const COLUMNS = 'id, name, kind, issuer, client_id, sso_url, idp_cert, allowed_domains, create_users, default_role, created_at, updated_at';

const toProvider = (r: IdentityProvider): IdentityProvider => ({
  ...r,
  allowed_domains: r.allowed_domains ?? [],
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

export async function createProvider(
  db: Queryable,
  org: Org,
  input: ProviderInput,
  outbound: OutboundPolicy,
  box: SecretBox,
): Promise<IdentityProvider> {
  checkInput(input, true, input.kind!);
  let fields: { issuer?: string; sso_url?: string; idp_cert?: string };
  if (input.kind === 'saml') {
    fields = await samlFields(input);
    if (!fields.issuer || !fields.sso_url || !fields.idp_cert)
      throw invalid('a saml provider needs idp_metadata, or issuer (the IdP entity ID), sso_url and idp_cert');
  } else {
    const issuer = input.issuer ?? DEFAULT_BASE[input.kind!];
    if (!issuer) throw invalid('issuer is required for an oidc provider');
    fields = { issuer: await fetchable(checkUrl(issuer, 'issuer'), outbound) };
  }
  const r = await db.query<IdentityProvider>(
    `INSERT INTO ${ident(org.schema)}.identity_providers (id, name, kind, issuer, client_id, client_secret, sso_url, idp_cert, allowed_domains, create_users, default_role)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
    [
      randomUUID(),
      input.name,
      input.kind,
      fields.issuer,
      input.client_id ?? null,
      input.client_secret === undefined ? null : box.seal(input.client_secret),
      fields.sso_url ?? null,
      fields.idp_cert ?? null,
      input.allowed_domains ?? [],
      input.create_users ?? false,
      input.default_role ?? 'viewer',
    ],
  );
  if (!r.rows[0]) throw conflict(`an identity provider named "${input.name}" exists already`);
  return toProvider(r.rows[0]);
}

export async function listProviders(db: Queryable, org: Org): Promise<IdentityProvider[]> {
  return (await db.query<IdentityProvider>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.identity_providers ORDER BY name`)).rows.map(
    toProvider,
  );
}

export async function getProvider(db: Queryable, org: Org, id: string): Promise<IdentityProvider | null> {
  const r = await db.query<IdentityProvider>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.identity_providers WHERE id = $1`, [id]);
  return r.rows[0] ? toProvider(r.rows[0]) : null;
}

/** A provider for signing in through it, its client secret opened. */
export async function providerByName(db: Queryable, org: Org, name: string, box: SecretBox): Promise<ProviderWithSecret | null> {
  const r = await db.query<ProviderWithSecret>(
    `SELECT ${COLUMNS}, client_secret FROM ${ident(org.schema)}.identity_providers WHERE name = $1`,
    [name],
  );
  const row = r.rows[0];
  return row ? { ...toProvider(row), client_secret: row.client_secret === null ? null : box.open(row.client_secret) } : null;
}

export async function updateProvider(
  db: Queryable,
  org: Org,
  id: string,
  input: ProviderInput,
  outbound: OutboundPolicy,
  box: SecretBox,
): Promise<IdentityProvider> {
  if (input.kind !== undefined) throw invalid('kind cannot change: delete the provider and create another');
  const current = await getProvider(db, org, id);
  if (!current) throw notFound(`no identity provider ${id}`);
  checkInput(input, false, current.kind);
  const saml = current.kind === 'saml' ? await samlFields(input) : {};
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (input.name !== undefined) set('name', input.name);
  if (current.kind === 'saml') {
    if (saml.issuer !== undefined) set('issuer', saml.issuer);
    if (saml.sso_url !== undefined) set('sso_url', saml.sso_url);
    if (saml.idp_cert !== undefined) set('idp_cert', saml.idp_cert);
  } else if (input.issuer !== undefined) set('issuer', await fetchable(checkUrl(input.issuer, 'issuer'), outbound));
  if (input.client_id !== undefined) set('client_id', input.client_id);
  if (input.client_secret !== undefined) set('client_secret', box.seal(input.client_secret));
  if (input.allowed_domains !== undefined) set('allowed_domains', input.allowed_domains);
  if (input.create_users !== undefined) set('create_users', input.create_users);
  if (input.default_role !== undefined) set('default_role', input.default_role);
  const r = await db
    .query<IdentityProvider>(
      `UPDATE ${ident(org.schema)}.identity_providers SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`,
      values,
    )
    .catch((err: { code?: string }) => {
      throw err.code === '23505' ? conflict(`an identity provider named "${input.name}" exists already`) : err;
    });
  const updated = r.rows[0];
  if (!updated) throw notFound(`no identity provider ${id}`);
  if (updated.issuer !== current.issuer || keyOf(updated.idp_cert) !== keyOf(current.idp_cert)) {
    await db.query(`DELETE FROM ${ident(org.schema)}.external_identities WHERE provider_id = $1`, [id]);
  }
  return toProvider(updated);
}

/** Removing a provider ends the sessions signed in through it. */
export async function deleteProvider(db: Queryable, org: Org, id: string): Promise<void> {
  const s = ident(org.schema);
  await db.query(`UPDATE ${s}.login_sessions SET revoked_at = now() WHERE provider_id = $1 AND revoked_at IS NULL`, [id]);
  const r = await db.query(`DELETE FROM ${s}.identity_providers WHERE id = $1 RETURNING id`, [id]);
  if (!r.rows[0]) throw notFound(`no identity provider ${id}`);
  await authChanged(db, org);
}

/** The entity ID, SSO URL (HTTP-Redirect binding) and signing certificate in an IdP's SAML metadata. */
async function readIdpMetadata(xml: string): Promise<{ issuer?: string; sso_url?: string; idp_cert?: string }> {
  if (typeof xml !== 'string' || xml.length > 512 * 1024) throw invalid('idp_metadata must be the IdP metadata XML, at most 512 KiB');
  const { parseStringPromise, processors } = await import('xml2js');
  type Node = { $?: Record<string, string>; [child: string]: unknown };
  let root: Record<string, Node>;
  try {
    // sax, under xml2js, resolves no external entities.
    root = await parseStringPromise(xml, { tagNameProcessors: [processors.stripPrefix] });
  } catch (err) {
    throw invalid(`idp_metadata is not XML: ${(err as Error).message.split('\n')[0]}`);
  }
  const kids = (n: Node | undefined, name: string): Node[] => (Array.isArray(n?.[name]) ? (n![name] as Node[]) : []);
  const entities = root.EntityDescriptor ? [root.EntityDescriptor] : kids(root.EntitiesDescriptor, 'EntityDescriptor');
  const entity = entities.find((e) => kids(e, 'IDPSSODescriptor').length > 0);
  const idp = kids(entity, 'IDPSSODescriptor')[0];
  const sso = kids(idp, 'SingleSignOnService').find((s) => s.$?.Binding === 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect');
  const key = kids(idp, 'KeyDescriptor').find((k) => !k.$?.use || k.$.use === 'signing');
  const cert = kids(kids(kids(key, 'KeyInfo')[0], 'X509Data')[0], 'X509Certificate')[0] as unknown;
  const out = {
    issuer: entity?.$?.entityID,
    sso_url: sso?.$?.Location,
    idp_cert: typeof cert === 'string' ? cert : (cert as { _?: string } | undefined)?._,
  };
  if (!out.issuer || !out.sso_url || !out.idp_cert)
    throw invalid(
      'idp_metadata lacks an IDPSSODescriptor with an entityID, an HTTP-Redirect SingleSignOnService and a signing X509Certificate',
    );
  return out;
}
