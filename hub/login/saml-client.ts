import type { CacheProvider, SAML } from '@node-saml/node-saml';
import { SvcError } from '../../engine/errors.js';
import type { Org, Queryable } from '../contracts.js';
import { ident } from '../data/sql.js';
import type { ProviderWithSecret } from './identity-providers.js';
import type { ExternalIdentity } from './provider-client.js';
import { esc } from './browser-kit.js';

// SAML 2.0 as a service provider, through @node-saml/node-saml: SP-initiated (an AuthnRequest by
// the HTTP-Redirect binding, the answer by HTTP-POST to the assertion consumer service). A
// response must be signed, or its assertion (one assertion only, so signature wrapping has
// nowhere to hide a second), by the IdP's key; its audience (our entity ID), validity
// window and InResponseTo (the request of the sign-in this browser started, used once) are checked by the library; the
// issuer, recipient and destination (our ACS URL) and a replay cache of assertion IDs here.

const REQUEST_MINUTES = 10;
const CLOCK_SKEW_MS = 60_000;

export interface SamlEndpoints {
  /** Our entity ID: the SP metadata's address. */
  entityId: string;
  /** The assertion consumer service. */
  acs: string;
}

/**
 * The AuthnRequest IDs node-saml issues, kept in the organization's schema so any hub process can
 * take the answer. At the ACS only `expected` is known: the request of the sign-in this browser
 * started, so a response answering anyone else's request fails its InResponseTo check.
 */
