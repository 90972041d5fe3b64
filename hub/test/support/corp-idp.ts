import { startOidcIdp, type OidcIdp } from './oidc-idp.js';
import type { TestHub, TestOrg } from './hub-fixture.js';

/**
 * An organization's identity provider "corp": a loopback OpenID Provider, registered on the hub
 * as the organization's sign-in provider `corp` (`provider` adds or overrides its settings).
 */
export async function startCorpIdp(
  hub: TestHub,
  org: TestOrg,
  provider: Record<string, unknown> = {},
): Promise<{ idp: OidcIdp; providerId: string }> {
  const idp = await startOidcIdp([
    { client_id: 'svc-corp', client_secret: 'corp-secret', redirect_uris: [`${hub.url}/auth/${org.org.slug}/corp/callback`] },
  ]);
  const r = await hub.request('POST', '/admin/identity-providers', {
    token: org.adminKey,
    body: {
      name: 'corp',
      kind: 'oidc',
      issuer: idp.issuer,
      client_id: 'svc-corp',
      client_secret: 'corp-secret',
      create_users: true,
      ...provider,
    },
  });
  if (r.status !== 201) throw new Error(`registering the provider failed: ${r.status} ${r.text}`);
  return { idp, providerId: r.body.id as string };
}
