import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../start.js';
import { createOrgWithAdmin } from '../admin/provision.js';
import { openDatabase } from '../data/database.js';
import { ident } from '../data/sql.js';
import { providerByName } from '../login/identity-providers.js';
import { NO_SECRET_KEY_WARNING, parseSecretKey, secretBox, secretKeyId, type SecretBox } from '../data/secret-box.js';
import type { Database, Org } from '../contracts.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';
import { startOidcIdp, type OidcIdp } from './support/oidc-idp.js';
import { CookieBrowser } from './support/cookie-browser.js';
import { migratedDataFolder } from './support/hub-process.js';
import { svc } from '../../engine/test/support/run-svc.js';

// Secrets at rest, read the way someone holding the database (or a backup of it) reads it: with a
// key set, the webhook secrets, the identity provider's client secret and the keys the hub
// generated into the control schema appear nowhere in clear in any table of the control or the
// organization's schema, while deliveries still verify and people still sign in. `svc hub secrets
// rotate` (the real command) moves everything to a new key with the old one in
// SVC_HUB_SECRET_KEY_OLD, after which the old key alone opens nothing; a secret stored in clear
// before a key was set keeps working and is sealed by rotate; a bad key refuses the start in one line.

const newKey = (): string => randomBytes(32).toString('base64');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Every row of every table of the schemas, as text: what a dump of the database would show. */
async function everyRow(db: Database, schemas: string[]): Promise<string> {
  const out: string[] = [];
  for (const schema of schemas) {
    const tables = await db.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, [
      schema,
    ]);
    expect(tables.rows.length).toBeGreaterThan(3);
    for (const { tablename } of tables.rows) {
      const t = `${ident(schema)}.${ident(tablename)}`;
      const rows = await db.query<{ row: string }>(`SELECT x::text AS row FROM ${t} x`);
      for (const r of rows.rows) out.push(`${schema}.${tablename}: ${r.row}`);
    }
  }
  return out.join('\n');
}

