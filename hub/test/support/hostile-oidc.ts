import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

// An OpenID Provider that lies, on a loopback port: it follows the protocol up to the ID token,
// then signs (or does not sign) one with whatever is wrong in `mode`. The hub must refuse every
// one of them but 'honest'.

export type HostileMode =
  'honest' | 'wrong-nonce' | 'wrong-issuer' | 'wrong-audience' | 'alg-none' | 'expired' | 'unverified-email' | 'other-key';

export interface HostileIdp {
  issuer: string;
  mode: HostileMode;
  email: string;
  close(): Promise<void>;
}

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

export async function startHostileIdp(clientId: string): Promise<HostileIdp> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const stranger = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const nonces = new Map<string, string>();
  const server = createServer((req, res) => {
    const url = new URL(req.url!, idp.issuer);
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json({
        issuer: idp.issuer,
        authorization_endpoint: `${idp.issuer}/authorize`,
        token_endpoint: `${idp.issuer}/token`,
        jwks_uri: `${idp.issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url.pathname === '/jwks') return json({ keys: [jwk] });
    if (url.pathname === '/authorize') {
      const code = randomBytes(8).toString('hex');
      nonces.set(code, url.searchParams.get('nonce') ?? '');
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (url.pathname === '/token') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const code = new URLSearchParams(body).get('code')!;
        void idToken(nonces.get(code) ?? '').then((id_token) =>
          json({ access_token: randomBytes(8).toString('hex'), token_type: 'Bearer', expires_in: 300, id_token }),
        );
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  async function idToken(nonce: string): Promise<string> {
    const m = idp.mode;
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: m === 'wrong-issuer' ? 'https://someone-else.example' : idp.issuer,
      aud: m === 'wrong-audience' ? 'another-client' : clientId,
      sub: 'hostile-subject',
      nonce: m === 'wrong-nonce' ? 'not-the-nonce' : nonce,
      iat: m === 'expired' ? now - 7200 : now,
      exp: m === 'expired' ? now - 3600 : now + 300,
      email: idp.email,
      email_verified: m !== 'unverified-email',
    };
    if (m === 'alg-none') return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(m === 'other-key' ? stranger.privateKey : privateKey);
  }
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const idp: HostileIdp = {
    issuer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    mode: 'honest',
    email: 'mallory@acme.example',
    close: () => new Promise((done) => server.close(() => done())),
  };
  return idp;
}
