import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openDatabase } from '../data/database.js';
import type { Database } from '../contracts.js';
import { migratedDataFolder, startHubProcess, type HubProcess } from './support/hub-process.js';
import { adminQuery, databaseUrl } from './support/pg-server.js';
import { svc } from '../../engine/test/support/run-svc.js';

// Backups that restore (issue 29, item 4): a hub with two organizations, people, keys, engrams,
// a webhook, audit rows and checkpoints is backed up, restored into a new folder (PGlite: svc hub
// backup / restore; PostgreSQL: the README's pg_dump / pg_restore), and every row of every table
// comes back; a hub started on the copy serves the old keys, and `svc hub audit verify
// --checkpoints` passes on it. Real child processes throughout.

const HAS_PG_DUMP = spawnSync('pg_dump', ['--version']).status === 0;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON answer, read field by field
async function call(hub: HubProcess, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${hub.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Two organizations' worth of everything, through the hub's REST API as its admins. */
async function populate(hub: HubProcess, keys: Record<string, string>): Promise<void> {
  for (const [org, key] of Object.entries(keys)) {
    for (let i = 0; i < 3; i++) {
      const made = await call(hub, key, 'POST', '/engrams', { statement: `Backups of ${org} restore, fact ${i}`, scope: `org:${org}` });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    const person = await call(hub, key, 'POST', '/admin/users', { name: `${org}-editor`, role: 'editor' });
    expect(person.status).toBe(201);
    const bot = await call(hub, key, 'POST', '/admin/users', { name: `${org}-ci`, kind: 'service', role: 'editor' });
    expect(bot.status).toBe(201);
    const botKey = await call(hub, key, 'POST', '/admin/api-keys', { user_id: bot.body.id, name: 'ci' });
    expect(botKey.status, JSON.stringify(botKey.body)).toBe(201);
    const own = await call(hub, botKey.body.key, 'POST', '/engrams', { statement: `${org}-ci keeps a note`, scope: `user:${org}-ci` });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    const hook = await call(hub, key, 'POST', '/admin/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['engram.created'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    expect((await call(hub, key, 'GET', '/admin/audit')).status).toBe(200);
  }
}

/** Every row of every table outside the system schemas, as text, table by table. */
async function everyRow(db: Database): Promise<Record<string, string[]>> {
  const tables = await db.query<{ s: string; t: string }>(
    `SELECT schemaname AS s, tablename AS t FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`,
  );
  const all: Record<string, string[]> = {};
  for (const { s, t } of tables.rows) {
    const rows = await db.query<{ r: string }>(`SELECT x::text AS r FROM ${JSON.stringify(s)}.${JSON.stringify(t)} x ORDER BY 1`);
    all[`${s}.${t}`] = rows.rows.map((r) => r.r);
  }
  return all;
}

function expectEverything(rows: Record<string, string[]>, slugs: string[]): void {
  const orgs = rows['svc_hub.organizations'] ?? [];
  expect(orgs.length).toBe(slugs.length);
  const count = (suffix: string) =>
    Object.entries(rows)
      .filter(([t]) => t.endsWith(suffix) && !t.startsWith('svc_hub.'))
      .reduce((n, [, r]) => n + r.length, 0);
  // Per organization: 4 engrams, the admin, an editor and a service account, two keys, the webhook, the audit rows.
  expect(count('.engrams')).toBeGreaterThanOrEqual(4 * slugs.length);
  expect(count('.users')).toBeGreaterThanOrEqual(3 * slugs.length);
  expect(count('.api_keys')).toBeGreaterThanOrEqual(2 * slugs.length);
  expect(count('.webhooks')).toBe(slugs.length);
  expect(count('.audit_log')).toBeGreaterThanOrEqual(6 * slugs.length);
}

/** `svc hub audit verify --checkpoints` for each organization, on the database env points to. */
async function verifyAudit(env: NodeJS.ProcessEnv, slugs: string[], checkpoints: string, data?: string): Promise<void> {
  for (const org of slugs) {
    const r = await svc(
      ['hub', 'audit', 'verify', '--org', org, '--checkpoints', checkpoints, ...(data ? ['--data', data] : []), '--json'],
      { env },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true });
    expect(JSON.parse(r.stdout).checkpoints.checked).toBeGreaterThan(0);
  }
}

async function orgWithAdmin(env: NodeJS.ProcessEnv, slug: string, data?: string): Promise<string> {
  const made = await svc(['hub', 'org', 'create', slug, '--admin', `${slug}-admin`, ...(data ? ['--data', data] : []), '--json'], { env });
  expect(made.code, made.stderr).toBe(0);
  return JSON.parse(made.stdout).api_key as string;
}

describe('svc hub backup and restore (PGlite)', () => {
  it('round-trips every row, and the audit chain verifies against its checkpoints on the copy', async () => {
    const data = migratedDataFolder('backup');
    const root = join(data, '..');
    const checkpoints = join(root, 'checkpoints');
    const env = { DATABASE_URL: '', SVC_PATH: join(root, 'store'), SVC_HUB_ALLOW_PRIVATE_URLS: '1', SVC_HUB_KEY: '' };
    const slugs = ['acme', 'beta'];
    const keys: Record<string, string> = {};
    for (const slug of slugs) keys[slug] = await orgWithAdmin(env, slug, data);

    const hub = await startHubProcess(env, ['--data', data]);
    const pid = hub.child.pid!;
    try {
      await populate(hub, keys);
      // Beside a running hub the copy would not be consistent: refused, naming the hub.
      const beside = await svc(['hub', 'backup', '--data', data, '--out', join(root, 'early.svcbak'), '--no-json'], { env });
      expect(beside.stderr).toBe(
        `svc: svc hub (pid ${pid}) is running on the data folder ${data}: stop it for the backup (PGlite keeps the database in that process's memory, so a copy taken beside it would not be consistent), or run the hub on PostgreSQL and back it up with pg_dump while it serves\n`,
      );
      expect(beside.code).toBe(1);
      expect(existsSync(join(root, 'early.svcbak'))).toBe(false);
    } finally {
      expect(await hub.stop()).toBe(0);
    }
    for (const org of slugs) {
      const cp = await svc(['hub', 'audit', 'checkpoint', '--org', org, '--out', checkpoints, '--data', data, '--json'], { env });
      expect(cp.code, cp.stderr).toBe(0);
    }

    const file = join(root, 'hub.svcbak');
    const made = await svc(['hub', 'backup', '--data', data, '--out', file, '--json'], { env });
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout).tables['svc_hub.organizations']).toBe(2);
    const again = await svc(['hub', 'backup', '--data', data, '--out', file, '--no-json'], { env });
    expect(again.stderr).toBe(`svc: ${file} exists: name a new file, or add --force to replace it\n`);
    expect(again.code).toBe(1);

    // A damaged or foreign file is refused before anything is touched.
    const bytes = readFileSync(file);
    const damaged = Buffer.from(bytes);
    damaged[damaged.length - 100] ^= 0xff;
    writeFileSync(join(root, 'damaged.svcbak'), damaged);
    writeFileSync(join(root, 'cut.svcbak'), bytes.subarray(0, bytes.length - 10));
    writeFileSync(join(root, 'foreign.svcbak'), 'PK\x03\x04 not a backup');
    for (const [name, why] of [
      ['damaged', 'its checksum does not match: the file was changed or damaged after it was written'],
      [
        'cut',
        `it is cut short: ${bytes.length - 10 - (bytes.indexOf(0x0a, 17) + 1)} bytes of data, the header says ${bytes.length - (bytes.indexOf(0x0a, 17) + 1)}`,
      ],
      ['foreign', 'it is not a svc hub backup (no "svc-hub-backup 1" line at its start)'],
    ]) {
      const target = join(root, `from-${name}`);
      const r = await svc(['hub', 'restore', join(root, `${name}.svcbak`), '--data', target, '--no-json'], { env });
      expect(r.stderr).toBe(`svc: ${join(root, `${name}.svcbak`)} cannot be restored: ${why}\n`);
      expect(r.code).toBe(1);
      expect(existsSync(target)).toBe(false);
    }

    const copy = join(root, 'restored');
    const restored = await svc(['hub', 'restore', file, '--data', copy, '--json'], { env });
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout).tables).toEqual(JSON.parse(made.stdout).tables);
    expect(readdirSync(root).filter((n) => n.includes('restoring'))).toEqual([]);
    // An occupied folder needs --force; with it, its database is replaced.
    const occupied = await svc(['hub', 'restore', file, '--data', copy, '--no-json'], { env });
    expect(occupied.stderr).toBe(
      `svc: the data folder ${copy} is not empty: restore into a new or empty folder, or add --force to replace its database\n`,
    );
    expect(occupied.code).toBe(1);
    const forced = await svc(['hub', 'restore', file, '--data', copy, '--force', '--json'], { env });
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout).replaced).toBe(true);

    // Every row of every table came back.
    const before = await openDatabase({ dataDir: data });
    const original = await everyRow(before);
    await before.close();
    const after = await openDatabase({ dataDir: copy });
    const copied = await everyRow(after);
    await after.close();
    expect(copied).toEqual(original);
    expectEverything(copied, slugs);

    // A hub on the copy serves the old keys and the old engrams.
    const second = await startHubProcess(env, ['--data', copy]);
    try {
      const list = await call(second, keys.acme!, 'GET', '/engrams?scope=org:acme');
      expect(list.status).toBe(200);
      expect(JSON.stringify(list.body)).toContain('Backups of acme restore, fact 2');
    } finally {
      expect(await second.stop()).toBe(0);
    }
    await verifyAudit(env, slugs, checkpoints, copy);
  }, 240_000);

  it('points a hub on PostgreSQL to pg_dump, and needs --out', async () => {
    const env = { DATABASE_URL: 'postgres://127.0.0.1:1/none' };
    const r = await svc(['hub', 'backup', '--out', join(tmpdir(), 'x.svcbak'), '--no-json'], { env });
    expect(r.stderr).toMatch(/^svc: this hub runs on PostgreSQL \(DATABASE_URL\): back it up with pg_dump --format=custom/);
    expect(r.code).toBe(1);
    const noOut = await svc(['hub', 'backup', '--data', join(tmpdir(), 'nothing-here'), '--no-json'], { env: { DATABASE_URL: '' } });
    expect(noOut.stderr).toBe('svc: usage: svc hub backup --data <dir> --out <file>\n');
    expect(noOut.code).toBe(1);
  });
});

