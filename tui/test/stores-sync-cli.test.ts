import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { okIn as ok, runIn as run, svcJson, neutralCwd, tempStore } from '../../engine/test/support/run-svc.js';
import { startGitHttpServer, type GitHttpServer } from '../../engine/test/support/git-http-server.js';

// `svc stores` and `svc sync` through real processes (the compiled CLI), with a real git
// server (git http-backend behind node:http on 127.0.0.1) between two "machines".

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function fails(store: string, args: string[], code = 1): Promise<string> {
  const r = await run(store, args);
  expect(r.code, `svc ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(code);
  const lines = r.stderr.split('\n').filter(Boolean);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return lines[lines.length - 1] ?? '';
}

const engramFiles = (root: string): string[] =>
  existsSync(join(root, 'engrams')) ? readdirSync(join(root, 'engrams')).filter((f) => f.endsWith('.yaml')) : [];

describe.concurrent('svc stores', () => {
  it('adds stores, routes learn by scope, spans recall, list, inject and status, and never writes a read-only store', async () => {
    const primary = tempStore('primary');
    const web = join(tempStore('web'), '..', 'web-store');
    const team = tempStore('team');
    await ok(team, ['learn', 'Team rule: every deploy needs a changelog entry', '--scope', 'group:platform']);
    await ok(primary, ['learn', 'Deploys on Friday need a second reviewer']);

    const added = await ok(primary, ['stores', 'add', web, 'project:web']);
    expect(added).toMatchObject({ action: 'added', store: { scope: 'project:web', shared: false, readonly: false, engrams: 0 } });
    const addedTeam = await ok(primary, ['stores', 'add', team, 'group:platform', '--shared', '--readonly']);
    expect(addedTeam).toMatchObject({ action: 'added', store: { scope: 'group:platform', shared: true, readonly: true, engrams: 1 } });

    // The same path again (with any scope) changes nothing, and says so.
    const again = await run(primary, ['stores', 'add', web, 'project:other', '--no-json']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /Nothing changed: .* is already registered for scope project:web; a store is keyed by its path, so scope project:other was not added/,
    );
    expect(await ok(primary, ['stores', 'add', web, 'project:web'])).toMatchObject({ action: 'unchanged' });

    // learn with the added store's scope lands there; without it, in the primary store.
    const inWeb = await ok(primary, ['learn', 'Every deploy of the web app runs the smoke tests', '--scope', 'project:web']);
    expect(engramFiles(web)).toEqual([`${inWeb.id}.yaml`]);
    expect(engramFiles(primary)).toHaveLength(1);
    const webPrefix = /^id_prefix:\s*(\S+)/m.exec(readFileSync(join(web, 'local.yaml'), 'utf8'))![1];
    expect(inWeb.id).toContain(`-${webPrefix}-`);

    // A read-only store is never written.
    const teamBefore = readdirSync(join(team, 'engrams')).map((f) => readFileSync(join(team, 'engrams', f), 'utf8'));
    const refused = await fails(primary, ['learn', 'Team rule: squash merges only', '--scope', 'group:platform']);
    expect(refused).toMatch(/scope group:platform belongs to the read-only store at .*: svc never writes there/);
    expect(readdirSync(join(team, 'engrams')).map((f) => readFileSync(join(team, 'engrams', f), 'utf8'))).toEqual(teamBefore);

    // Reads span every store.
    const recalled = await ok(primary, ['recall', 'deploy', '--fast']);
    expect(recalled.results.map((r: Json) => r.statement)).toEqual(
      expect.arrayContaining([
        'Every deploy of the web app runs the smoke tests',
        'Team rule: every deploy needs a changelog entry',
        'Deploys on Friday need a second reviewer',
      ]),
    );
    expect((await ok(primary, ['list'])).count).toBe(3);
    expect((await ok(primary, ['list', '--scope', 'project:web'])).engrams.map((e: Json) => e.id)).toEqual([inWeb.id]);
    const injected = await ok(primary, ['inject', 'deploy the web app', '--fast']);
    expect(injected.text).toMatch(/smoke tests/);
    expect(injected.text).toMatch(/changelog entry/);
    expect((await ok(primary, ['status'])).engrams).toBe(3);

    // stores list: scope, path, engram count.
    const listed = await ok(primary, ['stores', 'list']);
    expect(listed.stores.map((s: Json) => [s.scope, s.engrams, s.readonly])).toEqual([
      ['*', 1, false],
      ['project:web', 1, false],
      ['group:platform', 1, true],
    ]);
    expect(listed.stores[1].path).toBe(realpathSync(web));
    const text = await run(primary, ['stores', '--no-json']);
    expect(text.stdout).toMatch(/^SCOPE\s+ENGRAMS\s+PATH$/m);
    expect(text.stdout).toMatch(/^group:platform\s+1\s+\S+.*\(shared, read-only\)$/m);

    // The registry is machine-local (local.yaml, gitignored).
    expect(parse(readFileSync(join(primary, 'local.yaml'), 'utf8')).stores).toHaveLength(2);
  });

  it('stores discover needs a hub; bad usage fails with one clean line', async () => {
    const store = tempStore('discover');
    expect(await fails(store, ['stores', 'discover'])).toMatch(/stores discover needs a hub \(svc init-remote/);
    expect(await fails(store, ['stores', 'add', '/tmp/x'])).toMatch(/usage: svc stores add <path> <scope>/);
    expect(await fails(store, ['stores', 'add', join(store, '..', 'x'), 'bad scope'])).toMatch(/whitespace/);
    expect(await fails(store, ['stores', 'frobnicate'])).toMatch(/unknown subcommand .?.?stores frobnicate/);
    expect(await fails(store, ['stores', 'remove', '/nowhere'])).toMatch(/no store is registered at \/nowhere/);
    expect((await ok(store, ['stores', 'list'])).stores).toHaveLength(1);
  });
});

describe('svc sync between two machines', () => {
  let server: GitHttpServer;
  beforeAll(async () => {
    server = await startGitHttpServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('sets the remote and pushes; the other machine pulls and recalls; local engrams stay home; conflicts are reported; episodes merge', async () => {
    const { url, dir: bare } = server.createRepo('cli');
    const git = (...args: string[]): string => execFileSync('git', ['-C', bare, ...args], { encoding: 'utf8' });
    const a = tempStore('machine-a');
    const b = tempStore('machine-b');

    expect(await fails(a, ['sync'])).toMatch(/no remote is set for the store at .*: run svc sync <address> once/);

    const shared = await ok(a, ['learn', 'Billing deploys need the on-call engineer present']);
    const local = await ok(a, ['learn', 'My VPN profile lives in ~/vpn/work.ovpn', '--scope', 'local']);
    await ok(a, ['capture', 'Machine A rotated the staging keys']);
    const first = await ok(a, ['sync', url]);
    expect(first).toMatchObject({ remote_set: 'added', pushed: true, local_only: 1, conflicts: [] });

    const tree = git('ls-tree', '-r', '--name-only', 'main');
    expect(tree).toContain(`engrams/${shared.id}.yaml`);
    expect(tree).not.toContain(local.id);
    expect(git('log', '--stat', 'main')).not.toContain(local.id);
    expect(git('log', '-p', '--all')).not.toContain('work.ovpn');

    const pulled = await ok(b, ['sync', url]);
    expect(pulled).toMatchObject({ remote_set: 'added', pushed: true, pulled: { engrams: 1 } });
    const found = await ok(b, ['recall', 'billing deploys on-call', '--fast']);
    expect(found.results[0].id).toBe(shared.id);
    expect((await run(b, ['recall', 'VPN profile', '--fast'])).code).toBe(2); // never left machine A
    expect((await ok(a, ['recall', 'VPN profile', '--fast'])).results[0].id).toBe(local.id);

    // Both machines edit the same engram (by hand), and both capture an episode.
    const edit = (root: string, rationale: string): void => {
      const file = join(root, 'engrams', `${shared.id}.yaml`);
      const doc = parse(readFileSync(file, 'utf8'));
      doc.rationale = rationale;
      writeFileSync(file, stringify(doc, { lineWidth: 0 }));
    };
    edit(a, 'Edited on A');
    edit(b, 'Edited on B');
    await ok(b, ['capture', 'Machine B upgraded the build image']);
    const fromB = await ok(b, ['learn', 'Machine B: the build image is pinned by digest']);
    await ok(a, ['sync']);
    const conflicted = await svcJson(['sync'], { store: b, cwd: neutralCwd() });
    expect(conflicted.run.code, conflicted.run.stderr).toBe(0);
    expect(conflicted.data.conflicts).toHaveLength(1);
    expect(conflicted.data.conflicts[0]).toMatchObject({ engram_id: shared.id, kind: 'edited-on-both', fields: ['rationale'] });
    expect(conflicted.run.stderr).toMatch(
      new RegExp(
        `sync conflict: engram ${shared.id}: kept this machine's rationale .*the other machine's is in conflicts/.*svc conflicts resolve ${shared.id}`,
      ),
    );
    expect(parse(readFileSync(join(b, 'engrams', `${shared.id}.yaml`), 'utf8')).rationale).toBe('Edited on B');
    const status = await ok(b, ['status']);
    expect(status.sync_conflicts).toEqual([expect.objectContaining({ engram_id: shared.id, fields: ['rationale'] })]);
    expect(status.quarantined).toEqual([]);
    // The record syncs: machine A sees the conflict too, and resolves it its way.
    const synced = await ok(a, ['sync']);
    expect(synced.open_conflicts).toEqual([expect.objectContaining({ engram_id: shared.id })]);
    const listed = await ok(a, ['conflicts']);
    expect(listed.conflicts).toEqual([
      expect.objectContaining({ engram_id: shared.id, kept: { rationale: 'Edited on B' }, other: { rationale: 'Edited on A' } }),
    ]);
    expect((await run(a, ['conflicts', '--no-json'])).stdout).toMatch(/rationale: now Edited on B \| other Edited on A/);
    expect(await fails(a, ['conflicts', 'resolve', shared.id])).toMatch(/--keep must be current .* or other/);
    const resolved = await ok(a, ['conflicts', 'resolve', shared.id, '--keep', 'other']);
    expect(resolved).toMatchObject({ kept: 'other', engram: { rationale: 'Edited on A' } });
    expect((await ok(a, ['conflicts'])).count).toBe(0);
    await ok(a, ['sync']);
    await ok(b, ['sync']);
    expect((await ok(b, ['conflicts'])).count).toBe(0);
    expect(parse(readFileSync(join(b, 'engrams', `${shared.id}.yaml`), 'utf8')).rationale).toBe('Edited on A');
    for (const root of [a, b]) {
      for (const f of engramFiles(root)) expect(readFileSync(join(root, 'engrams', f), 'utf8')).not.toMatch(/^(<{7}|={7}|>{7})/m);
    }

    // Non-conflicting changes merged; episodes of both machines kept on both.
    expect((await ok(a, ['recall', 'build image pinned digest', '--fast'])).results[0].id).toBe(fromB.id);
    for (const root of [a, b]) {
      const episodes = (await ok(root, ['timeline'])).episodes.map((e: Json) => e.summary);
      expect(episodes).toEqual(expect.arrayContaining(['Machine A rotated the staging keys', 'Machine B upgraded the build image']));
    }

    // Status, and --full keeps rebuilding the index.
    const st = await ok(a, ['sync', '--status']);
    expect(st).toMatchObject({ remote: url, ahead: 0, behind: 0, local_only: 1, uncommitted: { engrams: 0 } });
    const text = await run(a, ['sync', '--status', '--no-json']);
    expect(text.stdout).toMatch(/^Remote\s+http:\/\/127\.0\.0\.1:\d+\/cli\.git$/m);
    const full = await ok(a, ['sync', '--full', '--fast']);
    expect(full).toMatchObject({ rebuilt: true, engrams: 3 });
    // About 30 svc processes and git round trips in turn: 55 s on a slow, loaded machine.
  }, 180_000);

  it('syncs a registered store that has a remote of its own (read-only: pull only)', async () => {
    const { url } = server.createRepo('team');
    const publisher = tempStore('team-publisher');
    const rule = await ok(publisher, ['learn', 'Team rule: feature flags expire after 90 days', '--scope', 'group:platform']);
    await ok(publisher, ['sync', url]);

    // A team member: the team store is a clone (a store synced from the team remote), registered read-only.
    const mine = tempStore('member');
    const teamClone = tempStore('team-clone');
    await ok(teamClone, ['sync', url]);
    await ok(mine, ['stores', 'add', teamClone, 'group:platform', '--readonly']);
    expect((await ok(mine, ['recall', 'feature flags expire', '--fast'])).results[0].id).toBe(rule.id);

    const next = await ok(publisher, ['learn', 'Team rule: every service exposes /healthz', '--scope', 'group:platform']);
    await ok(publisher, ['sync']);
    const r = await svcJson(['sync'], { store: mine, cwd: neutralCwd() });
    expect(r.run.code, r.run.stderr).toBe(0);
    expect(r.run.stderr).toMatch(/has no remote .* syncing the registered stores only/);
    expect(r.data.stores[0]).toMatchObject({ scope: 'group:platform', readonly: true, report: { pushed: false, pulled: { engrams: 1 } } });
    expect((await ok(mine, ['recall', 'healthz', '--fast'])).results[0].id).toBe(next.id);
  });
});
