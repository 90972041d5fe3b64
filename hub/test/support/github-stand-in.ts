import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// GitHub's OAuth endpoints and user API as GitHub Enterprise serves them (/login/oauth/*,
// /api/v3/user, /api/v3/user/emails), on a loopback port: the hub reaches it through the
// provider's configurable base URL. Codes are single use and bound to their PKCE challenge, and
// a bad code is answered the way GitHub does it: 200 with an `error` member.

export interface GithubUser {
  id: number;
  login: string;
  name: string;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
}

export interface GithubStandIn {
  base: string;
  next: GithubUser;
  close(): Promise<void>;
}

export async function startGithubStandIn(client: { id: string; secret: string }): Promise<GithubStandIn> {
  const codes = new Map<string, { user: GithubUser; challenge: string; redirect: string }>();
  const tokens = new Map<string, GithubUser>();
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const q = url.searchParams;
      if (q.get('client_id') !== client.id || q.get('code_challenge_method') !== 'S256') return json(400, { error: 'bad request' });
      const code = randomBytes(10).toString('hex');
      codes.set(code, { user: s.next, challenge: q.get('code_challenge')!, redirect: q.get('redirect_uri')! });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const f = new URLSearchParams(body);
        const grant = codes.get(f.get('code') ?? '');
        codes.delete(f.get('code') ?? '');
        const verifierOk =
          grant &&
          createHash('sha256')
            .update(f.get('code_verifier') ?? '')
            .digest('base64url') === grant.challenge;
        if (f.get('client_id') !== client.id || f.get('client_secret') !== client.secret)
          return json(200, { error: 'incorrect_client_credentials' });
        if (!grant || !verifierOk || f.get('redirect_uri') !== grant.redirect)
          return json(200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
        const token = `gho_${randomBytes(16).toString('hex')}`;
        tokens.set(token, grant.user);
        json(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      });
      return;
    }
    const user = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!user) return json(401, { message: 'Bad credentials' });
    if (url.pathname === '/api/v3/user') return json(200, { id: user.id, login: user.login, name: user.name });
    if (url.pathname === '/api/v3/user/emails')
      return json(
        200,
        user.emails.map((e) => ({ ...e, visibility: null })),
      );
    json(404, { message: 'Not Found' });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const s: GithubStandIn = {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    next: { id: 1, login: 'nobody', name: 'Nobody', emails: [] },
    close: () => new Promise((done) => server.close(() => done())),
  };
  return s;
}