function requestCache(
  db: Queryable,
  org: Org,
  providerId: string,
  hooks: { saved?: (id: string) => void; expected?: string } = {},
): CacheProvider {
  const s = ident(org.schema);
  return {
    async saveAsync(key, value) {
      await db.query(
        `INSERT INTO ${s}.saml_requests (id, provider_id, issued, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
        [key, providerId, value, new Date(Date.now() + REQUEST_MINUTES * 60_000)],
      );
      await db.query(`DELETE FROM ${s}.saml_requests WHERE expires_at < now()`);
      hooks.saved?.(key);
      return { value, createdAt: Date.now() };
    },
    async getAsync(key) {
      if (hooks.expected === undefined || key !== hooks.expected) return null;
      const r = await db.query<{ issued: string }>(
        `SELECT issued FROM ${s}.saml_requests WHERE id = $1 AND provider_id = $2 AND expires_at > now()`,
        [key, providerId],
      );
      return r.rows[0]?.issued ?? null;
    },
    async removeAsync(key) {
      if (key === null) return null;
      const r = await db.query<{ issued: string }>(`DELETE FROM ${s}.saml_requests WHERE id = $1 RETURNING issued`, [key]);
      return r.rows[0]?.issued ?? null;
    },
  };
}

async function samlFor(db: Queryable, org: Org, p: ProviderWithSecret, at: SamlEndpoints, cache: CacheProvider): Promise<SAML> {
  const { SAML } = await import('@node-saml/node-saml');
  return new SAML({
    entryPoint: p.sso_url!,
    idpCert: p.idp_cert!,
    idpIssuer: p.issuer,
    issuer: at.entityId,
    audience: at.entityId,
    callbackUrl: at.acs,
    // Either the response or its assertion must carry a valid signature.
    wantAuthnResponseSigned: false,
    wantAssertionsSigned: false,
    validateInResponseTo: 'always' as never,
    requestIdExpirationPeriodMs: REQUEST_MINUTES * 60_000,
    cacheProvider: cache,
    acceptedClockSkewMs: CLOCK_SKEW_MS,
    signatureAlgorithm: 'sha256',
    disableRequestedAuthnContext: true,
  });
}

/** Where to send the browser: the IdP's SSO URL with a fresh AuthnRequest and our state as RelayState; and that request's ID. */
export async function samlLoginUrl(
  db: Queryable,
  org: Org,
  p: ProviderWithSecret,
  at: SamlEndpoints,
  relayState: string,
): Promise<{ url: string; requestId: string }> {
  let requestId: string | undefined;
  const url = await (
    await samlFor(db, org, p, at, requestCache(db, org, p.id, { saved: (id) => (requestId = id) }))
  ).getAuthorizeUrlAsync(relayState, undefined, {});
  // eslint-disable-next-line no-restricted-syntax -- node-saml broke its contract: an internal error
  if (!requestId) throw new Error('node-saml issued an AuthnRequest without saving its ID');
  return { url, requestId };
}

export function samlMetadata(p: ProviderWithSecret, at: SamlEndpoints): string {
  // Synchronous and local: building the XML reads no cache and no network.
  return `<?xml version="1.0"?>
<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${esc(at.entityId)}">
  <SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="false" WantAssertionsSigned="true">
    <NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</NameIDFormat>
    <AssertionConsumerService index="1" isDefault="true" Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${esc(at.acs)}"/>
  </SPSSODescriptor>
</EntityDescriptor>
`;
}

type Parsed = { $?: Record<string, string>; [k: string]: unknown };
const first = (n: Parsed | undefined, name: string): Parsed | undefined => {
  const v = n?.[name] ?? n?.[`saml:${name}`] ?? n?.[`saml2:${name}`];
  return Array.isArray(v) ? (v[0] as Parsed) : undefined;
};

/** The POST to the ACS, answering the request `requestId`: who the IdP says signed in, every check above passed. */
export async function completeSaml(
  db: Queryable,
  org: Org,
  p: ProviderWithSecret,
  at: SamlEndpoints,
  samlResponse: string,
  requestId: string,
): Promise<ExternalIdentity> {
  const saml = await samlFor(db, org, p, at, requestCache(db, org, p.id, { expected: requestId }));
  const { profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponse });
  if (!profile) throw new SvcError('forbidden', 'the IdP answered without an assertion');
  // node-saml holds the issuer against idpIssuer for logout messages only.
  if (profile.issuer !== p.issuer)
    throw new SvcError('forbidden', `the assertion's issuer is ${profile.issuer ?? 'missing'}, not the configured IdP ${p.issuer}`);
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  const destination = /<(?:\w+:)?Response\b[^>]*\sDestination="([^"]*)"/.exec(xml)?.[1];
  if (destination !== undefined && destination !== at.acs)
    throw new SvcError('forbidden', `the response is meant for ${destination}, not this hub`);
  const assertion =
    (profile.getAssertion?.() as { Assertion?: Parsed } | undefined)?.Assertion ??
    (profile.getAssertion?.() as Record<string, Parsed>)?.['saml:Assertion'];
  const confirm = first(first(first(assertion, 'Subject'), 'SubjectConfirmation'), 'SubjectConfirmationData');
  if (confirm?.$?.Recipient !== at.acs)
    throw new SvcError('forbidden', `the assertion's recipient is ${confirm?.$?.Recipient ?? 'missing'}, not this hub's ACS`);
  const id = assertion?.$?.ID;
  const until = confirm.$?.NotOnOrAfter ?? first(assertion, 'Conditions')?.$?.NotOnOrAfter;
  if (!id) throw new SvcError('forbidden', 'the assertion has no ID');
  const fresh = await db.query<{ id: string }>(
    `INSERT INTO ${ident(org.schema)}.saml_assertions (id, expires_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id`,
    [id, new Date(Math.max(Date.parse(until ?? '') || 0, Date.now()) + CLOCK_SKEW_MS)],
  );
  if (!fresh.rows[0]) throw new SvcError('forbidden', 'this assertion was used already (replayed)');
  await db.query(`DELETE FROM ${ident(org.schema)}.saml_assertions WHERE expires_at < now()`);
  const email = [
    profile.email,
    profile.mail,
    profile['http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'],
    profile.nameIDFormat?.endsWith(':emailAddress') ? profile.nameID : undefined,
  ].find((v): v is string => typeof v === 'string' && /^[^@\s]+@[^@\s]+$/.test(v));
  const name = [profile.displayName, profile['http://schemas.microsoft.com/identity/claims/displayname']].find(
    (v): v is string => typeof v === 'string',
  );
  // The organization's own IdP vouches for the addresses it asserts.
  return { subject: profile.nameID ?? email ?? id, emails: email ? [email.toLowerCase()] : [], name: name ?? null };
}
