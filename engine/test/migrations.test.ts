// Store schema migrations on a store written by hand the way an older svc (or a person) left it.

import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import * as fs from 'node:fs';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import git from 'isomorphic-git';
import { LocalStore } from '../store/local-store.js';
import {
  assertStoreWritable,
  LATEST_STORE_VERSION,
  migrateDown,
  migrateUp,
  readStoreVersion,
  STORE_MIGRATIONS,
  storeVersionNotice,
  storeVersionStatus,
  writeStoreVersion,
} from '../store/migrations.js';
import { contentHash } from '../model/content-hash.js';
import { learn } from '../ops/learn.js';
import { systemContext } from '../ops/context.js';
import { SvcError } from '../errors.js';

let root: string;
beforeEach(() => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-migrate-')), 'store');
});
afterEach(() => {
  rmSync(join(root, '..'), { recursive: true, force: true });
});

const ID1 = 'ENG-OLD1-2025-0101-001';
const ID2 = 'ENG-OLD1-2025-0101-002';
const ID3 = 'ENG-OLD1-2025-0101-003';
const BAD = 'ENG-OLD1-2025-0101-004';

const FILES: Record<string, string> = {
  'config.yaml': '# written by svc 0.9\nstore_version: 1\n',
  'local.yaml': 'id_prefix: OLD1\n',
  // No content_hash, no version, a comment: as written by hand.
  [`engrams/${ID1}.yaml`]: `# kept by hand\nid: ${ID1}\nstatus: active\ntype: procedural\nscope: global\nstatement: "Run the tests before every push"\ntags: [ci, git]\n`,
  // A stale hash (the statement was edited after), an unknown key that must survive.
  [`engrams/${ID2}.yaml`]: `id: ${ID2}\nversion: 2\nstatus: candidate\ntype: behavioral\nscope: project:svc\nstatement: Prefer pnpm over npm in this repository\ncontent_hash: sha256:0000\ncustom_note: keep me\nrationale: |\n  Lockfile drift\n  across machines.\n`,
  // Already complete: must stay byte for byte.
  [`engrams/${ID3}.yaml`]: `id: ${ID3}\nversion: 2\nstatus: active\ntype: architectural\nscope: global\nstatement: The index is derived from the YAML files\ncontent_hash: ${contentHash('The index is derived from the YAML files')}\n`,
  // Not YAML at all: migration leaves it alone, the store quarantines it.
  [`engrams/${BAD}.yaml`]: 'statement: [unclosed\n',
  'episodes/2025-01-01.jsonl': `${JSON.stringify({ id: 'EP-OLD1-2025-0101-aaaa0001', at: '2025-01-01T10:00:00Z', summary: 'set up CI', agent: 'cli' })}\n`,
  'events/2025-01.jsonl': `${JSON.stringify({ at: '2025-01-01T10:00:00Z', action: 'created', engram_id: ID1 })}\n`,
  'sessions/SES-OLD1-2025-0101-bbbb0002.yaml': 'id: SES-OLD1-2025-0101-bbbb0002\nstarted_at: 2025-01-01T09:00:00Z\n',
};

function writeOldStore(files: Record<string, string> = FILES): void {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
}

/** Every file under `dir` (relative path -> contents), skipping the given top-level entries. */
function snapshot(
  dir: string,
  skip = new Set(['backups', 'index.db', 'index.db-wal', 'index.db-shm', '.git', 'quarantine']),
): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (d === dir && skip.has(entry.name)) continue;
      if (entry.isDirectory()) walk(path);
      else out[relative(dir, path)] = readFileSync(path, 'utf8');
    }
  };
  walk(dir);
  return out;
}

const data = (rel: string): any => parse(readFileSync(join(root, rel), 'utf8'));

describe('versions', () => {
  it('version 1 is the baseline, version 2 the latest; a store without config.yaml is version 1', () => {
    expect(LATEST_STORE_VERSION).toBe(2);
    expect(STORE_MIGRATIONS.map((m) => [m.version, m.name, m.compatible])).toEqual([[2, 'content-hashes', true]]);
    mkdirSync(join(root, 'engrams'), { recursive: true });
    expect(readStoreVersion(root)).toBe(1);
    writeFileSync(join(root, 'config.yaml'), 'other: x\n');
    expect(readStoreVersion(root)).toBe(1);
    writeFileSync(join(root, 'config.yaml'), 'store_version: "2" # quoted\n');
    expect(readStoreVersion(root)).toBe(2);
    writeFileSync(join(root, 'config.yaml'), 'store_version: two\n');
    expect(() => readStoreVersion(root)).toThrow(/invalid store_version "two"/);
  });

  it('reports an older store and tells the user to migrate, but still lets this build write to it', () => {
    writeOldStore();
    const status = storeVersionStatus(root);
    expect(status).toMatchObject({ current: 1, latest: 2, state: 'older', pending: [{ version: 2, name: 'content-hashes' }] });
    expect(storeVersionNotice(root)).toMatch(/run `svc migrate`/);
    expect(() => assertStoreWritable(root)).not.toThrow();
  });
});

