import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../engine/seeded-random.js';
import { ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// Random JSON bodies against every write route: wrong types, missing and extra fields, huge and
// odd strings, deep nesting. The hub must answer each with a problem document, never a 500, and
// a refused request must write nothing.

const STRINGS = [
  '',
  ' ',
  'x',
  'ENG-',
  'global',
  'org:acme',
  'user:admin',
  'a'.repeat(5000),
  '\u0000',
  '☃️',
  '𝕏',
  '"; DROP TABLE engrams; --',
  '<script>',
  '{"a":1}',
  'ENG-AAAA-2026-0101-001',
];

function junk(r: () => number, depth = 0): unknown {
  const pick = Math.floor(r() * (depth > 2 ? 6 : 9));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return Math.floor(r() * 2 ** 40) * (r() < 0.5 ? -1 : 1);
    case 3:
      return r() * 1e308;
    case 4:
    case 5:
      return STRINGS[Math.floor(r() * STRINGS.length)];
    case 6:
      return Array.from({ length: Math.floor(r() * 4) }, () => junk(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(r() * 4); i++) o[FIELDS[Math.floor(r() * FIELDS.length)]!] = junk(r, depth + 1);
      return o;
    }
  }
}

const FIELDS = [
  'statement',
  'type',
  'scope',
  'domain',
  'tags',
  'rationale',
  'signal',
  'pinned',
  'query',
  'limit',
  'task',
  'max_engrams',
  'budget',
  'summary',
  'agent',
  'learnings',
  'name',
  'role',
  'path',
  'user_id',
  'read_only',
  'status',
  'supersedes',
  '__proto__',
  'constructor',
];

/** A body near a valid one: start from valid fields, then break some. */
function mutate(r: () => number, valid: Record<string, unknown>): unknown {
  if (r() < 0.15) return junk(r);
  const body: Record<string, unknown> = { ...valid };
  for (let i = 0; i < 1 + Math.floor(r() * 3); i++) {
    const field =
      r() < 0.7
        ? (Object.keys(valid)[Math.floor(r() * Object.keys(valid).length)] ?? 'statement')
        : FIELDS[Math.floor(r() * FIELDS.length)]!;
    if (r() < 0.2) delete body[field];
    else body[field] = junk(r);
  }
  return body;
}

