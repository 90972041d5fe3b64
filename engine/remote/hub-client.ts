import { httpSend, type HttpAnswer } from './http-send.js';

// The hub as a developer's `svc` reaches it (.svc.yaml: remote_url; .svc.local.yaml:
// remote_token): one HTTP exchange (http-send.ts) with a deadline on every call, so a slow or
// absent hub costs at most that deadline. A failure is either `unreachable` (network, timeout, 5xx, 429: worth retrying) or `refused` (any other
// 4xx: retrying the same request cannot help), with the hub's one-line reason.

export interface RemoteConfig {
  url: string;
  token: string;
  /** Scopes to read from the hub; absent: every scope the token may read. */
  scopes?: string[];
  /** The file the token was read from (for the advice to move it out of a committable .svc.yaml). */
  tokenPath?: string;
}

export class RemoteFailure extends Error {
  override name = 'RemoteFailure';
  constructor(
    readonly kind: 'unreachable' | 'refused',
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

export interface RemoteHit {
  id: string;
  statement: string;
  type: string;
  scope: string;
  status: string;
  domain?: string;
  tags: string[];
  pinned: boolean;
  score: number;
  found_by?: Array<'bm25' | 'vector' | 'association'>;
  bm25?: { rank: number; score: number };
  vector?: { rank: number; cosine: number };
}

export interface RemoteIdentity {
  user: string;
  readable: string[];
  writable: string[];
}

/** The remote config of a project, or null when it names no hub. */
export function remoteOf(
  project: { remote_url?: string; remote_token?: string; remote_scopes?: string[]; remote_token_path?: string } | null | undefined,
): RemoteConfig | null {
  if (!project?.remote_url || !project.remote_token) return null;
  return {
    url: project.remote_url.replace(/\/+$/, ''),
    token: project.remote_token,
    ...(project.remote_scopes?.length ? { scopes: project.remote_scopes } : {}),
    ...(project.remote_token_path ? { tokenPath: project.remote_token_path } : {}),
  };
}

/** The filters of the hub's engram list. */
export interface ListQuery {
  scope?: string;
  type?: string;
  domain?: string;
  status?: string;
  content_hash?: string;
}

export class HubClient {
  constructor(readonly remote: RemoteConfig) {}

  async call<T>(
    method: string,
    path: string,
    deadlineMs: number,
    body?: unknown,
    headers: Record<string, string> = {},
    onSent?: () => void,
  ): Promise<{ status: number; body: T }> {
    let res: HttpAnswer;
    try {
      res = await httpSend(`${this.remote.url}/api/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.remote.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        timeoutMs: deadlineMs,
        ...(onSent && { onSent }),
      });
    } catch (err) {
      throw new RemoteFailure('unreachable', `the hub at ${this.remote.url} is unreachable (${(err as Error).message})`);
    }
    let parsed: unknown = undefined;
    try {
      parsed = res.text ? JSON.parse(res.text) : undefined;
    } catch {
      parsed = undefined;
    }
    const ok = res.status >= 200 && res.status < 300;
    if (ok) return { status: res.status, body: parsed as T };
    const detail =
      (parsed as { detail?: string } | undefined)?.detail ??
      (res.location ? `HTTP ${res.status}, a redirect to ${res.location}: set remote_url to the address it names` : `HTTP ${res.status}`);
    const retryable = res.status >= 500 || res.status === 429 || res.status === 408;
    throw new RemoteFailure(
      retryable ? 'unreachable' : 'refused',
      `the hub at ${this.remote.url} answered ${res.status}: ${detail}`,
      res.status,
    );
  }

  async me(deadlineMs: number): Promise<RemoteIdentity> {
    const r = await this.call<{ user: { name: string }; scopes: { readable: string[]; writable: string[] } }>('GET', '/me', deadlineMs);
    return { user: r.body.user.name, readable: r.body.scopes.readable, writable: r.body.scopes.writable };
  }

  /**
   * The newest engrams the token may read, filtered like `svc list`, up to `limit`: the hub's
   * pages (200 each) followed within `deadlineMs`. `complete` is false when the hub holds more
   * than was fetched (the limit was reached with more to come, or time ran out).
   */
  async list(filter: ListQuery, limit: number, deadlineMs: number): Promise<{ items: Array<Record<string, unknown>>; complete: boolean }> {
    const until = Date.now() + deadlineMs;
    const items: Array<Record<string, unknown>> = [];
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ limit: String(Math.min(200, limit - items.length)) });
      for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
      if (cursor) q.set('cursor', cursor);
      const left = until - Date.now();
      if (left <= 0) return { items, complete: false };
      const page: { items: Array<Record<string, unknown>>; next_cursor: string | null } = (
        await this.call<{ items: Array<Record<string, unknown>>; next_cursor: string | null }>('GET', `/engrams?${q}`, left)
      ).body;
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor && items.length < limit);
    return { items, complete: cursor === null };
  }

  /** `onSent`: see httpSend. */
  async recall(query: string, limit: number, deadlineMs: number, onSent?: () => void): Promise<RemoteHit[]> {
    return (await this.call<{ results: RemoteHit[] }>('POST', '/recall', deadlineMs, { query, limit }, {}, onSent)).body.results;
  }
}
