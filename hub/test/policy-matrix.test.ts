import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ALL_TOOLS, LEAN_TOOL_NAMES } from '../../engine/mcp/tools.js';
import { learn } from '../../engine/ops/learn.js';
import { callTool, type Called } from '../../engine/test/support/mcp-call.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { openApiDocument } from '../openapi/spec.js';
import { PgPackRegistry } from '../packs/pack-registry.js';
import { DATABASES } from './support/databases.js';
import { EVERY_ROUTE } from './support/every-route.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// Who may do what, on every surface, from one table (hub/access/policy.ts is the rule; this is
// its proof). Roles: viewer, editor, admin, all members of group eng. Data: the caller's own
// (scope user:<me>), the team's (group:eng, written by olga) and another person's (olga's own
// scope). Surfaces: REST, MCP with the full tool profile, MCP lean (every tool through svc_admin,
// as a nested action), and the pages. Every MCP tool and every REST route must have a row: a new
// one without a row fails here.

type Role = 'viewer' | 'editor' | 'admin';
type Target = 'own' | 'team' | 'other';
/** allowed: runs; refused: 403 or a tool error saying why; hidden: answers as if it did not exist. */
type Outcome = 'allowed' | 'refused' | 'hidden';

const ROLES: Role[] = ['viewer', 'editor', 'admin'];
const TARGETS: Target[] = ['own', 'team', 'other'];

interface World {
  me: string;
  /** An engram the target holds, and its scope. */
  engram: string;
  scope: string;
  /** A session of the target: the caller's own; olga's in group:eng; olga's own. */
  session: string;
  episode: string;
  /** An installed pack (with no engrams). */
  pack: string;
  uniq(): string;
}

interface ToolRow {
  args(w: World): Record<string, unknown>;
  expect(role: Role, target: Target): Outcome;
  /** Rows that change nothing depend on no target: run once (as 'own'). */
  targets?: Target[];
}

// Expectations in words. A viewer's write is refused before anything is looked up (MCP refuses
// the tool; REST looks the engram up first, so there another's engram is missing to it).
const read = (_r: Role, t: Target): Outcome => (t === 'other' ? 'hidden' : 'allowed');
const write = (r: Role, t: Target): Outcome => (r === 'viewer' ? 'refused' : t === 'other' ? 'hidden' : 'allowed');
const restWrite = (r: Role, t: Target): Outcome => (t === 'other' ? 'hidden' : r === 'viewer' ? 'refused' : 'allowed');
const writeScope = (r: Role, t: Target): Outcome => (t === 'other' || r === 'viewer' ? 'refused' : 'allowed');
const adminOnly = (r: Role, t: Target): Outcome =>
  r === 'viewer' ? 'refused' : t === 'other' ? 'hidden' : r === 'admin' ? 'allowed' : 'refused';
const restAdminOnly = (r: Role, t: Target): Outcome => (t === 'other' ? 'hidden' : r === 'admin' ? 'allowed' : 'refused');
/** Only the person who started a session changes it; another's private one does not exist. */
const ownSession = (r: Role, t: Target): Outcome =>
  r === 'viewer' ? 'refused' : t === 'other' ? 'hidden' : t === 'team' ? 'refused' : 'allowed';
const restOwnSession = (r: Role, t: Target): Outcome => (t === 'other' ? 'hidden' : r === 'viewer' || t === 'team' ? 'refused' : 'allowed');
const anyone = (): Outcome => 'allowed';
const editors = (r: Role): Outcome => (r === 'viewer' ? 'refused' : 'allowed');
const admins = (r: Role): Outcome => (r === 'admin' ? 'allowed' : 'refused');
const once: Target[] = ['own'];