describe.each(DATABASES)('fuzzing the write routes (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let id: string;
  let session: string;

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
    acme = await hub.newOrg('acme');
    id = (await hub.request('POST', '/engrams', { token: acme.adminKey, body: { statement: 'Fuzz target', scope: 'org:acme' } })).body.id;
    session = (await hub.request('POST', '/sessions', { token: acme.adminKey, body: {} })).body.session.id;
  }, 60_000);
  afterAll(async () => hub?.close());

  it('never answers 500 and never writes on a refused request', async () => {
    const routes: Array<[string, string, Record<string, unknown>]> = [
      ['POST', '/engrams', { statement: 'A fuzzed rule', scope: 'org:acme', tags: ['f'] }],
      ['PATCH', `/engrams/${id}`, { tags: ['f'], domain: 'a.b' }],
      ['POST', `/engrams/${id}/feedback`, { signal: 'positive' }],
      ['POST', `/engrams/${id}/promote`, {}],
      ['POST', `/engrams/${id}/pin`, { pinned: true }],
      ['POST', '/recall', { query: 'fuzz', limit: 3 }],
      ['POST', '/recall/bm25', { query: 'fuzz' }],
      ['POST', '/inject', { task: 'fuzz', budget: 300 }],
      ['POST', '/episodes', { summary: 'fuzzed episode' }],
      ['POST', '/sessions', { task: 'fuzz' }],
      ['POST', `/sessions/${session}/end`, { summary: 'x', learnings: [{ statement: 'fuzz learning', scope: 'org:acme' }] }],
      ['POST', '/admin/users', { name: 'fuzzer', role: 'viewer' }],
      ['POST', '/admin/groups', { path: 'fuzz' }],
      ['POST', '/admin/api-keys', { user_id: acme.adminId }],
      ['POST', '/packs/export', { name: 'fuzzpack', scope: 'org:acme' }],
    ];
    const s = ident(acme.org.schema);
    const counts = async () =>
      (
        await hub.db.query<Record<string, number>>(
          `SELECT (SELECT count(*)::int FROM ${s}.engrams) AS engrams, (SELECT count(*)::int FROM ${s}.episodes) AS episodes,
                (SELECT count(*)::int FROM ${s}.users) AS users, (SELECT count(*)::int FROM ${s}.groups) AS groups,
                (SELECT count(*)::int FROM ${s}.api_keys) AS keys, (SELECT count(*)::int FROM ${s}.sessions) AS sessions,
                (SELECT coalesce(sum(length(doc::text)), 0)::bigint FROM ${s}.engrams) AS bytes`,
        )
      ).rows[0]!;
    const r = seededRandom(1234);
    let refused = 0;
    for (let i = 0; i < 40 * routes.length; i++) {
      const [method, path, valid] = routes[i % routes.length]!;
      const body = mutate(r, valid);
      const before = await counts();
      const raw = r() < 0.05 ? JSON.stringify(body).slice(0, -1) : undefined;
      const res = await hub.request(method, path, { token: acme.adminKey, body: raw === undefined ? body : undefined, raw });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)?.slice(0, 200)}`).toBeLessThan(500);
      if (res.status >= 400) {
        refused++;
        expect(res.headers.get('content-type'), `${method} ${path}`).toMatch(/problem\+json/);
        expect(res.body).toMatchObject({ status: res.status, title: expect.any(String), detail: expect.any(String) });
        expect(await counts(), `${method} ${path} ${JSON.stringify(body)?.slice(0, 200)} wrote despite ${res.status}`).toEqual(before);
      }
    }
    expect(refused).toBeGreaterThan(200);
    await hub.running.hub.audit.drain();
    const { verifyAudit } = await import('../audit/audit-log.js');
    expect((await verifyAudit(hub.db, acme.org, hub.running.hub.config.auditKey)).ok).toBe(true);
  }, 180_000);

  it('never answers 500 to hostile paths, query strings, cursors or bytes', async () => {
    const r = seededRandom(99);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(r() * 256)));
    const pct = (b: Buffer) => [...b].map((x) => '%' + x.toString(16).padStart(2, '0')).join('');
    const SEGMENTS = [
      '%00',
      '%ff',
      '%E0%A4%A',
      '%ED%A0%80',
      '%',
      '..',
      '%2e%2e',
      '%2F',
      'a'.repeat(3000),
      '🙂',
      '%F0%9F%99%82',
      "'",
      '"',
      '%0a%0d',
      'ENG-%00-1',
    ];
    const segment = () => (r() < 0.5 ? pick(SEGMENTS) : pct(randomBytes(1 + Math.floor(r() * 6))));
    const b64 = (s: string) => Buffer.from(s).toString('base64url');
    const CURSORS = [
      b64('99999999999999999999999'),
      b64('1e308'),
      b64('-5'),
      b64('NaN'),
      b64('\u0000'),
      b64('12'),
      'AAAA',
      '====',
      '%00',
      pct(randomBytes(8)),
    ];
    const QUERY_VALUES = [
      '',
      '0',
      '-1',
      '1e308',
      '201',
      'abc',
      '2026-13-45',
      '+275760-09-13',
      '%00',
      '%ff',
      'global',
      'org:acme',
      'user:nobody',
    ];
    const routes: Array<(s: string) => [string, string]> = [
      (s) => ['GET', `/engrams/${s}`],
      (s) => ['PATCH', `/engrams/${s}`],
      (s) => ['DELETE', `/engrams/${s}`],
      (s) => ['POST', `/engrams/${s}/feedback`],
      (s) => ['GET', `/episodes/${s}`],
      (s) => ['GET', `/sessions/${s}`],
      (s) => ['POST', `/sessions/${s}/end`],
      (s) => ['DELETE', `/packs/${s}`],
      (s) => ['DELETE', `/admin/api-keys/${s}`],
      (s) => ['POST', `/admin/groups/${s}/members`],
    ];
    const LISTS = ['/engrams', '/admin/audit', '/admin/users', '/admin/groups', '/admin/api-keys', '/episodes'];
    const PARAMS = ['limit', 'cursor', 'scope', 'status', 'type', 'domain', 'from', 'to', 'agent', 'channel', 'q', 'actor', 'action'];
    const BODIES = (): Buffer => {
      switch (Math.floor(r() * 6)) {
        case 0:
          return randomBytes(1 + Math.floor(r() * 200));
        case 1:
          return Buffer.concat([Buffer.from('{"statement": "'), randomBytes(10), Buffer.from('"}')]);
        case 2:
          return Buffer.from(`{"statement": "x\\u${pick(['d800', 'dfff', '0000', 'zzzz', 'd83d'])}"}`);
        case 3:
          return Buffer.from('['.repeat(1000 + Math.floor(r() * 100_000)));
        case 4:
          return Buffer.from(`{"tags": ${'['.repeat(40)}"x"${']'.repeat(40)}}`);
        default:
          return Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"statement": "bom"}')]);
      }
    };
    let calls = 0;
    for (let i = 0; i < 400; i++) {
      let method: string;
      let path: string;
      let body: Buffer | undefined;
      const kind = i % 3;
      if (kind === 0) [method, path] = pick(routes)(segment());
      else if (kind === 1) {
        method = 'GET';
        const q = Array.from({ length: 1 + Math.floor(r() * 3) }, () => {
          const name = pick(PARAMS);
          return `${name}=${name === 'cursor' ? pick(CURSORS) : r() < 0.7 ? encodeURIComponent(pick(QUERY_VALUES)) : segment()}`;
        });
        path = `${pick(LISTS)}?${q.join('&')}`;
      } else {
        method = pick(['POST', 'PATCH']);
        path =
          method === 'POST'
            ? pick(['/engrams', '/recall', '/inject', '/episodes', '/sessions', `/sessions/${session}/end`, '/admin/users'])
            : `/engrams/${id}`;
        body = BODIES();
      }
      if (method !== 'GET' && body === undefined && r() < 0.5) body = Buffer.from('{}');
      const res = await fetch(`${hub.url}/api/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${acme.adminKey}`,
          ...(body
            ? {
                'content-type': pick([
                  'application/json',
                  'application/json; charset=utf-8',
                  'text/plain',
                  'application/json; charset=utf-16',
                ]),
              }
            : {}),
        },
        body,
      });
      const text = await res.text();
      calls++;
      expect(res.status, `${method} ${path} ${body?.subarray(0, 60).toString('hex') ?? ''}: ${text.slice(0, 200)}`).toBeLessThan(500);
      if (res.status >= 400) expect(res.headers.get('content-type'), `${method} ${path}`).toMatch(/problem\+json/);
    }
    expect(calls).toBe(400);
    await hub.running.hub.audit.drain();
    const { verifyAudit } = await import('../audit/audit-log.js');
    expect((await verifyAudit(hub.db, acme.org, hub.running.hub.config.auditKey)).ok).toBe(true);
  }, 180_000);
});