describe.runIf(HAS_PG_DUMP && inject('postgresReachable'))('the README pg_dump / pg_restore round trip (PostgreSQL)', () => {
  it('restores every row into a new database, where the audit chain verifies against its checkpoints', async () => {
    const names = [`svc_bk_${process.pid}_a`, `svc_bk_${process.pid}_b`];
    for (const n of names) await adminQuery(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
    await adminQuery(`CREATE DATABASE ${names[0]} TEMPLATE ${inject('postgresTemplate')}`);
    const [source, target] = names.map(databaseUrl) as [string, string];
    const root = mkdtempSync(join(tmpdir(), 'svc-pg-backup-'));
    const checkpoints = join(root, 'checkpoints');
    mkdirSync(checkpoints);
    const env = { DATABASE_URL: source, SVC_PATH: join(root, 'store'), SVC_HUB_ALLOW_PRIVATE_URLS: '1', SVC_HUB_KEY: '' };
    const slugs = ['acme', 'beta'];
    try {
      const keys: Record<string, string> = {};
      for (const slug of slugs) keys[slug] = await orgWithAdmin(env, slug);
      const hub = await startHubProcess(env);
      try {
        await populate(hub, keys);
      } finally {
        expect(await hub.stop()).toBe(0);
      }
      for (const org of slugs) {
        const cp = await svc(['hub', 'audit', 'checkpoint', '--org', org, '--out', checkpoints, '--json'], { env });
        expect(cp.code, cp.stderr).toBe(0);
      }
      // The commands of the README, as written there.
      const file = join(root, 'hub.dump');
      const dump = spawnSync('pg_dump', ['--format=custom', '--file', file, source], { encoding: 'utf8' });
      expect(dump.status, dump.stderr).toBe(0);
      await adminQuery(`CREATE DATABASE ${names[1]}`);
      const load = spawnSync('pg_restore', ['--no-owner', '--exit-on-error', '--dbname', target, file], { encoding: 'utf8' });
      expect(load.status, load.stderr).toBe(0);

      const [a, b] = await Promise.all([openDatabase({ url: source }), openDatabase({ url: target })]);
      try {
        const original = await everyRow(a);
        expect(await everyRow(b)).toEqual(original);
        expectEverything(original, slugs);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
      const restoredEnv = { ...env, DATABASE_URL: target };
      const second = await startHubProcess(restoredEnv);
      try {
        const list = await call(second, keys.beta!, 'GET', '/engrams?scope=org:beta');
        expect(JSON.stringify(list.body)).toContain('Backups of beta restore, fact 0');
      } finally {
        expect(await second.stop()).toBe(0);
      }
      await verifyAudit(restoredEnv, slugs, checkpoints);
    } finally {
      for (const n of names) await adminQuery(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
    }
  }, 240_000);
});