describe('an old store written by hand', () => {
  it('opens as it is before any migration', async () => {
    writeOldStore();
    const store = await LocalStore.open(root);
    try {
      expect((await store.get(ID1))?.statement).toBe('Run the tests before every push');
      expect((await store.get(ID2))?.custom_note).toBe('keep me');
      expect(store.warnings.join('\n')).toMatch(new RegExp(`quarantined ${BAD}`));
    } finally {
      store.close();
    }
  });

  it('migrates up without loss, after a backup of its tracked files', async () => {
    writeOldStore();
    const before = snapshot(root);
    const dataBefore = Object.fromEntries([ID1, ID2, ID3].map((id) => [id, data(`engrams/${id}.yaml`)]));
    const run = await migrateUp(root, { now: new Date('2026-02-03T04:05:06.789Z') });

    expect(run).toMatchObject({ direction: 'up', from: 1, to: 2 });
    expect(run.backup).toBe(join(root, 'backups', '2026-02-03T04-05-06-789Z'));
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]!.changed).toEqual([`engrams/${ID1}.yaml`, `engrams/${ID2}.yaml`]);
    expect(run.steps[0]!.skipped.map((s) => s.file)).toEqual([`engrams/${BAD}.yaml`]);
    expect(run.warnings.join('\n')).toMatch(new RegExp(`left engrams/${BAD}.yaml as it is`));

    // The version moved, the config's comment stayed.
    expect(readFileSync(join(root, 'config.yaml'), 'utf8')).toBe('# written by svc 0.9\nstore_version: 2\n');
    // Every field kept; only content_hash and version added or corrected.
    const e1 = data(`engrams/${ID1}.yaml`);
    expect(e1).toEqual({ ...dataBefore[ID1], content_hash: contentHash('Run the tests before every push'), version: 2 });
    expect(readFileSync(join(root, `engrams/${ID1}.yaml`), 'utf8')).toMatch(/^# kept by hand\n/);
    expect(readFileSync(join(root, `engrams/${ID1}.yaml`), 'utf8')).toContain('tags: [ ci, git ]');
    expect(data(`engrams/${ID2}.yaml`)).toEqual({
      ...dataBefore[ID2],
      content_hash: contentHash('Prefer pnpm over npm in this repository'),
    });
    const after = snapshot(root);
    for (const rel of Object.keys(before)) {
      if (![`engrams/${ID1}.yaml`, `engrams/${ID2}.yaml`, 'config.yaml'].includes(rel)) expect(after[rel], rel).toBe(before[rel]);
    }

    // The backup holds the tracked files as they were, and nothing derived or machine-local.
    const backup = snapshot(run.backup!);
    const { ['local.yaml']: _machine, ...tracked } = before;
    expect(Object.keys(backup).sort()).toEqual([...Object.keys(tracked), 'backup.json'].sort());
    for (const [rel, text] of Object.entries(tracked)) expect(backup[rel], rel).toBe(text);
    expect(JSON.parse(backup['backup.json']!)).toMatchObject({
      reason: 'migrate up 1 -> 2',
      store_version: 1,
      files: Object.keys(tracked).length,
    });
    expect(readFileSync(join(root, 'backups', '.gitignore'), 'utf8')).toMatch(/^\*$/m);

    // The store reads the migrated files, and the index agrees with them.
    const store = await LocalStore.open(root);
    try {
      expect((await store.get(ID1))?.content_hash).toBe(contentHash('Run the tests before every push'));
      expect((await store.get(ID2))?.content_hash).toBe(contentHash('Prefer pnpm over npm in this repository'));
      expect((await store.get(ID2))?.custom_note).toBe('keep me');
      expect((await store.findByHash(contentHash('run the tests before every push.'))).map((e) => e.id)).toEqual([ID1]);
      expect(await store.queryEpisodes({})).toHaveLength(1);
    } finally {
      store.close();
    }
  });

  it('is idempotent: a second run does nothing and takes no backup; a re-run after a crash changes nothing more', async () => {
    writeOldStore();
    await migrateUp(root);
    const once = snapshot(root);
    const again = await migrateUp(root);
    expect(again).toMatchObject({ from: 2, to: 2, steps: [] });
    expect(again.backup).toBeUndefined();
    expect(readdirSync(join(root, 'backups')).filter((f) => f !== '.gitignore')).toHaveLength(1);
    expect(snapshot(root)).toEqual(once);

    // A crash after the files but before store_version was recorded: the step runs again, harmlessly.
    writeFileSync(join(root, 'config.yaml'), 'store_version: 1\n');
    const rerun = await migrateUp(root);
    expect(rerun.steps[0]!.changed).toEqual([]);
    expect(snapshot(root)).toEqual({ ...once, 'config.yaml': 'store_version: 2\n' });
  });

  it('rolls back down to version 1 without touching the engrams, after a backup', async () => {
    writeOldStore();
    await migrateUp(root, { now: new Date('2026-02-03T04:05:06.789Z') });
    const migrated = snapshot(root);
    const down = await migrateDown(root, 1, { now: new Date('2026-02-03T04:05:06.789Z') });
    expect(down).toMatchObject({ direction: 'down', from: 2, to: 1 });
    expect(down.backup).toBe(join(root, 'backups', '2026-02-03T04-05-06-789Z-2'));
    expect(readFileSync(join(down.backup!, 'config.yaml'), 'utf8')).toMatch(/store_version: 2/);
    expect(readStoreVersion(root)).toBe(1);
    expect(snapshot(root)).toEqual({ ...migrated, 'config.yaml': '# written by svc 0.9\nstore_version: 1\n' });

    expect((await migrateDown(root, 1)).backup).toBeUndefined(); // already there
    await expect(migrateDown(root, 2)).rejects.toThrow(/cannot go up/);
    await expect(migrateDown(root, 0)).rejects.toThrow(SvcError);
    await expect(migrateDown(root, 3)).rejects.toThrow(/knows store versions 1 to 2/);
    // And up again, to the same files.
    await migrateUp(root);
    expect(snapshot(root)).toEqual(migrated);
  });

  it('migrates a store that has no config.yaml at all', async () => {
    const { ['config.yaml']: _config, ...files } = FILES;
    writeOldStore(files);
    const run = await migrateUp(root);
    expect(run).toMatchObject({ from: 1, to: 2 });
    expect(readFileSync(join(root, 'config.yaml'), 'utf8')).toBe('store_version: 2\n');
  });
});

