import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, projectDir, svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';
import { callTool } from '../../engine/test/support/mcp-call.js';
import { migratedDataFolder, startHubProcess, type HubProcess } from '../../hub/test/support/hub-process.js';
import { freePort } from '../../engine/test/support/free-port.js';

// Team memory that explains itself (issue 27, items 4 to 7), with a real `svc hub` (PGlite,
// loopback) and the compiled CLI: a write queued while the hub is down stays in its author's
// recall, list and inject (marked queued) and goes at the next call the hub answers; svc status
// shows the hub; a learn without a scope is not published unless the project opted in; the
// token lives in .svc.local.yaml so .svc.yaml can be committed; session start names the hub's
// writable scopes; stores list calls a hub that is down unreachable, not read-only.

/** A project folder naming the hub the new way: url in .svc.yaml, token in .svc.local.yaml. */
function hubProject(url: string, key: string, extra = ''): string {
  const dir = projectDir(`remote_url: ${url}\n${extra}`);
  writeFileSync(join(dir, '.svc.local.yaml'), `remote_token: ${key}\n`, { mode: 0o600 });
  return dir;
}

/** `svc mcp` on `store`, started in `cwd`: a real SDK client over stdio. */
async function mcpIn(store: string, cwd: string) {
  const base = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const client = new Client({ name: 'team-ux-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], cwd, env: { ...base, SVC_PATH: store }, stderr: 'pipe' }),
  );
  return {
    ok: async (name: string, args: Record<string, unknown>) => {
      const r = await callTool(client, name, args);
      expect(r.isError, `${name}: ${r.text}`).toBe(false);
      return r.data;
    },
    close: () => client.close(),
  };
}

function outbox(store: string): string[] {
  try {
    return readdirSync(join(store, 'remote', 'outbox')).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
}

describe('team memory that explains itself', () => {
  const data = migratedDataFolder('team-ux');
  let port: number;
  let hub: HubProcess;
  let url: string;
  let aliceKey: string;
  const alice = { store: tempStore('alice'), dir: '' };
  const start = () =>
    startHubProcess({ SVC_HUB_RATE_LIMIT: '100000', SVC_HUB_WRITE_RATE_LIMIT: '100000' }, ['--data', data, '--port', String(port)]);
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${aliceKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: r.status, body: (await r.json().catch(() => null)) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const onHub = async (statement: string) =>
    (await api('GET', '/engrams?limit=200')).body.items.filter((e: { statement: string }) => e.statement === statement);
  const as = (who: typeof alice, cwd = who.dir) => ({ store: who.store, cwd });

  beforeAll(async () => {
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const made = await svcJson(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json']);
    aliceKey = made.data.api_key;
    hub = await start();
    await api('POST', '/admin/groups', { path: 'backend' });
    await api('POST', '/admin/groups', { path: 'frontend' });
    for (const g of ['backend', 'frontend']) await api('POST', `/admin/groups/${g}/members`, { user_id: made.data.admin.id });
    alice.dir = hubProject(url, aliceKey);
  }, 90_000);
  afterAll(async () => hub?.stop());

  it('reads the token from .svc.local.yaml beside .svc.yaml', async () => {
    const r = await svcJson(['init-remote', '--verify'], as(alice));
    expect(r.run.code, r.run.stderr).toBe(0);
    expect(r.data).toMatchObject({ ok: true, remote_url: url });
    const learned = await svcJson(['learn', 'Backend services log in JSON lines', '--scope', 'group:backend'], as(alice));
    expect(learned.run.code, learned.run.stderr).toBe(0);
    expect(learned.data).toMatchObject({ scope: 'group:backend', hub: url });
  });

  it('shows the hub in svc status: address, identity, reachable and the queued writes', async () => {
    const r = await svcJson(['status'], as(alice));
    expect(r.run.code, r.run.stderr).toBe(0);
    expect(r.data.hub).toEqual({ url, identity: 'alice', reachable: true, queued: 0, refused: 0 });
    const text = await svc(['status', '--no-json'], as(alice));
    expect(text.stdout).toMatch(new RegExp(`Hub +${url.replace(/[.]/g, '\\.')}: reachable, as alice; no queued writes`));
    // A store outside any hub project shows no hub.
    expect((await svcJson(['status'], { store: alice.store, cwd: projectDir() })).data.hub).toBeUndefined();
  });

  it("lists the hub's writable scopes at session start", async () => {
    const r = await svcJson(['session', 'start', 'look around'], as(alice));
    expect(r.run.code, r.run.stderr).toBe(0);
    expect(r.data.writable_scopes).toEqual(expect.arrayContaining(['global', 'local', 'group:backend', 'group:frontend']));
    const text = await svc(['session', 'start', 'look around', '--no-json'], as(alice));
    expect(text.stdout).toMatch(/Writable scopes: .*group:backend.*group:frontend/);
  });

  it("keeps a write queued while the hub is down in its author's recall, list and inject, marked queued; svc status counts it; stores list calls the hub unreachable", async () => {
    await hub.stop();
    const queued = await svcJson(['learn', 'Deploys freeze on Fridays after noon', '--scope', 'group:backend'], as(alice));
    expect(queued.data).toMatchObject({ queued: true });
    expect(outbox(alice.store)).toHaveLength(1);

    const found = await svcJson(['recall', 'deploys freeze fridays'], as(alice));
    expect(found.run.code, found.run.stderr).toBe(0);
    expect(found.data.results[0]).toMatchObject({
      statement: 'Deploys freeze on Fridays after noon',
      source: 'outbox',
      scope: 'group:backend',
    });
    expect((await svc(['recall', 'deploys freeze fridays', '--no-json'], as(alice))).stdout).toMatch(
      /Deploys freeze on Fridays after noon\s+\[queued\]/,
    );

    const listed = await svcJson(['list'], as(alice));
    expect(listed.data.engrams).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ statement: 'Deploys freeze on Fridays after noon', source: 'outbox', scope: 'group:backend' }),
      ]),
    );
    expect((await svc(['list', '--no-json'], as(alice))).stdout).toMatch(/Deploys freeze on Fridays after noon\s+\[queued\]/);
    expect((await svcJson(['list', '--scope', 'group:frontend'], as(alice))).data.engrams).toEqual([]);

    const injected = await svcJson(['inject', 'when do deploys freeze on fridays'], as(alice));
    expect(injected.data.text).toContain('Deploys freeze on Fridays after noon');

    // The agent host's prompt hook finds it too.
    const event = JSON.stringify({
      session_id: 'queued',
      cwd: alice.dir,
      hook_event_name: 'UserPromptSubmit',
      prompt: 'when do deploys freeze on fridays',
    });
    const hooked = await svc(['hook-inject'], { store: alice.store, cwd: alice.dir, input: event });
    expect(hooked.code).toBe(0);
    expect(hooked.stdout).toContain('Deploys freeze on Fridays after noon');

    // And the MCP tools an agent uses.
    const mcp = await mcpIn(alice.store, alice.dir);
    try {
      const recalled = await mcp.ok('svc_recall', { query: 'deploys freeze fridays' });
      expect(recalled.results[0]).toMatchObject({ statement: 'Deploys freeze on Fridays after noon', source: 'outbox' });
      const all = await mcp.ok('svc_list', {});
      expect(all.engrams).toEqual(
        expect.arrayContaining([expect.objectContaining({ statement: 'Deploys freeze on Fridays after noon', source: 'outbox' })]),
      );
      expect((await mcp.ok('svc_inject', { task: 'when do deploys freeze on fridays' })).text).toContain(
        'Deploys freeze on Fridays after noon',
      );
    } finally {
      await mcp.close();
    }

    const status = await svcJson(['status'], as(alice));
    expect(status.data.hub).toMatchObject({ url, reachable: false, identity: null, queued: 1 });
    expect((await svc(['status', '--no-json'], as(alice))).stdout).toMatch(/Hub +.*unreachable .*1 queued write\(s\) waiting/);

    const stores = await svc(['stores', 'list', '--no-json'], as(alice));
    expect(stores.code).toBe(0);
    const hubLine = stores.stdout.split('\n').find((l) => l.includes(url))!;
    expect(hubLine).toMatch(/unreachable/);
    expect(hubLine).not.toMatch(/read-only/);
  }, 60_000);

  it('sends what waits when the hub next answers a recall, and when a later learn is delivered', async () => {
    hub = await start();
    // A recall the hub answers sends the queued write, and shows it as the hub's.
    const found = await svcJson(['recall', 'deploys freeze fridays'], as(alice));
    expect(found.run.code, found.run.stderr).toBe(0);
    expect(outbox(alice.store)).toEqual([]);
    expect(await onHub('Deploys freeze on Fridays after noon')).toHaveLength(1);
    expect(found.data.results.find((h: { statement: string }) => h.statement === 'Deploys freeze on Fridays after noon')).toMatchObject({
      source: 'hub',
    });

    // Queued again while down; a later learn the hub takes sends it along.
    await hub.stop();
    expect(
      (await svcJson(['learn', 'Feature flags are removed after two releases', '--scope', 'group:backend'], as(alice))).data.queued,
    ).toBe(true);
    hub = await start();
    const next = await svcJson(['learn', 'Every service exposes /healthz', '--scope', 'group:backend'], as(alice));
    expect(next.run.code, next.run.stderr).toBe(0);
    expect(next.data.outbox).toMatchObject({ delivered: 1, pending: 0 });
    expect(next.run.stderr).not.toMatch(/warning/);
    expect(outbox(alice.store)).toEqual([]);
    expect(await onHub('Feature flags are removed after two releases')).toHaveLength(1);

    // svc list with the hub up sends what waits too, and lists it as the hub's.
    await hub.stop();
    expect((await svcJson(['learn', 'Logs are kept thirty days', '--scope', 'group:backend'], as(alice))).data.queued).toBe(true);
    hub = await start();
    const listed = await svcJson(['list', '--scope', 'group:backend'], as(alice));
    expect(listed.data.engrams.filter((e: { statement: string }) => e.statement === 'Logs are kept thirty days')).toEqual([
      expect.objectContaining({ source: 'hub' }),
    ]);
    expect(outbox(alice.store)).toEqual([]);
  }, 90_000);

  it('keeps a learn without a scope on the machine when its neighbours live on the hub, and suggests the rescope; route_to_team: true routes it', async () => {
    for (const s of [
      'Backend services expose metrics on /metrics',
      'Backend services expose readiness on /ready',
      'Backend services expose their version on /version',
    ]) {
      expect((await api('POST', '/engrams', { statement: s, scope: 'group:backend' })).status).toBe(201);
    }
    // Fresh stores: only the hub holds neighbours.
    const dev = { store: tempStore('route'), dir: alice.dir };
    const kept = await svcJson(['learn', 'Backend services expose /healthz'], as(dev));
    expect(kept.run.code, kept.run.stderr).toBe(0);
    expect(kept.data.scope).toBe('global');
    expect(kept.data.routed).toBeUndefined();
    expect(kept.data.suggested).toMatchObject({ scope: 'group:backend' });
    expect(await onHub('Backend services expose /healthz')).toEqual([]);
    const text = await svc(['learn', 'Backend services expose /livez', '--no-json'], as({ store: tempStore('route'), dir: alice.dir }));
    expect(text.stdout).toMatch(/Kept on this machine: it looks like group:backend's .*svc rescope \S+ --scope group:backend/);
    expect(await onHub('Backend services expose /livez')).toEqual([]);

    // The MCP svc_learn the same way.
    const mcp = await mcpIn(tempStore('route'), alice.dir);
    try {
      const learned = await mcp.ok('svc_learn', { statement: 'Backend services expose /metrics/extra' });
      expect(learned.scope).toBe('global');
      expect(learned.suggested).toMatchObject({ scope: 'group:backend' });
      expect(learned.warnings.join('\n')).toMatch(/Kept on this machine: it looks like group:backend's/);
    } finally {
      await mcp.close();
    }
    expect(await onHub('Backend services expose /metrics/extra')).toEqual([]);

    // The same in a project that keeps its scope in .svc.yaml: the project's scope wins, no routing.
    const scoped = hubProject(url, aliceKey, 'scope: project:api\n');
    expect((await svcJson(['learn', 'Backend services expose /startupz'], as(dev, scoped))).data.scope).toBe('project:api');

    const optedIn = hubProject(url, aliceKey, 'route_to_team: true\n');
    const routed = await svcJson(['learn', 'Backend services expose /debug/pprof'], { store: tempStore('route'), cwd: optedIn });
    expect(routed.run.code, routed.run.stderr).toBe(0);
    expect(routed.data).toMatchObject({ scope: 'group:backend', hub: url, routed: { scope: 'group:backend' } });
    expect(await onHub('Backend services expose /debug/pprof')).toHaveLength(1);
  }, 60_000);

  it('keeps the token out of .svc.yaml: init-remote writes it to .svc.local.yaml (0600, gitignored), and moves one an older .svc.yaml holds', async () => {
    const dir = projectDir('scope: project:web\ndomain: frontend\n');
    writeFileSync(join(dir, '.gitignore'), 'dist/\n');
    const r = await svcJson(['init-remote', '--url', url, '--token', aliceKey], { store: alice.store, cwd: dir });
    expect(r.run.code, r.run.stderr).toBe(0);
    expect(readFileSync(join(dir, '.svc.yaml'), 'utf8')).toBe(`scope: project:web\ndomain: frontend\nremote_url: ${url}\n`);
    expect(readFileSync(join(dir, '.svc.local.yaml'), 'utf8')).toBe(`remote_token: ${aliceKey}\n`);
    expect(statSync(join(dir, '.svc.local.yaml')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toBe('dist/\n.svc.local.yaml\n');
    expect((await svcJson(['init-remote', '--verify'], { store: alice.store, cwd: dir })).run.code).toBe(0);

    // The older layout still works; doctor says to move it; init-remote alone moves it.
    const old = projectDir(`scope: project:old\nremote_url: ${url}\nremote_token: ${aliceKey}\n`);
    writeFileSync(join(old, '.gitignore'), 'dist/\n.svc.yaml\n');
    expect(
      (await svcJson(['learn', 'Old layout learns still reach the hub', '--scope', 'group:backend'], { store: alice.store, cwd: old }))
        .data,
    ).toMatchObject({ hub: url });
    const doctor = await svcJson(['doctor', '--no-handshake'], { store: alice.store, cwd: old });
    expect(doctor.data.find((c: { check: string }) => c.check === 'remote')).toMatchObject({
      status: 'warn',
      fix: expect.stringContaining('svc init-remote'),
    });
    const moved = await svcJson(['init-remote'], { store: alice.store, cwd: old });
    expect(moved.run.code, moved.run.stderr).toBe(0);
    expect(moved.data.moved_token).toBe(true);
    expect(readFileSync(join(old, '.svc.yaml'), 'utf8')).toBe(`scope: project:old\nremote_url: ${url}\n`);
    expect(readFileSync(join(old, '.svc.local.yaml'), 'utf8')).toBe(`remote_token: ${aliceKey}\n`);
    expect(readFileSync(join(old, '.gitignore'), 'utf8')).toBe('dist/\n.svc.local.yaml\n');
    const after = await svcJson(['doctor', '--no-handshake'], { store: alice.store, cwd: old });
    expect(after.data.find((c: { check: string }) => c.check === 'remote')).toMatchObject({ status: 'ok' });
    expect(existsSync(join(old, '.svc.local.yaml'))).toBe(true);
  }, 60_000);
});
