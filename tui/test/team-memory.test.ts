import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { CLI, projectDir, svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';
import { migratedDataFolder, startHubProcess, type HubProcess } from '../../hub/test/support/hub-process.js';
import { freePort } from '../../engine/test/support/free-port.js';

// Team memory with a real `svc hub` (PGlite, loopback): two developers, each with a local store,
// one organization and one group. What alice learns for the group, bob recalls and is injected;
// a write while the hub is down waits in alice's outbox and arrives once; a retry after a lost
// answer writes nothing twice; local and secret-bearing engrams never reach the hub; a scope bob
// may not write is a clear error; a slow hub leaves recall local within its budget.

describe('team memory through a hub', () => {
  const data = migratedDataFolder('team-hub');
  let port: number;
  let hub: HubProcess;
  let url: string;
  let aliceKey: string;
  let bobKey: string;
  const alice = { store: tempStore('alice'), dir: '' };
  const bob = { store: tempStore('bob'), dir: '' };
  const start = () =>
    startHubProcess({ SVC_HUB_RATE_LIMIT: '100000', SVC_HUB_WRITE_RATE_LIMIT: '100000' }, ['--data', data, '--port', String(port)]);
  const api = async (key: string | null, method: string, path: string, body?: unknown) => {
    const r = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, body: (await r.json().catch(() => null)) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const onHub = async (statement: string) =>
    (await api(aliceKey, 'GET', '/engrams?limit=200')).body.items.filter((e: { statement: string }) => e.statement === statement);
  const as = (who: typeof alice) => ({ store: who.store, cwd: who.dir });

  beforeAll(async () => {
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const made = await svcJson(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json']);
    aliceKey = made.data.api_key;
    hub = await start();
    const bobUser = await api(aliceKey, 'POST', '/admin/users', { name: 'bob', role: 'editor' });
    const invitation = await api(aliceKey, 'POST', '/admin/invitations', { user_id: bobUser.body.id });
    bobKey = (await api(null, 'POST', '/invitations/redeem', { token: invitation.body.token })).body.key;
    await api(aliceKey, 'POST', '/admin/groups', { path: 'backend' });
    await api(aliceKey, 'POST', '/admin/groups', { path: 'frontend' });
    for (const id of [made.data.admin.id, bobUser.body.id]) await api(aliceKey, 'POST', '/admin/groups/backend/members', { user_id: id });
    // The token beside .svc.yaml, in .svc.local.yaml, as svc init-remote writes it.
    alice.dir = projectDir(`remote_url: ${url}\n`);
    writeFileSync(join(alice.dir, '.svc.local.yaml'), `remote_token: ${aliceKey}\n`);
    bob.dir = projectDir(`remote_url: ${url}\n`);
    writeFileSync(join(bob.dir, '.svc.local.yaml'), `remote_token: ${bobKey}\n`);
  }, 90_000);
  afterAll(async () => hub?.stop());

  it("finds alice's team learning in bob's recall and injection, marked as the hub's", async () => {
    const learned = await svcJson(['learn', 'Backend services log in JSON lines', '--scope', 'group:backend'], as(alice));
    expect(learned.run.code, learned.run.stderr).toBe(0);
    expect(learned.data).toMatchObject({ scope: 'group:backend', hub: url });
    expect(await onHub('Backend services log in JSON lines')).toHaveLength(1);

    await svc(['learn', 'Bob keeps his own notes in markdown'], as(bob));
    const found = await svcJson(['recall', 'backend log json lines'], as(bob));
    expect(found.run.code, found.run.stderr).toBe(0);
    expect(found.data.sources).toMatchObject({ local: 'ok', hub: { url, state: 'ok' } });
    expect(found.data.results[0]).toMatchObject({ statement: 'Backend services log in JSON lines', source: 'hub', scope: 'group:backend' });
    const text = await svc(['recall', 'backend log json lines', '--no-json'], as(bob));
    expect(text.stdout).toMatch(/Backend services log in JSON lines.*\[hub\]/);

    const listed = await svcJson(['list'], as(bob));
    expect(listed.data.sources).toEqual({ local: 'ok', hub: 'ok' });
    expect(listed.data.engrams).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ statement: 'Backend services log in JSON lines', source: 'hub' }),
        expect.objectContaining({ statement: 'Bob keeps his own notes in markdown', source: 'local' }),
      ]),
    );

    const injected = await svcJson(['inject', 'add logging to the backend service'], as(bob));
    expect(injected.data.text).toContain('Backend services log in JSON lines');
  });

  it("shows a statement bob keeps too, differing only in case and a final stop, once, as both his and the hub's", async () => {
    const mine = await svcJson(['learn', 'backend services log in JSON lines.', '--scope', 'local'], as(bob));
    expect(mine.run.code, mine.run.stderr).toBe(0);
    const found = await svcJson(['recall', 'backend log json lines'], as(bob));
    const same = found.data.results.filter((r: { statement: string }) => /^backend services log in json lines\.?$/i.test(r.statement));
    expect(same).toEqual([expect.objectContaining({ source: 'both' })]);
  });

  it('keeps local and secret-bearing engrams on the machine', async () => {
    await svc(['learn', 'Alice local scratch note', '--scope', 'local'], as(alice));
    const secret = await svcJson(
      ['learn', 'Deploy with token ghp_abcdefghijklmnopqrstuvwxyz0123456789', '--scope', 'group:backend'],
      as(alice),
    );
    expect(secret.run.code).toBe(0);
    expect(secret.data.scope).toBe('local');
    expect(secret.run.stderr).toMatch(/secret/i);
    const all = JSON.stringify((await api(aliceKey, 'GET', '/engrams?limit=200')).body);
    expect(all).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz0123456789');
    expect(all).not.toContain('Alice local scratch note');
  });

  it('refuses a scope bob may not write, clearly, and leaves nothing to retry', async () => {
    const r = await svc(['learn', 'Frontend uses tabs', '--scope', 'group:frontend'], as(bob));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not learned: the hub at .* answered 403: .*group:frontend/);
    expect(existsOutbox(bob.store)).toEqual([]);
  });

  it('queues a write while the hub is down, delivers it once at the next session start, and a retry after a lost answer writes nothing twice', async () => {
    await hub.stop();
    const t0 = Date.now();
    const queued = await svcJson(['learn', 'Queued while the hub was down', '--scope', 'group:backend'], as(alice));
    expect(Date.now() - t0).toBeLessThan(7_000);
    expect(queued.run.code).toBe(0);
    expect(queued.data).toMatchObject({ queued: true, scope: 'group:backend' });
    expect(queued.run.stderr).toMatch(/unreachable.*queued in the outbox/);
    expect(existsOutbox(alice.store)).toHaveLength(1);
    const [file] = existsOutbox(alice.store);
    // What a kill -9 after the hub stored it but before the entry was removed would leave behind.
    const copy = join(tmpdir(), `outbox-copy-${Date.now()}.json`);
    copyFileSync(join(alice.store, 'remote', 'outbox', file!), copy);

    hub = await start();
    const session = await svcJson(['session', 'start', 'check the queue'], as(alice));
    expect(session.run.code, session.run.stderr).toBe(0);
    expect(session.data.outbox).toMatchObject({ delivered: 1, pending: 0 });
    expect(existsOutbox(alice.store)).toEqual([]);
    expect(await onHub('Queued while the hub was down')).toHaveLength(1);

    copyFileSync(copy, join(alice.store, 'remote', 'outbox', file!));
    await svc(['session', 'start', 'again'], as(alice));
    expect(existsOutbox(alice.store)).toEqual([]);
    expect(await onHub('Queued while the hub was down')).toHaveLength(1);
  }, 60_000);

  it('loses and duplicates nothing when svc is killed with SIGKILL after the hub stored its write but before it heard back', async () => {
    // A proxy that lets the write reach the hub, then holds the answer while the test kills svc.
    let hold = true;
    let stored = false;
    const proxy: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
        ) as Record<string, string>;
        const upstream = await fetch(`${url}${req.url}`, {
          method: req.method,
          headers,
          body: chunks.length ? Buffer.concat(chunks) : undefined,
        });
        const text = await upstream.text();
        if (req.method === 'POST') stored = true;
        if (hold && req.method === 'POST') return; // never answered: svc waits until it is killed
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
        res.end(text);
      });
    });
    await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
    const dir = projectDir(`remote_url: http://127.0.0.1:${(proxy.address() as AddressInfo).port}\nremote_token: ${aliceKey}\n`);
    try {
      const child = spawn(process.execPath, [CLI, 'learn', 'Killed mid-delivery, stored once', '--scope', 'group:backend'], {
        cwd: dir,
        env: { ...process.env, SVC_PATH: alice.store },
        stdio: 'ignore',
      });
      const deadline = Date.now() + 10_000;
      while (!stored && Date.now() < deadline) await new Promise((d) => setTimeout(d, 20));
      expect(stored).toBe(true);
      child.kill('SIGKILL');
      await new Promise((d) => child.once('exit', d));
      expect(existsOutbox(alice.store)).toHaveLength(1);
      expect(await onHub('Killed mid-delivery, stored once')).toHaveLength(1);
      hold = false;
      // The agent host's SessionStart hook sends what waits, as svc session start does.
      const event = JSON.stringify({ session_id: 'crash', cwd: dir, hook_event_name: 'SessionStart', source: 'startup' });
      const hooked = await svc(['hook-inject'], { store: alice.store, cwd: dir, input: event });
      expect(hooked.code).toBe(0);
      expect(existsOutbox(alice.store)).toEqual([]);
      expect(await onHub('Killed mid-delivery, stored once')).toHaveLength(1);
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it('discovers the hub scopes with their counts, registers shared ones, and lists them as stores', async () => {
    const found = await svcJson(['stores', 'discover'], as(bob));
    expect(found.run.code, found.run.stderr).toBe(0);
    expect(found.data.scopes).toEqual(
      expect.arrayContaining([expect.objectContaining({ scope: 'group:backend', writable: true, queried: true })]),
    );
    expect(found.data.scopes.find((s: { scope: string }) => s.scope === 'group:backend').engrams).toBeGreaterThanOrEqual(1);
    // With a whitelist, register adds the shared scopes it lacks to .svc.yaml.
    const dir = projectDir(`# bob's project\nremote_url: ${url}\nremote_token: ${bobKey}\nremote_scopes: [org:acme]\n`);
    const reg = await svcJson(['stores', 'discover', '--register'], { store: bob.store, cwd: dir });
    expect(reg.data.registered).toContain('group:backend');
    expect(readFileSync(join(dir, '.svc.yaml'), 'utf8')).toMatch(/# bob's project[\s\S]*remote_scopes:[\s\S]*group:backend/);
    const stores = await svcJson(['stores', 'list'], as(bob));
    expect(stores.data.stores).toEqual(
      expect.arrayContaining([expect.objectContaining({ scope: 'group:backend', role: 'remote', path: url })]),
    );
  });

  it('publishes a local engram to a team scope with svc rescope, and routes a learn without scope to where its kind lives', async () => {
    const local = await svcJson(['learn', 'Release branches are cut on Thursdays', '--scope', 'project:release'], as(alice));
    const moved = await svcJson(['rescope', local.data.id, '--scope', 'group:backend', '--reason', 'the team needs it'], as(alice));
    expect(moved.run.code, moved.run.stderr).toBe(0);
    expect(moved.data.items[0]).toMatchObject({ id: local.data.id, outcome: 'published', from: 'project:release', to: 'group:backend' });
    expect(await onHub('Release branches are cut on Thursdays')).toHaveLength(1);
    expect((await svcJson(['list', '--scope', 'project:release'], as(alice))).data.count).toBe(0); // the local copy is retired

    for (const s of ['Migrations run before deploys', 'Migrations are reviewed by two people', 'Migrations never drop columns'])
      await svc(['learn', s, '--scope', 'project:db'], as(alice));
    const routed = await svcJson(['learn', 'Migrations keep a rollback script'], as(alice));
    expect(routed.data).toMatchObject({ scope: 'project:db', routed: { scope: 'project:db' } });
    const unrouted = await svcJson(['learn', 'Coffee is in the second kitchen'], as(alice));
    expect(unrouted.data.scope).toBe('global');
  });

  it('checks the hub in svc doctor, naming the fix for a bad token', async () => {
    const good = await svcJson(['doctor', '--no-handshake'], as(alice));
    expect(good.data.find((c: { check: string }) => c.check === 'remote')).toMatchObject({
      status: 'ok',
      message: expect.stringContaining('authenticated as alice'),
    });
    const dir = projectDir(`remote_url: ${url}\nremote_token: svc_sk_not_a_key\n`);
    const bad = await svcJson(['doctor', '--no-handshake'], { store: alice.store, cwd: dir });
    expect(bad.data.find((c: { check: string }) => c.check === 'remote')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('svc init-remote'),
    });
  });

  it("lists every hub engram up to --limit (following the hub's pages), and says when it shows fewer than the hub holds", async () => {
    for (let i = 0; i < 250; i++) {
      const r = await api(aliceKey, 'POST', '/engrams', { statement: `Paged team rule number ${i} for the list`, scope: 'group:backend' });
      expect(r.status).toBe(201);
    }
    const all = await svcJson(['list', '--limit', '1000'], as(bob));
    expect(all.run.code, all.run.stderr).toBe(0);
    expect(all.data.engrams.filter((e: { statement: string }) => e.statement.startsWith('Paged team rule number'))).toHaveLength(250);
    expect(all.data.complete).toBe(true);
    expect(all.run.stderr).toBe('');
    const some = await svcJson(['list', '--limit', '100'], as(bob));
    expect(some.data.count).toBe(100);
    expect(some.data.complete).toBe(false);
    expect(some.run.stderr).toMatch(/the hub holds more engrams than --limit 100 shows/);
  }, 120_000);

  it('sends the outbox with svc sync in a project whose hub is its only remote (exit 0, no warning); five drainers at once count each write once', async () => {
    await hub.stop();
    for (let i = 0; i < 10; i++)
      expect((await svcJson(['learn', `Drained team rule ${i}`, '--scope', 'group:backend'], as(alice))).data.queued).toBe(true);
    // A temp file a killed writer left behind (its pid runs no more) is swept.
    const dir = join(alice.store, 'remote', 'outbox');
    writeFileSync(join(dir, '.tmp-20260101T000000000Z-x.json-999999-0123abcd'), '{');
    hub = await start();
    const runs = await Promise.all(Array.from({ length: 5 }, () => svcJson(['sync'], as(alice))));
    let sent = 0;
    for (const r of runs) {
      expect(r.run.code, r.run.stderr).toBe(0);
      expect(r.run.stderr).not.toMatch(/warning/);
      sent += r.data.outbox?.delivered ?? 0;
    }
    expect(sent).toBe(10);
    for (let i = 0; i < 10; i++) expect(await onHub(`Drained team rule ${i}`)).toHaveLength(1);
    expect(readdirSync(dir)).toEqual([]);
    const text = await svc(['sync', '--no-json'], as(alice));
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Nothing waited in the outbox for the hub\.\nNo git remote is set/);
  }, 120_000);

  it("takes an outbox entry older than the hub's idempotency window as delivered when the hub has its write, instead of learning it again", async () => {
    const statement = 'Written on the hub before a day offline';
    expect((await api(aliceKey, 'POST', '/engrams', { statement, scope: 'group:backend' })).status).toBe(201);
    // The entry a crash between the hub's commit and the file's removal left, two days ago.
    const dir = join(alice.store, 'remote', 'outbox');
    mkdirSync(dir, { recursive: true });
    const queuedAt = new Date(Date.now() - 2 * 86_400_000 - 60_000).toISOString();
    const key = `${queuedAt.replace(/[-:.]/g, '')}-00000000-0000-4000-8000-000000000000`;
    writeFileSync(
      join(dir, `${key}.json`),
      JSON.stringify({
        key,
        url,
        method: 'POST',
        path: '/engrams',
        body: { statement, scope: 'group:backend' },
        queued_at: queuedAt,
        attempts: 1,
      }),
    );
    // The hub wrote it after the entry was queued (its source is newer): delivered, not learned twice.
    const r = await svcJson(['sync'], as(alice));
    expect(r.run.code, r.run.stderr).toBe(0);
    expect(r.data.outbox).toMatchObject({ delivered: 1, pending: 0 });
    const [engram] = await onHub(statement);
    expect(engram.reference_count).toBe(1);
    expect(existsOutbox(alice.store)).toEqual([]);
  });

  it("keeps the hub's answer to a prompt for the session, whole, and asks again when the kept file is empty or torn", async () => {
    const learned = await svc(['learn', 'Queue consumers ack after the write commits', '--scope', 'group:backend'], as(alice));
    expect(learned.code, learned.stderr).toBe(0);
    await svc(['learn', 'Bob reads the queue runbook first', '--scope', 'local'], as(bob)); // bob's store exists
    const prompt = (text: string) =>
      JSON.stringify({ session_id: 'cache', transcript_path: '', cwd: bob.dir, hook_event_name: 'UserPromptSubmit', prompt: text });
    const hook = (text: string) => svc(['hook-inject'], { ...as(bob), input: prompt(text) });
    const kept = () => {
      const dir = join(bob.store, 'remote', 'recall');
      return existsSync(dir) ? readdirSync(dir).map((name) => join(dir, name)) : [];
    };
    const before = new Set(kept());
    const first = await hook('when do queue consumers ack the write?');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout, first.stderr).toContain('Queue consumers ack after the write commits');
    const files = kept().filter((f) => !before.has(f));
    expect(files).toHaveLength(1); // the answer, and no temp file beside it
    expect(JSON.parse(readFileSync(files[0]!, 'utf8')).hits[0].statement).toBe('Queue consumers ack after the write commits');
    // What a power cut can leave of a file written without fsync: nothing, or a part.
    for (const damage of ['', '{"at": 1']) {
      writeFileSync(files[0]!, damage);
      const again = await hook('when do queue consumers ack the write?');
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('Queue consumers ack after the write commits');
      expect(JSON.parse(readFileSync(files[0]!, 'utf8')).hits[0].statement).toBe('Queue consumers ack after the write commits');
    }
    expect(kept().filter((f) => !before.has(f))).toEqual(files);
  });

  it('answers recall locally within its budget when the hub is slow, with one warning line', async () => {
    const slow: Server = createServer((req) => void req); // never answers
    await new Promise<void>((done) => slow.listen(0, '127.0.0.1', done));
    const dir = projectDir(`remote_url: http://127.0.0.1:${(slow.address() as AddressInfo).port}\nremote_token: svc_sk_whatever\n`);
    try {
      await svc(['learn', 'Slow hubs never block recall'], { store: bob.store, cwd: dir });
      const t0 = Date.now();
      const r = await svcJson(['recall', 'slow hubs block recall'], { store: bob.store, cwd: dir });
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(r.run.code).toBe(0);
      expect(r.data.results[0].statement).toBe('Slow hubs never block recall');
      expect(r.data.sources.hub).toMatchObject({ state: 'unreachable' });
      expect(
        r.run.stderr
          .trim()
          .split('\n')
          .filter((l) => /hub/.test(l)),
      ).toHaveLength(1);
      expect(r.run.stderr).toMatch(/unreachable \(no answer within 1\.5 s\): local results only/);
    } finally {
      slow.closeAllConnections();
      slow.close();
    }
  });
});

function existsOutbox(store: string): string[] {
  try {
    return readdirSync(join(store, 'remote', 'outbox')).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
}
