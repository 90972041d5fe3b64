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
  /** The user's token version when it was issued: raising it revokes every token of the user. */
  ver: number;
  /** The sign-in session it was minted from (hub/login): ending the session ends the token. */
  sid?: string;
  /** The resource it was issued for (RFC 8707), when an OAuth client asked for one. */
  aud?: string;
}

/** The longest a hub token may live: a token without `exp`, or meant to live longer, is refused. */
export const MAX_JWT_LIFETIME_S = 24 * 3600;

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

export async function signJwt(secrets: JwtSecrets, claims: HubClaims, ttlSeconds = 3600): Promise<string> {
  const { SignJWT } = await import('jose');
  return new SignJWT({
    org: claims.org,
    ver: claims.ver,
    ...(claims.sid ? { sid: claims.sid } : {}),
    ...(claims.aud ? { aud: claims.aud } : {}),
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.sub)
    .setJti(claims.jti)
    .setIssuedAt()
    .setIssuer('svc-hub')
    .setExpirationTime(`${Math.min(ttlSeconds, MAX_JWT_LIFETIME_S)}s`)
    .sign(enc(secrets.current));
}

export interface VerifiedClaims extends HubClaims {
  /** When it expires (seconds since the epoch). */
  exp: number;
}

/**
 * The claims of a valid token, or null: a bad signature under both secrets, expired, missing
 * `exp`, `iat` or `jti`, or meant to live longer than MAX_JWT_LIFETIME_S.
 */
export async function verifyJwt(secrets: JwtSecrets, token: string): Promise<VerifiedClaims | null> {
  const { jwtVerify } = await import('jose');
  for (const secret of [secrets.current, secrets.previous]) {
    if (!secret) continue;
    try {
      const { payload } = await jwtVerify(token, enc(secret), {
        algorithms: ['HS256'],
        issuer: 'svc-hub',
        requiredClaims: ['exp', 'iat', 'jti', 'sub'],
        maxTokenAge: MAX_JWT_LIFETIME_S,
      });
      const { sub, org, jti, ver, exp, iat, sid, aud } = payload as Record<string, unknown>;
      if (
        typeof sub !== 'string' ||
        typeof org !== 'string' ||
        typeof jti !== 'string' ||
        typeof exp !== 'number' ||
        typeof iat !== 'number'
      )
        return null;
      if (exp - iat > MAX_JWT_LIFETIME_S) return null;
      // A token issued for a resource keeps saying so (auth.ts holds it to that resource).
      if (aud !== undefined && typeof aud !== 'string') return null;
      return {
        sub,
        org,
        jti,
        ver: typeof ver === 'number' ? ver : 0,
        exp,
        ...(typeof sid === 'string' ? { sid } : {}),
        ...(typeof aud === 'string' ? { aud } : {}),
      };
    } catch (err) {
      // An expired token signed with the current secret is expired under the previous one too.
      if ((err as { code?: string }).code === 'ERR_JWT_EXPIRED') return null;
    }
  }
  return null;
}
