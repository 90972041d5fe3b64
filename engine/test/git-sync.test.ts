import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { LocalStore } from '../store/local-store.js';
import { syncStores, type SyncReport } from '../store/git-sync.js';
import { syncStatus, setRemote } from '../store/git-sync-state.js';
import { learn } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { capture, timeline } from '../ops/episodes.js';
import { feedback } from '../ops/feedback.js';
import { editEngram } from '../ops/edit.js';
import { resolveConflict } from '../store/sync-resolve.js';
import { readConflicts } from '../store/sync-conflicts.js';
import { systemContext } from '../ops/context.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';

// Two machines (two stores in temp folders) sync through a real git server: git http-backend
// behind node:http on 127.0.0.1.

let server: GitHttpServer;
beforeAll(async () => {
  server = await startGitHttpServer();
});
afterAll(async () => {
  await server.close();
});

let n = 0;
let url: string;
let bare: string;
let machineA: string;
let machineB: string;

beforeEach(() => {
  n += 1;
  ({ url, dir: bare } = server.createRepo(`store${n}`));
  const base = mkdtempSync(join(tmpdir(), 'svc-sync-'));
  machineA = join(base, 'a');
  machineB = join(base, 'b');
});

const gitBare = (...args: string[]): string => execFileSync('git', ['-C', bare, ...args], { encoding: 'utf8' });
const treeFiles = (): string[] => gitBare('ls-tree', '-r', '--name-only', 'main').split('\n').filter(Boolean);

async function withStore<T>(root: string, fn: (s: LocalStore) => Promise<T>): Promise<T> {
  const s = await LocalStore.open(root);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

async function sync(root: string, remote?: string): Promise<SyncReport> {
  const r = await syncStores(root, { remote });
  expect(r.primary).not.toBeNull();
  return r.primary!;
}

const learnAt = (root: string, statement: string, extra: Record<string, unknown> = {}) =>
  withStore(root, async (s) => (await learn(s, { statement, ...extra }, systemContext)).engram);

/** Rewrites one field of an engram through the store (as an op would). */
const edit = (root: string, id: string, change: Record<string, unknown>) =>
  withStore(root, (s) =>
    s.write(async (tx) => {
      const e = (await tx.get(id))!;
      Object.assign(e, change);
      await tx.put(e);
    }),
  );

/** Every YAML file of a store (engrams, sessions, config, quarantine), for conflict markers. */
function yamlTexts(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const f of readdirSync(dir, { withFileTypes: true })) {
      if (f.name === '.git') continue;
      const p = join(dir, f.name);
      if (f.isDirectory()) walk(p);
      else if (/\.ya?ml($|\.sync-conflict)/.test(f.name)) out.push(readFileSync(p, 'utf8'));
    }
  };
  walk(root);
  return out;
}
const MARKERS = /^(<{7}|={7}|>{7})/m;