describe('a store newer than this build', () => {
  it('is refused for writing and for migration, with a message to upgrade svc, and nothing is written', async () => {
    writeOldStore({ ...FILES, 'config.yaml': 'store_version: 3\nfuture_key: yes\n' });
    const before = snapshot(root);
    const status = storeVersionStatus(root);
    expect(status).toMatchObject({ current: 3, latest: 2, state: 'newer', pending: [] });
    expect(status.message).toMatch(/version 3, newer than this svc knows \(2\): upgrade svc/);
    expect(() => assertStoreWritable(root)).toThrow(SvcError);
    expect(() => assertStoreWritable(root)).toThrow(/upgrade svc/);
    await expect(migrateUp(root)).rejects.toThrow(/upgrade svc/);
    await expect(migrateDown(root, 1)).rejects.toThrow(/upgrade svc/);
    expect(existsSync(join(root, 'backups'))).toBe(false);
    expect(existsSync(join(root, 'index.db'))).toBe(false);
    expect(snapshot(root)).toEqual(before);
  });
});

describe('backups and git', () => {
  it('keeps backups out of git, in a store svc created and in one made by hand without a .gitignore', async () => {
    const store = await LocalStore.open(root);
    await learn(store, { statement: 'Backups never reach the remote' }, systemContext);
    writeStoreVersion(root, 1); // as an older svc left it, whatever version new stores start at
    const run = await migrateUp(root);
    // The store stays usable while and after the migration runs in the same process.
    await learn(store, { statement: 'Writes go on after a migration' }, systemContext);
    store.close();
    expect(run.backup && readdirSync(join(run.backup, 'engrams'))).toHaveLength(1);
    const inBackup = relative(root, join(run.backup!, 'config.yaml'));
    expect(await git.isIgnored({ fs, dir: root, filepath: inBackup })).toBe(true);

    const bare = join(root, '..', 'bare');
    mkdirSync(join(bare, 'engrams'), { recursive: true });
    await git.init({ fs, dir: bare });
    const bareRun = await migrateUp(bare);
    expect(existsSync(join(bare, '.gitignore'))).toBe(false);
    expect(await git.isIgnored({ fs, dir: bare, filepath: relative(bare, join(bareRun.backup!, 'backup.json')) })).toBe(true);
  });

  it('says when there is no store at the path', async () => {
    await expect(migrateUp(join(root, 'nowhere'))).rejects.toThrow(/no store at/);
  });
});
