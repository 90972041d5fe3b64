import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { CookieBrowser } from './cookie-browser.js';

// An MCP client of the hub's OAuth server, driven by hand: it registers, a person consents in a
// browser (signing in at the organization's provider when not signed in yet), and the client
// exchanges the code for its tokens.

export const REDIRECT = 'http://127.0.0.1:33419/callback';
const VERIFIER = 'v'.repeat(50);
export const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

export interface Tokens {
  access_token: string;
  refresh_token: string;
}

export const formField = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

export class OAuthClient {
  private constructor(
    readonly hub: string,
    readonly id: string,
  ) {}

  static async register(hub: string, name: string): Promise<OAuthClient> {
    const reg = await fetch(`${hub}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: name }),
    });
    expect(reg.status).toBe(201);
    return new OAuthClient(hub, ((await reg.json()) as { client_id: string }).client_id);
  }

  authorizeUrl(extra: Record<string, string> = {}): string {
    return `${this.hub}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: this.id, redirect_uri: REDIRECT, code_challenge: CHALLENGE, code_challenge_method: 'S256', ...extra })}`;
  }

  token(form: Record<string, string>): Promise<Response> {
    return fetch(`${this.hub}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: this.id, ...form }).toString(),
    });
  }

  refresh(refreshToken: string, extra: Record<string, string> = {}): Promise<Response> {
    return this.token({ grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });
  }

  /** The consent page, for a person signed in (or signing in now) at `org`'s only provider. */
  async consentPage(browser: CookieBrowser, org: string): Promise<string> {
    const first = await browser.follow(this.authorizeUrl());
    if (first.text.includes('asks to connect')) return first.text;
    const consent = await browser.follow(`${this.hub}/oauth/authorize/consent?request=${formField(first.text, 'request')}&org=${org}`);
    expect(consent.status, consent.text).toBe(200);
    return consent.text;
  }

  /** A person consents in `browser`, and the client exchanges the code: its tokens. */
  async grant(browser: CookieBrowser, org: string): Promise<Tokens> {
    const page = await this.consentPage(browser, org);
    const decided = await browser.request('POST', `${this.hub}/oauth/authorize/decide`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.hub },
      body: new URLSearchParams({ request: formField(page, 'request'), csrf: formField(page, 'csrf'), decision: 'allow' }).toString(),
    });
    expect(decided.status, decided.text).toBe(302);
    const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
    const r = await this.token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: VERIFIER });
    expect(r.status).toBe(200);
    return (await r.json()) as Tokens;
  }
}