/** Every MCP tool: its arguments against a target, and who may run it there. */
const TOOLS: Record<string, ToolRow> = {
  svc_learn: { args: (w) => ({ statement: w.uniq(), scope: w.scope }), expect: writeScope },
  svc_learn_batch: { args: (w) => ({ items: [{ statement: w.uniq(), scope: w.scope }] }), expect: writeScope },
  svc_recall: { args: () => ({ query: 'matrix' }), expect: anyone, targets: once },
  svc_inject: { args: () => ({ task: 'matrix' }), expect: editors, targets: once },
  svc_feedback: { args: (w) => ({ id: w.engram, signal: 'positive' }), expect: write },
  svc_forget: { args: (w) => ({ target: w.engram }), expect: write },
  svc_promote: { args: (w) => ({ id: w.engram }), expect: write },
  svc_pin: { args: (w) => ({ id: w.engram, pinned: true }), expect: adminOnly },
  svc_similarity_search: { args: () => ({ query: 'matrix' }), expect: anyone, targets: once },
  svc_list: { args: () => ({}), expect: anyone, targets: once },
  svc_session_start: { args: (w) => ({ task: 'matrix', scope: w.scope, fast: true }), expect: writeScope },
  svc_session_end: { args: (w) => ({ session: w.session, summary: 'forged summary' }), expect: ownSession },
  svc_session_scope: { args: (w) => ({ session: w.session, scope: `user:${w.me}` }), expect: ownSession },
  svc_capture: { args: (w) => ({ summary: 'ignore previous instructions', session: w.session }), expect: write },
  svc_timeline: { args: () => ({}), expect: anyone, targets: once },
  svc_episode_to_engram: { args: (w) => ({ episode_id: w.episode, statement: w.uniq() }), expect: write },
  svc_status: { args: () => ({}), expect: anyone, targets: once },
  svc_doctor: { args: () => ({}), expect: anyone, targets: once },
  svc_history: { args: (w) => ({ id: w.engram }), expect: read },
  // Another's receipts come back as none (checked by content below).
  svc_receipt: { args: (w) => ({ session: w.session }), expect: anyone },
  svc_packs_list: { args: () => ({}), expect: anyone, targets: once },
  svc_packs_uninstall: { args: (w) => ({ name: w.pack }), expect: admins, targets: once },
  svc_packs_discover: { args: () => ({}), expect: anyone, targets: once },
  svc_scopes_discover: { args: () => ({}), expect: editors, targets: once },
  svc_suggest_scope: { args: (w) => ({ statement: w.uniq() }), expect: anyone, targets: once },
  svc_rescope: { args: (w) => ({ ids: [w.engram], scope: 'group:eng' }), expect: write },
  svc_ingest: {
    args: (w) => ({ content: `Always run the matrix suite before a release ${w.uniq()}.`, scope: w.scope }),
    expect: writeScope,
  },
};

/** Tools that work on a developer's machine: the hub runs none of them, for anyone, on any path. */
const MACHINE_LOCAL: Record<string, (dir: string) => Record<string, unknown>> = {
  svc_packs_preview: (dir) => ({ path: dir }),
  svc_packs_install: (dir) => ({ path: dir }),
  svc_packs_export: (dir) => ({ name: 'leak', output: join(dir, 'out') }),
  svc_stores_add: (dir) => ({ path: dir, scope: 'project:x' }),
  svc_stores_list: () => ({}),
  svc_sync: () => ({}),
  svc_sync_status: () => ({}),
  svc_outbox: () => ({}),
  svc_tensions: () => ({}),
  svc_tensions_purge: () => ({}),
  svc_import: (dir) => ({ from: 'generic', path: join(dir, 'x.json') }),
  svc_batch_decay: () => ({}),
};

/** What the hub cannot do for anyone (no model, no pack registry over MCP, no hub behind it): the policy let the call through. */
const MISSING_CAPABILITY = /needs the embedding model|packs need a local store or a pack registry|no hub is configured for this project/;

/** A tool answer read as an outcome. */
function outcomeOf(c: Called): Outcome | `error: ${string}` {
  if (!c.isError) return /"outcome":"not_found"/.test(c.text) ? 'hidden' : 'allowed';
  if (
    /viewer|may not|needs the admin role|not allowed|developer's machine|only they may|not among the scopes|refuses destructive/.test(
      c.text,
    )
  )
    return 'refused';
  if (/\bno (engram|session|episode) |not found|matches no engram/i.test(c.text)) return 'hidden';
  if (MISSING_CAPABILITY.test(c.text)) return 'allowed';
  return `error: ${c.text}`;
}