describe.each(DATABASES)('secrets at rest (%s)', (kind) => {
  let database: TestDatabase;
  let db: Database;
  let hub: RunningHub | undefined;
  let port: number;
  let idp: OidcIdp;
  let receiver: Receiver;
  let legacyReceiver: Receiver;
  let org: Org;
  let adminKey: string;
  const keyA = newKey();
  // The second key in hex: both forms are accepted.
  const keyB = randomBytes(32).toString('hex');
  const clientSecret = `corp-${randomBytes(16).toString('hex')}`;
  const legacySecret = `whsec_${randomBytes(32).toString('base64')}`;
  let webhookSecret: string;
  /** Every secret in clear, by name: none may appear in any table. */
  const known: Record<string, string> = {};
  const logs: string[] = [];

  const url = () => `http://127.0.0.1:${port}`;
  async function start(env: NodeJS.ProcessEnv): Promise<RunningHub> {
    const running = await startHub({
      db,
      port,
      env,
      log: (m: string) => logs.push(m),
      allowPrivateUrls: true,
      webhooks: { pollMs: 50 },
      rateLimits: { authFailuresPerMinute: 10_000 },
    });
    hub = running;
    return running;
  }
  async function stop(): Promise<void> {
    await hub?.close();
    hub = undefined;
    // The next hub listens on this port: the client first sees the closed keep-alive connections as closed.
    await new Promise((done) => setTimeout(done, 100));
  }
  const api = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${url()}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extra },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  /** A write that fires engram.created: both webhooks get it, signed with their secrets. */
  async function deliveriesVerify(label: string): Promise<void> {
    const before = [receiver.received.length, legacyReceiver.received.length];
    const made = await api('POST', '/engrams', { statement: `Seal secrets at rest ${label}`, scope: `org:${org.slug}` });
    expect(made.status, made.text).toBe(201);
    for (const [r, n] of [
      [receiver, before[0]!],
      [legacyReceiver, before[1]!],
    ] as const) {
      await r.until((all) => all.length > n);
      expect(r.received.slice(n).every((x) => x.verified)).toBe(true);
    }
  }
  async function signInWorks(sub: string): Promise<void> {
    idp.next = { sub, email: `${sub}@acme.example`, email_verified: true };
    const browser = new CookieBrowser();
    const page = await browser.follow(
      `${url()}/auth/${org.slug}/corp/login`,
      (u) => u.port === String(port) && !u.pathname.startsWith('/auth/'),
    );
    expect(page.status, page.text).toBeLessThan(400);
    const session = await browser.request('GET', `${url()}/auth/session`);
    expect(session.status, session.text).toBe(200);
    expect(JSON.parse(session.text)).toMatchObject({ user: { name: sub }, org: { slug: org.slug } });
  }
  /** No known secret in clear in any row of the control or the organization's schema. */
  async function nothingInClear(): Promise<void> {
    const dump = await everyRow(db, ['svc_hub', org.schema]);
    expect(dump).toContain('enc:v1:');
    for (const [name, value] of Object.entries(known)) {
      expect(dump.includes(value), `${name} appears in clear in the database`).toBe(false);
    }
  }
  const stored = async () => ({
    control: (await db.query<{ name: string; value: string }>(`SELECT name, value FROM svc_hub.secrets ORDER BY name`)).rows,
    webhooks: (await db.query<{ url: string; secret: string }>(`SELECT url, secret FROM ${ident(org.schema)}.webhooks ORDER BY url`)).rows,
    providers: (await db.query<{ client_secret: string }>(`SELECT client_secret FROM ${ident(org.schema)}.identity_providers`)).rows,
  });
  /** `svc hub secrets rotate` as an operator runs it: beside a PostgreSQL hub, or on a PGlite folder nobody has open. */
  async function rotate(env: NodeJS.ProcessEnv, mode = '--json') {
    const where = kind === 'postgres' ? { DATABASE_URL: database.url! } : { DATABASE_URL: '' };
    if (kind === 'pglite') await db.close();
    try {
      return await svc(['hub', 'secrets', 'rotate', mode, ...(kind === 'pglite' ? ['--data', database.dataDir!] : [])], {
        env: { ...where, SVC_HUB_SECRET_KEY: '', SVC_HUB_SECRET_KEY_OLD: '', ...env },
      });
    } finally {
      if (kind === 'pglite') db = await openDatabase({ dataDir: database.dataDir! });
    }
  }

  beforeAll(async () => {
    database = await freshDatabase(kind);
    db = database.db;
    port = await freePort();
    idp = await startOidcIdp([{ client_id: 'svc-corp', client_secret: clientSecret, redirect_uris: [`${url()}/auth/acme/corp/callback`] }]);
    receiver = await startReceiver();
    legacyReceiver = await startReceiver();
    const made = await createOrgWithAdmin(db, 'acme', 'admin');
    org = made.org;
    adminKey = made.apiKey;
    // A webhook from before the key was set: its secret is stored as it always was, in clear.
    await db.query(`INSERT INTO ${ident(org.schema)}.webhooks (id, url, events, secret, created_by) VALUES ($1, $2, $3, $4, $5)`, [
      'WH-legacy',
      legacyReceiver.url,
      ['engram.created'],
      legacySecret,
      'admin',
    ]);
    legacyReceiver.secret = legacySecret;
  }, 60_000);
  afterAll(async () => {
    await stop();
    await Promise.all([idp?.close(), receiver?.close(), legacyReceiver?.close()]);
    // A PGlite reopened after rotate is this file's own; PostgreSQL's database is dropped.
    if (kind === 'pglite') await db?.close();
    else await database?.close();
  });

  it('with a key set, stores every secret sealed: no table holds one in clear, and deliveries and sign-in still work', async () => {
    const running = await start({ SVC_HUB_SECRET_KEY: keyA });
    expect(logs.some((m) => m.includes(NO_SECRET_KEY_WARNING))).toBe(false);
    // Sent with an Idempotency-Key: the answer kept for a replay holds the secret, sealed too.
    const hook = await api('POST', '/admin/webhooks', { url: receiver.url, events: ['engram.created'] }, { 'idempotency-key': 'hook-1' });
    expect(hook.status, hook.text).toBe(201);
    webhookSecret = hook.body.secret as string;
    const replay = await api('POST', '/admin/webhooks', { url: receiver.url, events: ['engram.created'] }, { 'idempotency-key': 'hook-1' });
    expect(replay.body.secret).toBe(webhookSecret);
    receiver.secret = webhookSecret;
    const provider = await api('POST', '/admin/identity-providers', {
      name: 'corp',
      kind: 'oidc',
      issuer: idp.issuer,
      client_id: 'svc-corp',
      client_secret: clientSecret,
      allowed_domains: ['acme.example'],
      create_users: true,
    });
    expect(provider.status, provider.text).toBe(201);

    const { config } = running.hub;
    Object.assign(known, {
      'the webhook secret': webhookSecret,
      "the webhook secret's key": webhookSecret.slice('whsec_'.length),
      'the client secret': clientSecret,
      'the JWT secret': config.jwt.current,
      'the audit HMAC key': config.auditKey,
    });
    const pem = (await stored()).control.find((r) => r.name === 'checkpoint_key')!;
    const pemBody = config.secrets.open(pem.value).split('\n')[1]!;
    expect(pemBody).toMatch(/^[A-Za-z0-9+/=]{20,}$/);
    known['the checkpoint signing key'] = pemBody;

    const id = secretKeyId(parseSecretKey(keyA));
    const rows = await stored();
    expect(rows.control.map((r) => r.name)).toEqual(['audit_key', 'checkpoint_key', 'jwt_secret']);
    for (const v of [
      ...rows.control.map((r) => r.value),
      rows.webhooks.find((w) => w.url === receiver.url)!.secret,
      rows.providers[0]!.client_secret,
    ])
      expect(v.startsWith(`enc:v1:${id}:`)).toBe(true);
    // The row from before the key: still in clear until rotate, and still working.
    expect(rows.webhooks.find((w) => w.url === legacyReceiver.url)!.secret).toBe(legacySecret);
    await nothingInClear();

    await deliveriesVerify('first');
    const test = await api('POST', `/admin/webhooks/${hook.body.id as string}/test`);
    expect(test.body).toMatchObject({ delivered: true });
    await signInWorks('alice');
    // What sign-in opens is the provider's client secret; a box without the key opens nothing.
    expect((await providerByName(db, org, 'corp', config.secrets))!.client_secret).toBe(clientSecret);
    await expect(providerByName(db, org, 'corp', secretBox(null))).rejects.toThrow(/sealed under key/);
    await stop();
  }, 60_000);

  it('rotate re-seals everything under a new key while the old one still reads; afterwards the old key alone opens nothing', async () => {
    const idA = secretKeyId(parseSecretKey(keyA));
    const idB = secretKeyId(parseSecretKey(keyB));
    // Without a new key there is nothing to seal under.
    const none = await rotate({}, '--no-json');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^svc: SVC_HUB_SECRET_KEY is not set/m);

    const first = await rotate({ SVC_HUB_SECRET_KEY: keyB, SVC_HUB_SECRET_KEY_OLD: keyA });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      keyId: idB,
      control: { sealed: 0, resealed: 3, unchanged: 0 },
      orgs: [{ slug: 'acme', sealed: 1, resealed: 2, unchanged: 0 }],
    });
    // Again: nothing left to do.
    const again = await rotate({ SVC_HUB_SECRET_KEY: keyB, SVC_HUB_SECRET_KEY_OLD: keyA });
    expect(JSON.parse(again.stdout)).toEqual({
      keyId: idB,
      control: { sealed: 0, resealed: 0, unchanged: 3 },
      orgs: [{ slug: 'acme', sealed: 0, resealed: 0, unchanged: 3 }],
    });

    const rows = await stored();
    const all = [...rows.control.map((r) => r.value), ...rows.webhooks.map((w) => w.secret), rows.providers[0]!.client_secret];
    expect(all.every((v) => v.startsWith(`enc:v1:${idB}:`))).toBe(true);
    known['the webhook secret from before the key'] = legacySecret;
    known["that secret's key"] = legacySecret.slice('whsec_'.length);
    await nothingInClear();

    // The old key alone opens none of them, and a hub given only it refuses to start, naming the key it lacks.
    const oldOnly: SecretBox = secretBox(parseSecretKey(keyA));
    for (const v of all) expect(() => oldOnly.open(v)).toThrow(new RegExp(`sealed under key ${idB}`));
    await expect(start({ SVC_HUB_SECRET_KEY: keyA })).rejects.toThrow(
      new RegExp(`sealed under key ${idB}, which neither SVC_HUB_SECRET_KEY \\(${idA}\\)`),
    );
    await new Promise((done) => setTimeout(done, 200));

    // The new key (with or without the old beside it) reads everything: deliveries of both webhooks verify, people sign in.
    await start({ SVC_HUB_SECRET_KEY: keyB, SVC_HUB_SECRET_KEY_OLD: keyA });
    await deliveriesVerify('after rotate');
    await stop();
    await start({ SVC_HUB_SECRET_KEY: keyB });
    await deliveriesVerify('new key only');
    // A change to the provider makes sign-in read its configuration (and so its secret) afresh.
    const patched = await api(
      'PATCH',
      `/admin/identity-providers/${(await providerByName(db, org, 'corp', hub!.hub.config.secrets))!.id}`,
      {
        allowed_domains: ['acme.example', 'corp.example'],
      },
    );
    expect(patched.status, patched.text).toBe(200);
    await signInWorks('bob');
    await stop();
  }, 90_000);

  it('without a key, stores as before and warns once at start', async () => {
    logs.length = 0;
    // The hub reads nothing sealed without its key: this hub gets a database of its own.
    const other = await freshDatabase(kind);
    try {
      const running = await startHub({ db: other.db, port: 0, env: {}, log: (m: string) => logs.push(m) });
      try {
        expect(logs.filter((m) => m.includes(NO_SECRET_KEY_WARNING))).toHaveLength(1);
        const jwt = (await other.db.query<{ value: string }>(`SELECT value FROM svc_hub.secrets WHERE name = 'jwt_secret'`)).rows[0]!.value;
        expect(jwt).toBe(running.hub.config.jwt.current);
      } finally {
        await running.close();
      }
    } finally {
      await other.close();
    }
  }, 60_000);
});