describe('git sync between two machines', () => {
  it('the first sync sets the remote and pushes; another machine pulls and recalls the engrams', async () => {
    const rule = await learnAt(machineA, 'Never deploy the billing service on a Friday');
    const first = await sync(machineA, url);
    expect(first).toMatchObject({ remote_set: 'added', merge: 'remote-empty', pushed: true });
    expect(first.committed).toMatch(/^[0-9a-f]{40}$/);
    const files = treeFiles();
    expect(files).toEqual(expect.arrayContaining(['.gitignore', 'config.yaml', `engrams/${rule.id}.yaml`]));
    expect(files.some((f) => f.startsWith('events/'))).toBe(true);
    // Machine-local and derived files never leave.
    expect(files.filter((f) => /^(local\.yaml|index\.db|models\/|quarantine\/)/.test(f))).toEqual([]);
    expect(gitBare('log', '--stat', 'main')).toMatch(new RegExp(`engrams/${rule.id}\\.yaml`));
    // The engram is private (the default visibility): private engrams are pushed.
    expect(parse(gitBare('show', `main:engrams/${rule.id}.yaml`))).toMatchObject({ visibility: 'private' });

    // Machine B: a fresh store, first sync with the address.
    const pulled = await sync(machineB, url);
    expect(pulled.remote_set).toBe('added');
    expect(pulled.pulled.engrams).toBe(1);
    await withStore(machineB, async (s) => {
      const found = await recall(s, 'deploy billing Friday', { fast: true });
      expect(found.hits[0]?.engram.id).toBe(rule.id);
      expect(s.idPrefix()).not.toBe(rule.id.split('-')[1]); // B has its own prefix
    });
    // B pushes its merge; a bare sync on A then has nothing to do but stays in step.
    const again = await sync(machineA);
    expect(again.remote_set).toBeNull();
    const status = await syncStatus(machineA);
    expect(status).toMatchObject({ remote: url, ahead: 0, behind: 0, uncommitted: { engrams: 0, other: 0 } });
    expect(status.last_sync).not.toBeNull();
  });

  it('keeps engrams of scope local (and their history lines) off the remote, still served locally', async () => {
    const secret = await learnAt(machineA, 'My laptop keeps the staging VPN profile in ~/vpn/staging.ovpn', { scope: 'local' });
    const shared = await learnAt(machineA, 'Staging deploys go through the release channel');
    const r = await sync(machineA, url);
    expect(r.local_only).toBe(1);
    const files = treeFiles();
    expect(files).toContain(`engrams/${shared.id}.yaml`);
    expect(files).not.toContain(`engrams/${secret.id}.yaml`);
    const everything = gitBare('log', '-p', '--all');
    expect(everything).not.toContain(secret.id);
    expect(everything).not.toContain('staging.ovpn');
    expect(everything).toContain(shared.id);
    // Still here and found on machine A, and its history is kept here.
    await withStore(machineA, async (s) => {
      expect((await recall(s, 'VPN profile', { fast: true })).hits[0]?.engram.id).toBe(secret.id);
      expect((await s.listEvents({ engram_id: secret.id })).map((e) => e.action)).toEqual(['created']);
    });
    expect((await syncStatus(machineA)).local_only).toBe(1);

    // An engram that turns local leaves the remote at the next sync, and the other machine drops it.
    await sync(machineB, url);
    expect(existsSync(join(machineB, 'engrams', `${shared.id}.yaml`))).toBe(true);
    await edit(machineA, shared.id, { scope: 'local' });
    await sync(machineA);
    expect(treeFiles()).not.toContain(`engrams/${shared.id}.yaml`);
    expect(existsSync(join(machineA, 'engrams', `${shared.id}.yaml`))).toBe(true);
    const b = await sync(machineB);
    expect(b.pulled.removed).toBe(1);
    await withStore(machineB, async (s) => expect(await s.get(shared.id)).toBeNull());
  });

  it('merges changes to different engrams made on both machines', async () => {
    await sync(machineA, url);
    await sync(machineB, url);
    const fromA = await learnAt(machineA, 'Machine A learned: cache keys include the locale');
    const fromB = await learnAt(machineB, 'Machine B learned: feature flags expire after 90 days');
    await sync(machineA);
    const b = await sync(machineB);
    expect(b).toMatchObject({ merge: 'merged', conflicts: [] });
    const a = await sync(machineA);
    expect(a.merge).toBe('fast-forward');
    for (const root of [machineA, machineB]) {
      await withStore(root, async (s) => {
        expect(await s.get(fromA.id)).not.toBeNull();
        expect(await s.get(fromB.id)).not.toBeNull();
      });
    }
    expect(treeFiles()).toEqual(expect.arrayContaining([`engrams/${fromA.id}.yaml`, `engrams/${fromB.id}.yaml`]));
    // The machines have converged: further syncs change nothing (no endless merge commits).
    const commits = gitBare('rev-list', '--count', 'main').trim();
    expect(await sync(machineB)).toMatchObject({ merge: 'up-to-date', pushed: false, committed: null });
    expect(await sync(machineA)).toMatchObject({ merge: 'up-to-date', pushed: false, committed: null });
    expect(gitBare('rev-list', '--count', 'main').trim()).toBe(commits);
  });

  it('two machines syncing at once: a push that loses the race merges again and pushes', async () => {
    await sync(machineA, url);
    await sync(machineB, url);
    const fromA = await learnAt(machineA, 'Race A: retries use exponential backoff');
    const fromB = await learnAt(machineB, 'Race B: timeouts are set per request');
    const [a, b] = await Promise.all([sync(machineA), sync(machineB)]);
    expect(a.pushed || b.pushed).toBe(true);
    await sync(machineA);
    await sync(machineB);
    expect(treeFiles()).toEqual(expect.arrayContaining([`engrams/${fromA.id}.yaml`, `engrams/${fromB.id}.yaml`]));
    for (const root of [machineA, machineB]) {
      await withStore(root, async (s) => {
        expect(await s.get(fromA.id)).not.toBeNull();
        expect(await s.get(fromB.id)).not.toBeNull();
      });
    }
  });

  it('merges one engram changed in different fields on both machines, field by field', async () => {
    const e = await learnAt(machineA, 'Database migrations run before the app starts');
    await sync(machineA, url);
    await sync(machineB, url);
    await edit(machineA, e.id, { rationale: 'A crash loop otherwise' });
    await withStore(machineB, (s) => feedback(s, [{ id: e.id, signal: 'positive' }], systemContext));
    await sync(machineA);
    const b = await sync(machineB);
    expect(b.conflicts).toEqual([]);
    expect(b.merged_engrams).toEqual([e.id]);
    await sync(machineA);
    for (const root of [machineA, machineB]) {
      await withStore(root, async (s) => {
        expect(await s.get(e.id)).toMatchObject({ rationale: 'A crash loop otherwise', feedback_signals: { positive: 1 } });
      });
    }
  });

  it('loses nothing when both machines edit one engram: counters add up, the other statement waits in a synced conflict record either machine resolves', async () => {
    const e = await learnAt(machineA, 'Releases are cut from the main branch');
    await sync(machineA, url);
    await sync(machineB, url);
    // Each machine rewrites the statement and votes for it.
    for (const [root, statement] of [
      [machineA, 'Releases are cut from release branches'],
      [machineB, 'Releases are cut from tags on main'],
    ] as const) {
      await withStore(root, async (s) => {
        await editEngram(s, e.id, { statement }, systemContext);
        await feedback(s, [{ id: e.id, signal: 'positive' }], systemContext);
      });
    }
    await sync(machineA);
    const b = await sync(machineB);
    expect(b.conflicts).toEqual([
      expect.objectContaining({
        engram_id: e.id,
        kind: 'edited-on-both',
        fields: ['statement'],
        record: expect.stringMatching(/^conflicts\//),
      }),
    ]);
    const a = await sync(machineA);
    // Both machines see the conflict: the record travelled with the sync.
    expect(a.open_conflicts).toEqual([expect.objectContaining({ engram_id: e.id, fields: ['statement'] })]);
    expect(treeFiles().filter((f) => f.startsWith('conflicts/'))).toHaveLength(1);
    for (const root of [machineA, machineB]) {
      await withStore(root, async (s) => {
        const kept = (await s.get(e.id))!;
        expect(kept.statement).toBe('Releases are cut from tags on main');
        // Both votes count.
        expect(kept.feedback_signals?.positive).toBe(2);
      });
      const [record] = readConflicts(root).conflicts;
      expect(record).toMatchObject({
        engram_id: e.id,
        other: { statement: 'Releases are cut from release branches' },
        kept: { statement: 'Releases are cut from tags on main' },
      });
      for (const text of yamlTexts(root)) expect(text).not.toMatch(MARKERS);
    }
    // Machine A takes its own statement back; the choice syncs to B and the record goes away.
    await withStore(machineA, async (s) => {
      const r = await resolveConflict(s, readConflicts(machineA).conflicts[0]!.id, 'other', systemContext);
      expect(r.engram?.statement).toBe('Releases are cut from release branches');
    });
    await sync(machineA);
    const last = await sync(machineB);
    expect(last.open_conflicts).toEqual([]);
    for (const root of [machineA, machineB]) {
      await withStore(root, async (s) =>
        expect(await s.get(e.id)).toMatchObject({ statement: 'Releases are cut from release branches', feedback_signals: { positive: 2 } }),
      );
      expect(readConflicts(root).conflicts).toEqual([]);
    }
  });

  it('keeps the episodes (and events) appended on both machines: the logs merge as a union of lines', async () => {
    await sync(machineA, url);
    await sync(machineB, url);
    const day = { now: () => new Date('2026-03-04T10:00:00Z') };
    const epA = await withStore(machineA, (s) => capture(s, { summary: 'Machine A fixed the flaky login test' }, day));
    const epB = await withStore(machineB, (s) => capture(s, { summary: 'Machine B upgraded the build image' }, day));
    await learnAt(machineA, 'A: prefer fake timers in tests');
    await learnAt(machineB, 'B: pin the base image digest');
    await sync(machineA);
    const b = await sync(machineB);
    expect(b.merged_logs).toEqual(expect.arrayContaining(['episodes/2026-03-04.jsonl']));
    expect(b.merged_logs.some((p) => p.startsWith('events/'))).toBe(true);
    await sync(machineA);
    for (const root of [machineA, machineB]) {
      const ids = await withStore(root, async (s) => (await timeline(s, { limit: 10 })).map((e) => e.id));
      expect(ids).toEqual(expect.arrayContaining([epA.id, epB.id]));
      const lines = readFileSync(join(root, 'episodes', '2026-03-04.jsonl'), 'utf8')
        .trim()
        .split('\n');
      expect(lines).toHaveLength(2);
    }
    expect(gitBare('show', 'main:episodes/2026-03-04.jsonl').trim().split('\n')).toHaveLength(2);
    expect(await sync(machineB)).toMatchObject({ merge: 'up-to-date', committed: null, pushed: false });
  });

  it('sync status: remote, ahead, uncommitted changes; a bare sync without a remote says how to set one', async () => {
    await expect(syncStores(machineA)).rejects.toThrow(/no remote is set .* run svc sync <address>/);
    await expect(setRemote(machineA, 'ftp://example.com/x')).rejects.toThrow(
      /is not a git remote: use an https:\/\/ address, an SSH address/,
    );
    await sync(machineA, url);
    await learnAt(machineA, 'Uncommitted: logs rotate daily');
    await learnAt(machineA, 'Uncommitted and local', { scope: 'local' });
    const st = await syncStatus(machineA);
    expect(st).toMatchObject({ remote: url, branch: 'main', ahead: 0, behind: 0, local_only: 1, conflicts: 0, outbox: 0 });
    expect(st.uncommitted.engrams).toBe(1);
    expect(st.uncommitted.other).toBeGreaterThan(0); // the events log
    // Machine B pushes; A's status knows once it fetched (a sync).
    await sync(machineB, url);
    await learnAt(machineB, 'B: something new');
    await sync(machineB);
    await sync(machineA);
    expect(await syncStatus(machineA)).toMatchObject({ ahead: 0, behind: 0, uncommitted: { engrams: 0 } });
  });

  it('never commits machine-local or derived files, even without a .gitignore, and never takes them from the remote', async () => {
    await learnAt(machineA, 'Something to commit');
    rmSync(join(machineA, '.gitignore'));
    await sync(machineA, url);
    expect(treeFiles().filter((f) => /^(local\.yaml|index\.db|quarantine|models)/.test(f))).toEqual([]);
    // A remote that carries a local.yaml (a hand-made push) does not replace this machine's id prefix.
    const prefixB = await withStore(machineB, async (s) => s.idPrefix());
    const clone = mkdtempSync(join(tmpdir(), 'svc-hand-'));
    execFileSync('git', ['clone', '--quiet', bare, clone]);
    writeFileSync(join(clone, 'local.yaml'), 'id_prefix: ZZZZ\n');
    execFileSync('git', ['-C', clone, 'add', '-f', 'local.yaml']);
    execFileSync('git', ['-C', clone, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'oops']);
    execFileSync('git', ['-C', clone, 'push', '--quiet', 'origin', 'main']);
    await sync(machineB, url);
    await withStore(machineB, async (s) => expect(s.idPrefix()).toBe(prefixB));
    expect(treeFiles()).not.toContain('local.yaml'); // B's merge dropped it from the tree
  });

  it('a changed remote address replaces origin; an unreachable remote fails with a clear error', async () => {
    await sync(machineA, url);
    const other = server.createRepo(`other${n}`);
    const r = await sync(machineA, other.url);
    expect(r).toMatchObject({ remote_set: 'changed', pushed: true });
    await expect(syncStores(machineA, { remote: 'http://127.0.0.1:9/none.git' })).rejects.toThrow(
      /cannot fetch from http:\/\/127\.0\.0\.1:9\/none\.git/,
    );
  });

  it('syncs with a remote whose HEAD names another branch, empty or not', async () => {
    const dir = join(server.projectRoot, `master${n}.git`);
    execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=master', dir]);
    execFileSync('git', ['-C', dir, 'config', 'http.receivepack', 'true']);
    const remote = `${server.baseUrl}/master${n}.git`;
    const e = await learnAt(machineA, 'Pin the toolchain version');
    expect(await sync(machineA, remote)).toMatchObject({ merge: 'remote-empty', pushed: true });
    await sync(machineB, remote);
    await withStore(machineB, async (s) => expect((await s.get(e.id))?.statement).toBe('Pin the toolchain version'));
    expect(execFileSync('git', ['-C', dir, 'symbolic-ref', 'HEAD'], { encoding: 'utf8' }).trim()).toBe('refs/heads/master');
  });

  it('syncs through the system git with a local path or a file:// remote, and says clearly what SSH needs', async () => {
    const e = await learnAt(machineA, 'Keep migrations reversible');
    await sync(machineA, bare);
    expect((await sync(machineB, `file://${bare}`)).pulled.engrams).toBe(1);
    await withStore(machineB, async (s) => expect((await s.get(e.id))?.statement).toBe('Keep migrations reversible'));
    await learnAt(machineB, 'Tag releases');
    expect((await sync(machineB)).pushed).toBe(true);
    expect(treeFiles().filter((f) => f.startsWith('engrams/'))).toHaveLength(2);
    // An SSH address goes to the system git, which fails here with its own words, not a hang.
    await expect(syncStores(machineA, { remote: 'git@127.0.0.1:nobody/none.git' })).rejects.toThrow(
      /cannot fetch from git@127\.0\.0\.1:nobody\/none\.git: /,
    );
    // Without git installed, SSH and path remotes say so.
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(syncStores(machineA, { remote: bare })).rejects.toThrow(
        /need the git command, which is not installed here: install git, or use an https:\/\/ remote/,
      );
    } finally {
      process.env.PATH = path;
    }
  });
});