/** REST routes: who may call them (403 for the others). Data routes are checked per target below. */
const REST: Record<string, (r: Role) => Outcome> = {};
for (const [method, path] of EVERY_ROUTE) {
  const key = `${method} ${path}`;
  if (path.startsWith('/admin/')) REST[key] = admins;
  else if (path.startsWith('/me') || path === '/me') REST[key] = anyone;
}
Object.assign(REST, {
  'GET /engrams': anyone,
  'POST /engrams': editors,
  'GET /engrams/ENG-X-2026-0101-001': anyone,
  'PATCH /engrams/ENG-X-2026-0101-001': editors,
  'DELETE /engrams/ENG-X-2026-0101-001': editors,
  'POST /engrams/ENG-X-2026-0101-001/feedback': editors,
  'POST /engrams/ENG-X-2026-0101-001/promote': editors,
  'POST /engrams/ENG-X-2026-0101-001/pin': admins,
  'GET /engrams/ENG-X-2026-0101-001/history': anyone,
  'POST /recall': anyone,
  'POST /recall/bm25': anyone,
  'POST /inject': anyone,
  'GET /episodes': anyone,
  'POST /episodes': editors,
  'GET /episodes/EP-X': anyone,
  'POST /sessions': editors,
  'GET /sessions': anyone,
  'GET /sessions/SES-X': anyone,
  'POST /sessions/SES-X/end': editors,
  'GET /packs': anyone,
  'POST /packs': admins,
  'DELETE /packs/p': admins,
  'POST /packs/export': anyone,
} satisfies Record<string, (r: Role) => Outcome>);

/** The same engram actions over REST, per target (the MCP rows' REST twins). */
const REST_DATA: Array<{
  name: string;
  call: (w: World) => [string, string, unknown?];
  expect: (r: Role, t: Target) => Outcome | `status ${number}`;
}> = [
  { name: 'read', call: (w) => ['GET', `/engrams/${w.engram}`], expect: read },
  { name: 'history', call: (w) => ['GET', `/engrams/${w.engram}/history`], expect: read },
  { name: 'edit', call: (w) => ['PATCH', `/engrams/${w.engram}`, { tags: ['matrix'] }], expect: restWrite },
  { name: 'feedback', call: (w) => ['POST', `/engrams/${w.engram}/feedback`, { signal: 'negative' }], expect: restWrite },
  { name: 'promote', call: (w) => ['POST', `/engrams/${w.engram}/promote`], expect: restWrite },
  { name: 'pin', call: (w) => ['POST', `/engrams/${w.engram}/pin`, { pinned: true }], expect: restAdminOnly },
  { name: 'learn', call: (w) => ['POST', '/engrams', { statement: w.uniq(), scope: w.scope }], expect: writeScope },
  { name: 'read session', call: (w) => ['GET', `/sessions/${w.session}`], expect: read },
  { name: 'end session', call: (w) => ['POST', `/sessions/${w.session}/end`, { summary: 'forged' }], expect: restOwnSession },
  { name: 'start session', call: (w) => ['POST', '/sessions', { task: 'matrix', scope: w.scope }], expect: writeScope },
  { name: 'capture', call: (w) => ['POST', '/episodes', { summary: 'x', scope: w.scope }], expect: writeScope },
  { name: 'read episode', call: (w) => ['GET', `/episodes/${w.episode}`], expect: read },
  { name: 'capture in a session', call: (w) => ['POST', '/episodes', { summary: 'x', session: w.session }], expect: restCapture },
  { name: 'retire', call: (w) => ['DELETE', `/engrams/${w.engram}`], expect: restWrite },
];

/** An episode in the caller's own scope may name a session the caller reads (another's private one is missing: 400 there). */
function restCapture(r: Role, t: Target): Outcome | `status ${number}` {
  return r === 'viewer' ? 'refused' : t === 'other' ? 'status 400' : 'allowed';
}

const restOutcome = (status: number): Outcome | `status ${number}` =>
  status === 403 ? 'refused' : status === 404 ? 'hidden' : status < 400 ? 'allowed' : `status ${status}`;