describe('a bad SVC_HUB_SECRET_KEY', () => {
  it('refuses the start in one line, never echoing the key', async () => {
    const data = migratedDataFolder('secret-key');
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [
        { SVC_HUB_SECRET_KEY: 'not-a-key-at-all' },
        /^svc: SVC_HUB_SECRET_KEY must be 32 random bytes as 64 hex digits or 44 base64 characters/,
      ],
      [{ SVC_HUB_SECRET_KEY: randomBytes(16).toString('base64') }, /^svc: SVC_HUB_SECRET_KEY must be 32 random bytes/],
      [{ SVC_HUB_SECRET_KEY: newKey(), SVC_HUB_SECRET_KEY_OLD: 'abc' }, /^svc: SVC_HUB_SECRET_KEY_OLD \(key 1\) must be 32 random bytes/],
      [{ SVC_HUB_SECRET_KEY_OLD: newKey() }, /^svc: SVC_HUB_SECRET_KEY_OLD is set without SVC_HUB_SECRET_KEY/],
    ];
    const clean: NodeJS.ProcessEnv = { DATABASE_URL: '', SVC_HUB_SECRET_KEY: '', SVC_HUB_SECRET_KEY_OLD: '' };
    for (const [env, message] of cases) {
      const r = await svc(['hub', '--port', '0', '--data', data, '--no-json'], {
        env: { ...clean, ...env },
      });
      expect(r.code, r.stderr).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines.find((l) => l.startsWith('svc: '))).toMatch(message);
      expect(r.stderr).not.toMatch(/internal error|at .*\.js:\d+/);
      if (env.SVC_HUB_SECRET_KEY) expect(r.stderr).not.toContain(env.SVC_HUB_SECRET_KEY);
      // The rotate command checks the keys before it opens anything.
      const rot = await svc(['hub', 'secrets', 'rotate', '--data', data, '--no-json'], {
        env: { ...clean, ...env },
      });
      expect(rot.code).toBe(1);
      expect(rot.stderr).toMatch(message);
    }
  }, 60_000);
});
