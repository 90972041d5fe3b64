import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// What an outside audit sent the hub that it answered with a 500, or let through: NUL and bad
// percent-encoding in paths, lone surrogates, very deep bodies, cursors past bigint, bodies that
// are not UTF-8 JSON; and how it answers callers with no token, or the wrong method.

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One request as bytes on the wire: nothing normalizes the path or the body. */
function raw(
  url: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: Buffer | string; chunked?: boolean } = {},
): Promise<RawReply> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method, path, headers: opts.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode!, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    if (opts.body !== undefined) {
      if (opts.chunked) {
        // Two writes without a Content-Length: Node sends Transfer-Encoding: chunked.
        const b = Buffer.from(opts.body);
        req.write(b.subarray(0, 1));
        req.end(b.subarray(1));
      } else {
        req.setHeader('content-length', Buffer.byteLength(opts.body));
        req.end(opts.body);
      }
    } else req.end();
  });
}

const b64 = (s: string) => Buffer.from(s).toString('base64url');

describe.each(DATABASES)('hostile input (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let auth: Record<string, string>;
  let id: string;

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
    acme = await hub.newOrg('acme');
    auth = { authorization: `Bearer ${acme.adminKey}` };
    id = (await hub.request('POST', '/engrams', { token: acme.adminKey, body: { statement: 'A target', scope: 'org:acme' } })).body.id;
  }, 60_000);
  afterAll(async () => hub?.close());

  const expectProblem = (r: RawReply, status: number, what: string) => {
    expect(r.status, what).toBe(status);
    expect(String(r.headers['content-type']), what).toMatch(/problem\+json/);
    expect(r.body, what).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
  };

  it('answers NUL and malformed percent-encoding in path parameters with 400', async () => {
    const paths: Array<[string, string]> = [
      ['GET', '/api/v1/engrams/%00'],
      ['GET', '/api/v1/episodes/%00'],
      ['GET', '/api/v1/sessions/%00x'],
      ['DELETE', '/api/v1/admin/api-keys/%00'],
      ['POST', '/api/v1/admin/groups/%00/members'],
      ['DELETE', '/api/v1/packs/%00'],
      ['GET', '/api/v1/engrams/%E0%A4%A'],
      ['GET', '/api/v1/engrams/%ED%A0%80'],
      ['GET', '/api/v1/engrams/abc%'],
      ['GET', `/api/v1/engrams?scope=%00`],
    ];
    for (const [method, path] of paths) {
      const body = method === 'POST' ? '{"user_id":"x"}' : undefined;
      expectProblem(
        await raw(hub.url, method, path, { headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body }),
        400,
        `${method} ${path}`,
      );
    }
  });

  it('refuses lone surrogates, NUL and very deep nesting in bodies with 400', async () => {
    const json = { ...auth, 'content-type': 'application/json' };
    const bodies = [
      '{"statement": "lone \\ud800"}',
      '{"statement": "ok", "tags": ["\\udc00"]}',
      '{"statement": "nul \\u0000 inside"}',
      '{"statement": "ok", "\\ud800": 1}',
      '['.repeat(100_000) + ']'.repeat(100_000),
      `{"statement": "deep", "tags": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      '{"a":'.repeat(50) + '1' + '}'.repeat(50),
    ];
    for (const body of bodies) {
      const r = await raw(hub.url, 'POST', '/api/v1/engrams', { headers: json, body });
      expectProblem(r, 400, body.slice(0, 60));
    }
    // Well-formed pairs are fine.
    const ok = await raw(hub.url, 'POST', '/api/v1/engrams', {
      headers: json,
      body: '{"statement": "Emoji \\ud83d\\ude80 are text too", "scope": "org:acme"}',
    });
    expect(ok.status).toBe(201);
  });

  it('refuses bodies that are not UTF-8 JSON: 415 for other types and charsets, chunked too; 400 for invalid bytes', async () => {
    const body = '{"statement": "x"}';
    expectProblem(
      await raw(hub.url, 'POST', '/api/v1/engrams', { headers: { ...auth, 'content-type': 'text/plain' }, body }),
      415,
      'text/plain',
    );
    expectProblem(
      await raw(hub.url, 'POST', '/api/v1/engrams', { headers: { ...auth, 'content-type': 'text/plain' }, body, chunked: true }),
      415,
      'text/plain, chunked',
    );
    expectProblem(await raw(hub.url, 'POST', '/api/v1/engrams', { headers: auth, body, chunked: true }), 415, 'no type, chunked');
    expectProblem(
      await raw(hub.url, 'POST', '/api/v1/engrams', { headers: { ...auth, 'content-type': 'application/json; charset=latin1' }, body }),
      415,
      'latin1',
    );
    const bytes = Buffer.concat([Buffer.from('{"statement": "caf'), Buffer.from([0xe9]), Buffer.from('", "scope": "org:acme"}')]);
    expectProblem(
      await raw(hub.url, 'POST', '/api/v1/engrams', { headers: { ...auth, 'content-type': 'application/json' }, body: bytes }),
      400,
      'latin-1 byte',
    );
    const chunkedJson = await raw(hub.url, 'POST', '/api/v1/engrams', {
      headers: { ...auth, 'content-type': 'application/json; charset=utf-8' },
      body: '{"statement": "Chunked and fine", "scope": "org:acme"}',
      chunked: true,
    });
    expect(chunkedJson.status).toBe(201);
    const big = JSON.stringify({ statement: 'x'.repeat(2 * 1024 * 1024) });
    expectProblem(
      await raw(hub.url, 'POST', '/api/v1/engrams', { headers: { ...auth, 'content-type': 'application/json' }, body: big, chunked: true }),
      413,
      'over the limit, chunked',
    );
  });

  it('answers cursors past what a bigint holds with 400, on engrams and the audit log', async () => {
    for (const path of ['/engrams', '/admin/audit']) {
      for (const cursor of [b64('99999999999999999999999'), b64('1e308'), b64('-1'), b64('1.5'), b64('0x10'), 'not base64!']) {
        const r = await hub.request('GET', `${path}?cursor=${encodeURIComponent(cursor)}`, { token: acme.adminKey });
        expect(r.status, `${path} ${cursor}`).toBe(400);
        expect(r.body.type, `${path} ${cursor}`).toMatch(/validation-error$/);
      }
    }
    const page = await hub.request('GET', '/engrams?limit=1', { token: acme.adminKey });
    expect(page.status).toBe(200);
  });

  it('sends WWW-Authenticate on 401, and tells an unauthenticated caller nothing about routes', async () => {
    const none = await raw(hub.url, 'GET', '/api/v1/me');
    expectProblem(none, 401, 'no token');
    expect(none.headers['www-authenticate']).toBe('Bearer realm="svc"');
    const bad = await raw(hub.url, 'GET', '/api/v1/me', { headers: { authorization: 'Bearer svc_sk_nopenopenopenopenopenopenope' } });
    expect(bad.headers['www-authenticate']).toMatch(/^Bearer realm="svc", error="invalid_token", error_description="[^"]+"$/);
    const basic = await raw(hub.url, 'GET', '/api/v1/me', { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expect(basic.headers['www-authenticate']).toMatch(/error="invalid_request"/);
    // Existing route, unknown route, wrong method, OPTIONS: the same 401 without a token.
    const probes: Array<[string, string]> = [
      ['GET', '/api/v1/engrams'],
      ['GET', '/api/v1/no-such-route'],
      ['PUT', '/api/v1/me'],
      ['OPTIONS', '/api/v1/engrams'],
      ['TRACE', '/api/v1/recall'],
      ['GET', '/api/v1'],
      ['POST', '/api/v1/openapi.yaml'],
    ];
    const seen = new Set<string>();
    for (const [method, path] of probes) {
      const r = await raw(hub.url, method, path);
      expectProblem(r, 401, `${method} ${path}`);
      expect(r.headers.allow, `${method} ${path}`).toBeUndefined();
      seen.add(JSON.stringify({ ...r.body, instance: undefined, request_id: undefined }));
    }
    expect(seen.size).toBe(1);
    // The description stays public.
    expect((await raw(hub.url, 'GET', '/api/v1/openapi.yaml')).status).toBe(200);
  });

  it('answers a wrong method with 405 and Allow, an unknown route with 404, to an authenticated caller', async () => {
    const r = await raw(hub.url, 'PUT', `/api/v1/engrams/${id}`, { headers: auth });
    expectProblem(r, 405, 'PUT engram');
    expect(String(r.headers.allow).split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'HEAD', 'PATCH']);
    expectProblem(await raw(hub.url, 'GET', '/api/v1/no-such-route', { headers: auth }), 404, 'unknown route');
  });
});