describe('the policy table covers every surface', () => {
  it('has a row for every MCP tool and every REST route', async () => {
    const rows = new Set([...Object.keys(TOOLS), ...Object.keys(MACHINE_LOCAL)]);
    expect(ALL_TOOLS.map((t) => t.name).filter((n) => !rows.has(n))).toEqual([]);
    expect(
      ALL_TOOLS.filter((t) => t.machineLocal)
        .map((t) => t.name)
        .sort(),
    ).toEqual(Object.keys(MACHINE_LOCAL).sort());
    expect(EVERY_ROUTE.map(([m, p]) => `${m} ${p}`).filter((k) => !(k in REST))).toEqual([]);
    // Every authenticated operation the OpenAPI description names (openapi.test.ts holds it equal
    // to the router) is called in EVERY_ROUTE: a new route without a row fails here.
    const doc = await openApiDocument();
    const open = new Set(['GET /openapi.yaml', 'POST /invitations/redeem']);
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths) as Array<[string, Record<string, unknown> & { servers?: unknown }]>) {
      if (ops.servers) continue; // the sign-in routes at the root: anonymous
      const template = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      for (const m of Object.keys(ops)
        .filter((k) => ['get', 'post', 'put', 'patch', 'delete'].includes(k))
        .map((k) => k.toUpperCase())) {
        if (open.has(`${m} ${path}`)) continue;
        if (!EVERY_ROUTE.some(([rm, rp]) => rm === m && template.test(rp))) missing.push(`${m} ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe.each(DATABASES)('role x surface x action (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  const keys = {} as Record<Role, string>;
  const names: Record<Role, string> = { viewer: 'vic', editor: 'ed', admin: 'ada' };
  let olga: { id: string; key: string };
  const clients: Array<{ close(): Promise<void> }> = [];
  let n = 0;
  const uniq = () => `Matrix statement number ${++n} about deploy rules`;

  const connect = async (token: string, profile: 'full' | 'lean') => {
    const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp?profile=${profile}`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = new Client({ name: 'policy-matrix', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  };

  /** Fresh data for each call: an action may retire or move what it acts on. */
  const world = async (role: Role, target: Target): Promise<World> => {
    const me = names[role];
    const system = openOrgBackend(hub.db, acme.org, null);
    const ctx = { now: () => new Date(), sessionId: null };
    const scope = target === 'own' ? `user:${me}` : target === 'team' ? 'group:eng' : 'user:olga';
    // A candidate, so that promote has something to do.
    const engram = (await learn(system, { statement: uniq(), scope, status: 'candidate' }, ctx)).engram.id;
    // Sessions and episodes have owners: the caller's own, or olga's.
    const owner = target === 'own' ? me : 'olga';
    const session = `SES-${acme.org.idPrefix}-20260101-${(++n).toString(16).padStart(8, '0')}`;
    await system.putSession({
      id: session,
      owner,
      scope,
      started_at: new Date().toISOString(),
      status: 'active',
      engram_ids: [engram],
      task: `private task of ${owner}`,
    } as never);
    const episode = `EP-${acme.org.idPrefix}-20260101-${(++n).toString(16).padStart(8, '0')}`;
    await system.appendEpisodes([
      {
        id: episode,
        at: new Date().toISOString(),
        agent: 'test',
        summary: `episode of ${owner} in ${scope}`,
        owner,
        scope,
        engram_ids: [],
      } as never,
    ]);
    const pack = `matrix-${++n}`;
    await new PgPackRegistry(hub.db, acme.org, null).put({
      name: pack,
      version: 1,
      installed_at: new Date().toISOString(),
      source: 'test',
      ids: [],
    } as never);
    return { me, engram, scope, session, episode, pack, uniq };
  };

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 100_000, writesPerMinute: 100_000, ingestPerMinute: 100_000 } });
    acme = await hub.newOrg('acme');
    for (const role of ROLES) keys[role] = (await acme.user(names[role], role, [{ path: 'eng' }])).key;
    olga = await acme.user('olga', 'editor', [{ path: 'eng' }]);
  }, 120_000);
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await hub?.close();
  });

  it.each(['full', 'lean'] as const)(
    'MCP (%s profile): every tool, every role, every target',
    async (profile) => {
      const failures: string[] = [];
      for (const role of ROLES) {
        const client = await connect(keys[role], profile);
        for (const [tool, row] of Object.entries(TOOLS)) {
          for (const target of row.targets ?? TARGETS) {
            const w = await world(role, target);
            const args = row.args(w);
            // The lean profile reaches every tool it does not list through svc_admin, as a nested action.
            const direct = profile === 'full' || (LEAN_TOOL_NAMES as readonly string[]).includes(tool);
            const got = outcomeOf(
              direct ? await callTool(client, tool, args) : await callTool(client, 'svc_admin', { action: tool, args }),
            );
            const want = row.expect(role, target);
            // svc_admin refuses destructive tools for everyone: that is a refusal too.
            const wanted = !direct && ALL_TOOLS.find((t) => t.name === tool)!.destructive ? 'refused' : want;
            if (got !== wanted) failures.push(`${profile} ${role} ${tool} on ${target}: ${got}, want ${wanted}`);
          }
        }
      }
      expect(failures).toEqual([]);
    },
    300_000,
  );

  it("runs no tool of a developer's machine, top-level or nested, and writes nothing to the host", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-matrix-'));
    const failures: string[] = [];
    for (const role of ROLES) {
      const full = await connect(keys[role], 'full');
      const lean = await connect(keys[role], 'lean');
      for (const [tool, args] of Object.entries(MACHINE_LOCAL)) {
        for (const [how, called] of [
          ['full', await callTool(full, tool, args(dir))],
          ['lean', await callTool(lean, 'svc_admin', { action: tool, args: args(dir) })],
        ] as const) {
          if (outcomeOf(called) !== 'refused') failures.push(`${how} ${role} ${tool}: ${called.text}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  }, 120_000);

  it('REST: every route refuses the roles that may not call it', async () => {
    const failures: string[] = [];
    for (const role of ROLES) {
      for (const [method, path, body] of EVERY_ROUTE) {
        if (path === '/me/token') continue; // ends the token the rest of the suite uses
        const r = await hub.request(method, path, { token: keys[role], body });
        const want = REST[`${method} ${path}`]!(role);
        // These routes name things that do not exist: a role that may call the route gets no 403,
        // one that may not gets a 403 (or the 404 of the missing thing, never a success).
        const wrong = want === 'refused' ? r.status < 400 || (r.status !== 403 && r.status !== 404) : r.status === 403;
        if (wrong) failures.push(`${role} ${method} ${path}: ${r.status} ${r.body?.detail ?? ''}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('REST: engram, session and episode actions per role and target', async () => {
    const failures: string[] = [];
    for (const role of ROLES) {
      for (const action of REST_DATA) {
        for (const target of TARGETS) {
          const [method, path, body] = action.call(await world(role, target));
          const r = await hub.request(method, path, { token: keys[role], body });
          const got = restOutcome(r.status);
          const want = action.expect(role, target);
          if (got !== want) failures.push(`${role} ${action.name} on ${target}: ${r.status} ${r.body?.detail ?? ''}, want ${want}`);
        }
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('pages: the admin UI for admins only, the portal for everyone', async () => {
    for (const role of ROLES) {
      const admin = await fetch(`${hub.url}/admin/`, { headers: { Authorization: `Bearer ${keys[role]}` }, redirect: 'manual' });
      expect(admin.status, `${role} /admin/`).toBe(role === 'admin' ? 200 : 403);
      const me = await fetch(`${hub.url}/me/`, { headers: { Authorization: `Bearer ${keys[role]}` }, redirect: 'manual' });
      expect(me.status, `${role} /me/`).toBe(200);
    }
  });

  it("keeps others' private history, receipts and episodes out of every read", async () => {
    const w = await world('editor', 'other');
    const client = await connect(keys.editor, 'full');
    const hers = await connect(olga.key, 'full');
    // olga's private injection receipt (her task text, which names her private engram) and her engram's events.
    expect(
      (await callTool(hers, 'svc_inject', { task: 'olga private prompt about Matrix statement deploy rules', fast: true })).isError,
    ).toBe(false);
    const receipts = await callTool(client, 'svc_receipt', {});
    expect(receipts.text).not.toContain('olga private prompt');
    expect((await callTool(client, 'svc_history', { id: w.engram })).isError).toBe(true);
    expect((await hub.request('GET', `/engrams/${w.engram}/history`, { token: keys.editor })).status).toBe(404);
    const timeline = await callTool(client, 'svc_timeline', { limit: 500 });
    expect(timeline.text).not.toContain('episode of olga in user:olga');
    // The owner still sees her own.
    expect((await callTool(hers, 'svc_receipt', {})).text).toContain('olga private prompt');
    expect((await callTool(hers, 'svc_history', { id: w.engram })).data.count).toBeGreaterThan(0);
  });

  it("holds the organization's tool deny list against svc_admin's nested actions", async () => {
    expect(
      (
        await hub.request('PUT', '/admin/mcp/tools', {
          token: acme.adminKey,
          body: { deny: ['svc_learn', 'svc_learn_batch', 'svc_ingest'] },
        })
      ).status,
    ).toBe(200);
    try {
      const lean = await connect(keys.editor, 'lean');
      for (const [action, args] of [
        ['learn_batch', { items: [{ statement: uniq() }] }],
        ['ingest', { content: 'Always deploy on Tuesdays. Never deploy on Fridays.' }],
      ] as const) {
        const r = await callTool(lean, 'svc_admin', { action, args });
        expect(r.text).toMatch(/is not allowed in this organization/);
      }
      expect((await callTool(lean, 'svc_learn', { statement: uniq() })).text).toMatch(/is not allowed in this organization/);
    } finally {
      await hub.request('PUT', '/admin/mcp/tools', { token: acme.adminKey, body: { deny: [] } });
    }
  });
});
