import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

// A real OpenID Provider (oidc-provider, certified) on a loopback port, standing in for an
// organization's IdP or for GitLab. Its login and consent screens are replaced by a handler that
// signs in whichever account the test put in `next` and grants what was asked.

export interface IdpAccount {
  sub: string;
  email: string;
  email_verified: boolean;
  name?: string;
}

export interface OidcIdp {
  issuer: string;
  /** Who signs in at the next authorization. */
  next: IdpAccount;
  close(): Promise<void>;
}

export async function startOidcIdp(
  clients: Array<{ client_id: string; client_secret: string; redirect_uris: string[] }>,
): Promise<OidcIdp> {
  const server: Server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, IdpAccount>();
  const idp: OidcIdp = {
    issuer,
    next: { sub: 'nobody', email: 'nobody@example.com', email_verified: true },
    close: () => new Promise((done) => server.close(() => done())),
  };
  const provider = new Provider(issuer, {
    clients: clients.map((c) => ({
      ...c,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['svc-test-idp-cookie-key'] },
    findAccount: async (_ctx, sub) => {
      const a = accounts.get(sub);
      return a ? { accountId: sub, claims: async () => ({ ...a }) } : undefined;
    },
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (!req.url?.startsWith('/interaction/')) return callback(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        accounts.set(idp.next.sub, { ...idp.next });
        await provider.interactionFinished(req, res, { login: { accountId: idp.next.sub } }, { mergeWithLastSubmission: false });
        return;
      }
      const grant = details.grantId
        ? (await provider.Grant.find(details.grantId))!
        : new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
      grant.addOIDCScope(String(details.params.scope));
      await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    })().catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  return idp;
}
