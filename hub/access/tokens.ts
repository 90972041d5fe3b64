import { createHash, randomBytes } from 'node:crypto';

// Bearer tokens: API keys (svc_sk_ + 32 random bytes, stored as SHA-256) and the hub's internal
// JWTs (HS256). JWTs verify against the current secret, then the previous one, so a rotation
// never logs anyone out: drop the previous secret once its tokens have expired.

export const API_KEY_PREFIX = 'svc_sk_';

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

export const looksLikeApiKey = (token: string): boolean => token.startsWith(API_KEY_PREFIX) && /^svc_sk_[A-Za-z0-9_-]{20,200}$/.test(token);

export interface JwtSecrets {
  current: string;
  previous?: string;
}

export interface HubClaims {
  /** user id */
  sub: string;
  /** organization id */
  org: string;
  jti: string;
}

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

export async function signJwt(secrets: JwtSecrets, claims: HubClaims, ttlSeconds = 3600): Promise<string> {
  const { SignJWT } = await import('jose');
  return new SignJWT({ org: claims.org })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.sub)
    .setJti(claims.jti)
    .setIssuedAt()
    .setIssuer('svc-hub')
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(enc(secrets.current));
}

/** The claims of a valid token, or null (bad signature under both secrets, expired, malformed). */
export async function verifyJwt(secrets: JwtSecrets, token: string): Promise<HubClaims | null> {
  const { jwtVerify } = await import('jose');
  for (const secret of [secrets.current, secrets.previous]) {
    if (!secret) continue;
    try {
      const { payload } = await jwtVerify(token, enc(secret), { algorithms: ['HS256'], issuer: 'svc-hub' });
      if (typeof payload.sub !== 'string' || typeof payload.org !== 'string' || typeof payload.jti !== 'string') return null;
      return { sub: payload.sub, org: payload.org, jti: payload.jti };
    } catch (err) {
      // An expired token signed with the current secret is expired under the previous one too.
      if ((err as { code?: string }).code === 'ERR_JWT_EXPIRED') return null;
    }
  }
  return null;
}
