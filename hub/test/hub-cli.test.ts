import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migratedDataFolder, startHubProcess } from './support/hub-process.js';
import { svc } from '../../engine/test/support/run-svc.js';
import { DATABASES, freshDatabase } from './support/databases.js';
import { openDatabase } from '../data/database.js';
import { ident } from '../data/sql.js';

// `svc hub` as a user runs it: create an organization, start the server, call it, stop it.
// Only the first test is about a hub's first start: the others begin from a migrated folder.

describe('svc hub', () => {
  it('creates an organization, serves it on PGlite, answers with the admin key, and stops on SIGTERM', async () => {
    const data = join(mkdtempSync(join(tmpdir(), 'svc-hub-cli-')), 'hub');
    const env = { DATABASE_URL: '', SVC_PATH: join(data, '..', 'store') };
    const made = await svc(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json'], { env });
    expect(made.code, made.stderr).toBe(0);
    const created = JSON.parse(made.stdout);
    expect(created).toMatchObject({
      org: { slug: 'acme', schema: 'org_acme' },
      admin: { name: 'alice' },
      api_key: expect.stringMatching(/^svc_sk_/),
    });
    const dup = await svc(['hub', 'org', 'create', 'acme', '--admin', 'bob', '--data', data, '--no-json'], { env });
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe('svc: organization "acme" exists already\n');
    expect((await svc(['hub', 'org', 'create', 'Bad_Slug', '--admin', 'x', '--data', data, '--no-json'], { env })).stderr).toMatch(
      /slug "Bad_Slug" is invalid/,
    );
    expect((await svc(['hub', 'org', 'create', 'nobody', '--data', data, '--no-json'], { env })).stderr).toMatch(
      /--admin <name> is required/,
    );
    expect((await svc(['hub', 'frobnicate', '--data', data, '--no-json'], { env })).stderr).toMatch(/unknown hub subcommand "frobnicate"/);
    expect((await svc(['hub', '--port', '70000', '--data', data, '--no-json'], { env })).stderr).toMatch(/--port must be a port number/);
    // A bad setting is the operator's mistake, named in one line, not an internal error.
    const badSetting = await svc(['hub', '--data', data, '--no-json'], { env: { ...env, SVC_HUB_CACHE_ENGRAMS: 'lots' } });
    expect(badSetting.stderr).toMatch(/^svc: SVC_HUB_CACHE_ENGRAMS must be a whole number, 0 or more, of engrams \(got "lots"\)\n$/m);
    expect(badSetting.stderr).not.toMatch(/internal error/);
    expect(badSetting.code).toBe(1);
    const listed = await svc(['hub', 'org', 'list', '--data', data, '--json'], { env });
    expect(JSON.parse(listed.stdout).orgs.map((o: { slug: string }) => o.slug)).toEqual(['acme']);

    const hub = await startHubProcess(env, ['--data', data]);
    try {
      const me = await fetch(`${hub.url}/api/v1/me`, { headers: { authorization: `Bearer ${created.api_key}` } });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ user: { name: 'alice' }, org: { slug: 'acme' }, role: 'admin' });
      const learn = await fetch(`${hub.url}/api/v1/engrams`, {
        method: 'POST',
        headers: { authorization: `Bearer ${created.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement: 'Ship small changes', scope: 'org:acme' }),
      });
      expect(learn.status).toBe(201);
      // A second hub on the same port says so and exits, on either database (its webhook worker
      // and its LISTEN connection stopped: nothing keeps the process running).
      const port = new URL(hub.url).port;
      const busy = await svc(['hub', '--port', port, '--data', join(data, '..', 'second'), '--no-json'], { env });
      expect(busy.stderr).toMatch(new RegExp(`^svc: port ${port} is in use; pick another with --port\n$`, 'm'));
      expect(busy.code).toBe(1);
      if (DATABASES.includes('postgres')) {
        const pg = await freshDatabase('postgres');
        try {
          const onPg = await svc(['hub', '--port', port, '--no-json'], { env: { ...env, DATABASE_URL: pg.url! } });
          expect(onPg.stderr).toMatch(new RegExp(`^svc: port ${port} is in use; pick another with --port\n$`, 'm'));
          expect(onPg.code).toBe(1);
        } finally {
          await pg.close();
        }
      }
    } finally {
      expect(await hub.stop()).toBe(0);
    }
    // The audit rows written while serving verify once it has stopped: the sign-in link org create
    // made, the write's, the read's between the queue's start and stop markers (a clean stop
    // leaves no unfinished writer).
    const verified = await svc(['hub', 'audit', 'verify', '--org', 'acme', '--data', data, '--json'], { env });
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, rows: 5, gaps: [], unfinished: [] });
  }, 120_000);

  it('gets the first admin in and invites a colleague: links from org create, login-link and invite, on the database or through the running hub', async () => {
    const data = migratedDataFolder('hub-cli');
    const env = { DATABASE_URL: '', SVC_PATH: join(data, '..', 'store'), SVC_HUB_KEY: '' };
    const made = await svc(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json'], { env });
    expect(made.code, made.stderr).toBe(0);
    const created = JSON.parse(made.stdout);
    expect(created.sign_in.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/sign-in\/link\//);
    const direct = await svc(['hub', 'login-link', '--org', 'acme', '--data', data, '--no-json'], { env });
    expect(direct.code, direct.stderr).toBe(0);
    expect(direct.stdout).toMatch(
      /^Sign-in link for alice at acme \(works once, for one browser, until .*\):\nhttp:\/\/127\.0\.0\.1:8080\/sign-in\/link\/\S+\n$/,
    );
    const bob = await svc(['hub', 'invite', '--org', 'acme', '--email', 'bob@example.com', '--data', data, '--json'], { env });
    expect(bob.code, bob.stderr).toBe(0);
    const bobInvite = JSON.parse(bob.stdout);
    expect(bobInvite).toMatchObject({
      user: { name: 'bob', created: true },
      emailed: false,
      url: expect.stringMatching(/\/invite\/svc_inv_/),
    });

    const hub = await startHubProcess(env, ['--data', data]);
    const onHub = (url: string) => hub.url + new URL(url).pathname;
    const press = (url: string) =>
      fetch(onHub(url), {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: hub.url, 'content-type': 'application/x-www-form-urlencoded' },
      });
    try {
      // Beside the running hub the PGlite folder is locked: the command says how to go through the hub.
      const locked = await svc(['hub', 'login-link', '--org', 'acme', '--data', data, '--no-json'], { env });
      expect(locked.code).toBe(1);
      expect(locked.stderr).toMatch(/is running on the data folder .*add --url <hub> --key <admin API key>/);
      const viaHub = await svc(['hub', 'login-link', '--org', 'acme', '--url', hub.url, '--key', created.api_key, '--json'], { env });
      expect(viaHub.code, viaHub.stderr).toBe(0);
      const link = JSON.parse(viaHub.stdout);
      expect(link).toMatchObject({
        user: { name: 'alice' },
        emailed: false,
        url: expect.stringMatching(new RegExp(`^${hub.url}/sign-in/link/`)),
      });
      for (const url of [created.sign_in.url, direct.stdout.trim().split('\n').pop()!, link.url]) {
        const signed = await press(url);
        expect(signed.status, url).toBe(303);
        expect(signed.headers.get('location')).toBe('/admin/');
        expect((await press(url)).status).toBe(410);
      }
      const accepted = await press(bobInvite.url);
      expect(accepted.status).toBe(201);
      expect(await accepted.text()).toMatch(/svc_sk_/);

      const carol = await svc(
        [
          'hub',
          'invite',
          '--org',
          'acme',
          '--email',
          'carol@example.com',
          '--name',
          'carol',
          '--role',
          'viewer',
          '--url',
          hub.url,
          '--key',
          created.api_key,
          '--no-json',
        ],
        { env },
      );
      expect(carol.code, carol.stderr).toBe(0);
      expect(carol.stdout).toMatch(
        new RegExp(`^Invited carol \\(created\\) to acme\\.\\nSend them this link .*:\\n${hub.url}/invite/svc_inv_\\S+\\n$`),
      );
      const again = await svc(
        ['hub', 'invite', '--org', 'acme', '--email', 'bob@example.com', '--url', hub.url, '--key', created.api_key, '--no-json'],
        { env },
      );
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/^svc: the hub at .* refused: bob has had a key or a sign-in already/);
      const ghost = await svc(
        ['hub', 'login-link', '--org', 'acme', '--user', 'ghost', '--url', hub.url, '--key', created.api_key, '--no-json'],
        { env },
      );
      expect(ghost.stderr).toMatch(/no user ghost/);
      const otherOrg = await svc(['hub', 'login-link', '--org', 'beta', '--url', hub.url, '--key', created.api_key, '--no-json'], { env });
      expect(otherOrg.stderr).toBe('svc: --key is a key of acme, not of beta\n');
      expect((await svc(['hub', 'invite', '--org', 'acme', '--data', data, '--no-json'], { env })).stderr).toMatch(
        /usage: svc hub invite --org <slug> --email <address>/,
      );
    } finally {
      expect(await hub.stop()).toBe(0);
    }
    const verified = await svc(['hub', 'audit', 'verify', '--org', 'acme', '--data', data, '--json'], { env });
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
  }, 120_000);

  it("org admin add makes (or creates) an admin from the hub's machine, audited: the way back when no admin is left", async () => {
    const data = migratedDataFolder('hub-cli');
    const env = { DATABASE_URL: '', SVC_PATH: join(data, '..', 'store') };
    expect((await svc(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json'], { env })).code).toBe(0);
    const bob = await svc(['hub', 'org', 'admin', 'add', '--org', 'acme', '--user', 'bob', '--data', data, '--json'], { env });
    expect(bob.code, bob.stderr).toBe(0);
    // Bob never had a key: he gets an invitation for his first, shown once.
    expect(JSON.parse(bob.stdout)).toMatchObject({
      org: { slug: 'acme' },
      user: { name: 'bob' },
      created: true,
      previous: null,
      invitation: { token: expect.stringMatching(/^svc_inv_/) },
    });
    const alice = await svc(['hub', 'org', 'admin', 'add', '--org', 'acme', '--user', 'alice', '--data', data, '--no-json'], { env });
    expect(alice.stdout).toBe('alice is now an active admin of acme (was admin).\n');
    expect(
      (await svc(['hub', 'org', 'admin', 'add', '--org', 'acme', '--user', 'svc-hub', '--data', data, '--no-json'], { env })).stderr,
    ).toMatch(/^svc: user name "svc-hub" is reserved/);
    expect((await svc(['hub', 'org', 'admin', 'add', '--org', 'nope', '--user', 'x', '--data', data, '--no-json'], { env })).stderr).toBe(
      'svc: no organization "nope"\n',
    );
    expect((await svc(['hub', 'org', 'admin', 'add', '--org', 'acme', '--data', data, '--no-json'], { env })).stderr).toMatch(
      /usage: svc hub org admin add --org <slug> --user <name>/,
    );

    // Alice is locked out (deactivated, her key revoked, as ending her access does): she comes back with a new key.
    let db = await openDatabase({ dataDir: data });
    await db.query(`UPDATE ${ident('org_acme')}.users SET active = false, role = 'viewer' WHERE name = 'alice'`);
    await db.query(`UPDATE ${ident('org_acme')}.api_keys SET revoked_at = now()`);
    await db.close();
    const back = await svc(['hub', 'org', 'admin', 'add', '--org', 'acme', '--user', 'alice', '--data', data, '--json'], { env });
    expect(JSON.parse(back.stdout)).toMatchObject({
      created: false,
      previous: { role: 'viewer', active: false },
      invitation: null,
      api_key: { key: expect.stringMatching(/^svc_sk_/) },
    });

    db = await openDatabase({ dataDir: data });
    try {
      const rows = await db.query<{ actor: string; resource: string; details: { user: string; created: boolean } }>(
        `SELECT actor, resource, details FROM ${ident('org_acme')}.audit_log WHERE action = 'cli.org.admin.add' ORDER BY seq`,
      );
      expect(rows.rows.map((r) => [r.actor, r.details.user, r.details.created])).toEqual([
        ['svc-hub', 'bob', true],
        ['svc-hub', 'alice', false],
        ['svc-hub', 'alice', false],
      ]);
      const alice = await db.query<{ role: string; active: boolean }>(
        `SELECT role, active FROM ${ident('org_acme')}.users WHERE name = 'alice'`,
      );
      expect(alice.rows[0]).toEqual({ role: 'admin', active: true });
    } finally {
      await db.close();
    }
    const verified = await svc(['hub', 'audit', 'verify', '--org', 'acme', '--data', data, '--json'], { env });
    // org create's sign-in link, then the admin adds.
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, rows: 4 });
  }, 120_000);
});
