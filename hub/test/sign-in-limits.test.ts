import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../data/sql.js';
import { clientKey } from '../limits/sign-in-starts.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { startSamlIdp, type SamlIdp } from './support/saml-idp.js';

// Anonymous sign-in starts store an attempt each (and for SAML an AuthnRequest ID): they are
// limited per client address, an organization keeps a bounded number under way, and what
// expired is swept. SAML starts are used: they reach no provider, so only the hub's own bounds show.

describe.each(DATABASES)('anonymous sign-in starts (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: SamlIdp;
  let login: string;
  const s = () => ident(acme.org.schema);
  const count = async (table: string) =>
    Number((await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s()}.${table}`)).rows[0]!.n);
  const start = () => fetch(login, { redirect: 'manual' });

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
    idp = await startSamlIdp();
    const made = await hub.request('POST', '/admin/identity-providers', {
      token: acme.adminKey,
      body: { name: 'okta', kind: 'saml', idp_metadata: idp.metadata() },
    });
    expect(made.status, made.text).toBe(201);
    login = made.body.login_url;
  }, 60_000);
  afterAll(async () => {
    await idp?.close();
    await hub?.close();
  });

  it('sweeps expired attempts and AuthnRequests when a new sign-in starts', async () => {
    const provider = (await hub.db.query<{ id: string }>(`SELECT id FROM ${s()}.identity_providers WHERE name = 'okta'`)).rows[0]!.id;
    const past = new Date(Date.now() - 60_000);
    await hub.db.query(
      `INSERT INTO ${s()}.login_attempts (state_hash, provider_id, code_verifier, nonce, return_to, expires_at) VALUES ('old', $1, 'v', 'n', '/', $2)`,
      [provider, past],
    );
    await hub.db.query(`INSERT INTO ${s()}.saml_requests (id, provider_id, issued, expires_at) VALUES ('_old', $1, 'x', $2)`, [
      provider,
      past,
    ]);
    expect((await start()).status).toBe(302);
    expect((await hub.db.query(`SELECT 1 FROM ${s()}.login_attempts WHERE state_hash = 'old'`)).rows).toHaveLength(0);
    expect((await hub.db.query(`SELECT 1 FROM ${s()}.saml_requests WHERE id = '_old'`)).rows).toHaveLength(0);
  });

  it('keeps a bounded number of sign-ins under way in an organization', async () => {
    const provider = (await hub.db.query<{ id: string }>(`SELECT id FROM ${s()}.identity_providers WHERE name = 'okta'`)).rows[0]!.id;
    await hub.db.query(
      `INSERT INTO ${s()}.login_attempts (state_hash, provider_id, code_verifier, nonce, return_to, expires_at) SELECT 'bulk-' || g, $1, 'v', 'n', '/', now() + interval '5 minutes' FROM generate_series(1, 10000) g`,
      [provider],
    );
    const r = await start();
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('60');
    expect(((await r.json()) as { detail: string }).detail).toMatch(/too many sign-ins to acme are under way/);
    await hub.db.query(`DELETE FROM ${s()}.login_attempts WHERE state_hash LIKE 'bulk-%'`);
  });

  it('limits the starts from one client address: 429 with Retry-After, and no row past the limit', async () => {
    const before = await count('login_attempts');
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 70; i++) {
      const r = await start();
      statuses.push(r.status);
      if (r.status === 429) refused ??= r;
      else await r.body?.cancel();
    }
    // Two starts were counted above in this minute or the last.
    expect(statuses.filter((x) => x === 302).length).toBeLessThanOrEqual(60);
    expect(statuses.slice(-5)).toEqual([429, 429, 429, 429, 429]);
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await refused!.json()) as { type: string; detail: string }).toMatchObject({
      type: expect.stringMatching(/rate-limited$/),
      detail: expect.stringMatching(/too many sign-ins started from this address/),
    });
    expect((await count('login_attempts')) - before).toBeLessThanOrEqual(60);
    expect(await count('saml_requests')).toBeLessThanOrEqual(62);
  });
});

describe('the client a sign-in start is counted for', () => {
  it('is an IPv4 address whole and an IPv6 address by its /64', () => {
    expect(clientKey('203.0.113.9')).toBe('203.0.113.9');
    expect(clientKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe(clientKey('2001:db8:1:2:bbbb::2'));
    expect(clientKey('2001:db8:1:2::1')).not.toBe(clientKey('2001:db8:1:3::1'));
  });
});
