import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

// Webhooks end to end: a real receiver on loopback verifies every delivery's signatures; REST and
// MCP writes fire the spec's events from the outbox; a receiver that is down gets retries with a
// growing delay (on a test clock), one that stays down disables its webhook (audited) until an
// admin re-enables it, and then gets what waited.

const ALL = ['engram.created', 'engram.updated', 'engram.retired', 'pack.installed', 'session.ended', 'audit.entry'];

async function register(hub: TestHub, org: TestOrg, receiver: Receiver, events: string[]): Promise<string> {
  const made = await hub.request('POST', '/admin/webhooks', { token: org.adminKey, body: { url: receiver.url, events } });
  expect(made.status, made.text).toBe(201);
  receiver.secret = made.body.secret;
  return made.body.id;
}

describe.each(DATABASES)('webhooks (%s)', (kind) => {
  let hub: TestHub;
  // The hub's clock for retries: real time plus what a test moved it on by.
  let skew = 0;
  const receivers: Receiver[] = [];
  /** Waits until the worker has recorded what it sent (before the clock moves on). */
  const settle = () => hub.running.hub.webhooks.idle();
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };

  beforeAll(async () => {
    hub = await startTestHub(kind, {
      allowPrivateUrls: true,
      webhooks: { pollMs: 50, retryBaseMs: 60_000, maxAttempts: 3 },
      clock: () => Date.now() + skew,
    });
  }, 60_000);
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(async () => hub?.close());

  it('registers with a secret shown once, lists, reads, sends a test event and removes; admins only', async () => {
    const org = await hub.newOrg('wh-admin');
    const r = await receiver();
    const editor = await org.user('eve', 'editor');
    expect(
      (await hub.request('POST', '/admin/webhooks', { token: editor.key, body: { url: r.url, events: ['engram.created'] } })).status,
    ).toBe(403);
    for (const [body, detail] of [
      [{ url: 'ftp://example.com/x', events: ['engram.created'] }, /only https URLs/],
      [{ url: 'not a url', events: ['engram.created'] }, /is not a URL/],
      [{ url: r.url, events: ['engram.exploded'] }, /events/],
      [{ url: r.url, events: [] }, /events/],
    ] as const) {
      const bad = await hub.request('POST', '/admin/webhooks', { token: org.adminKey, body });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toMatch(detail);
    }

    const id = await register(hub, org, r, ['engram.created']);
    expect(r.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const list = await hub.request('GET', '/admin/webhooks', { token: org.adminKey });
    expect(list.body.items).toEqual([expect.objectContaining({ id, url: r.url, events: ['engram.created'], state: 'active', pending: 0 })]);
    expect(list.text).not.toContain(r.secret);

    const test = await hub.request('POST', `/admin/webhooks/${id}/test`, { token: org.adminKey, template: '/admin/webhooks/{id}/test' });
    expect(test.body).toMatchObject({ delivered: true, status: 200, error: null });
    expect(r.received).toEqual([expect.objectContaining({ type: 'webhook.test', verified: true, id: test.body.event_id })]);
    expect(r.received[0]!.headers['x-svc-event']).toBe('webhook.test');

    const one = await hub.request('GET', `/admin/webhooks/${id}`, { token: org.adminKey, template: '/admin/webhooks/{id}' });
    expect(one.body.deliveries).toEqual([
      expect.objectContaining({ event: 'webhook.test', state: 'delivered', status: 200, attempts: 1, error: null }),
    ]);
    expect(one.body.deliveries[0].latency_ms).toBeGreaterThanOrEqual(0);
    expect(
      (
        await hub.request('GET', `/admin/webhooks/${id}`, {
          token: (await hub.newOrg('wh-other')).adminKey,
          template: '/admin/webhooks/{id}',
        })
      ).status,
    ).toBe(404);

    expect((await hub.request('DELETE', `/admin/webhooks/${id}`, { token: org.adminKey, template: '/admin/webhooks/{id}' })).status).toBe(
      204,
    );
    expect((await hub.request('GET', '/admin/webhooks', { token: org.adminKey })).body.items).toEqual([]);
    const audit = await hub.request('GET', '/admin/audit?resource=' + encodeURIComponent(`webhook:${id}`), { token: org.adminKey });
    expect(audit.body.items.map((x: { action: string }) => x.action)).toEqual(
      expect.arrayContaining(['POST /api/v1/admin/webhooks', 'POST /api/v1/admin/webhooks/:id/test', 'DELETE /api/v1/admin/webhooks/:id']),
    );
  });

  it('fires the lifecycle events of REST and MCP writes, signed, each once', async () => {
    const org = await hub.newOrg('wh-events');
    const r = await receiver();
    await register(hub, org, r, ALL);
    const key = org.adminKey;
    const made = await hub.request('POST', '/engrams', {
      token: key,
      body: { statement: 'Webhooks carry engram changes', scope: 'org:wh-events' },
    });
    const eid = made.body.id;
    await hub.request('PATCH', `/engrams/${eid}`, { token: key, body: { tags: ['hooks'] }, template: '/engrams/{id}' });
    await hub.request('DELETE', `/engrams/${eid}`, { token: key, template: '/engrams/{id}' });

    const client = new Client({ name: 'webhook-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
    );
    const learned = (await client.callTool({
      name: 'svc_learn',
      arguments: { statement: 'MCP learns fire webhooks too', scope: 'org:wh-events' },
    })) as unknown as { structuredContent: { id: string } };
    const started = (await client.callTool({ name: 'svc_session_start', arguments: { task: 'check webhooks' } })) as unknown as {
      structuredContent: { session: { id: string } };
    };
    await client.callTool({ name: 'svc_session_end', arguments: { session: started.structuredContent.session.id, summary: 'done' } });
    await client.close();

    await r.until(
      (all) =>
        ['engram.created', 'engram.updated', 'engram.retired', 'session.ended'].every((t) => all.some((x) => x.type === t)) &&
        all.filter((x) => x.type === 'engram.created').length >= 2,
    );
    await r.until((all) => all.filter((x) => x.type === 'audit.entry').length >= 6);
    expect(r.received.every((x) => x.verified)).toBe(true);
    const created = r.accepted('engram.created').map((x) => x.data.id);
    expect(created.sort()).toEqual([eid, learned.structuredContent.id].sort());
    expect(r.accepted('engram.updated')[0]!.data).toMatchObject({ id: eid, tags: ['hooks'] });
    expect(r.accepted('engram.retired')[0]!.data).toMatchObject({ id: eid, status: 'retired' });
    expect(r.accepted('session.ended')[0]!.data).toMatchObject({ id: started.structuredContent.session.id, summary: 'done' });
    const audited = r.accepted('audit.entry').map((x) => x.data.action);
    expect(audited).toEqual(expect.arrayContaining(['POST /api/v1/engrams', 'MCP svc_learn']));
    const ids = r.received.map((x) => x.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('retries a receiver that is down with a growing, jittered delay, then delivers once it is up', async () => {
    const org = await hub.newOrg('wh-retry');
    const r = await receiver();
    r.answer = () => 503;
    const id = await register(hub, org, r, ['engram.created']);
    await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Delivered after the receiver recovers', scope: 'org:wh-retry' },
    });
    await r.until((all) => all.length === 1);
    const pending = async () =>
      (await hub.request('GET', `/admin/webhooks/${id}`, { token: org.adminKey, template: '/admin/webhooks/{id}' })).body.deliveries[0];
    const waitFor = async () => {
      await settle();
      return pending();
    };
    const first = await waitFor();
    expect(first).toMatchObject({ state: 'pending', attempts: 1, status: 503, error: 'the receiver answered 503' });
    const delay1 = Date.parse(first.next_at) - (Date.now() + skew);
    expect(delay1).toBeGreaterThanOrEqual(25_000); // half of the 60 s step fixed, half random (less the time this test took)
    expect(delay1).toBeLessThanOrEqual(60_000);
    await new Promise((d) => setTimeout(d, 300));
    expect(r.received).toHaveLength(1); // nothing before its time

    skew += 60_000;
    await r.until((all) => all.length === 2);
    const second = await waitFor();
    const delay2 = Date.parse(second.next_at) - (Date.now() + skew);
    expect(delay2).toBeGreaterThanOrEqual(55_000);
    expect(delay2).toBeLessThanOrEqual(120_000);

    r.answer = () => 200;
    skew += 120_000;
    await r.until((all) => r.accepted().length === 1 && all.length === 3);
    expect(await waitFor()).toMatchObject({ state: 'delivered', attempts: 3, status: 200 });
    expect(new Set(r.received.map((x) => x.id)).size).toBe(1);
  });

  it('disables a webhook whose receiver stays down, audits it, and sends what waited once re-enabled', async () => {
    const org = await hub.newOrg('wh-down');
    const r = await receiver();
    r.answer = () => 500;
    const id = await register(hub, org, r, ['engram.created']);
    await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Waits for the webhook to come back', scope: 'org:wh-down' },
    });
    for (let i = 0; i < 3; i++) {
      await r.until((all) => all.length === i + 1);
      await settle();
      skew += 240_000;
    }
    const read = async () =>
      (await hub.request('GET', `/admin/webhooks/${id}`, { token: org.adminKey, template: '/admin/webhooks/{id}' })).body;
    for (let i = 0; i < 100 && (await read()).state === 'active'; i++) await new Promise((d) => setTimeout(d, 25));
    const off = await read();
    expect(off).toMatchObject({ state: 'disabled', pending: 1 });
    expect(off.disabled_reason).toMatch(/^3 attempts to deliver engram\.created .* failed .*; last: the receiver answered 500$/);
    const audit = await hub.request('GET', '/admin/audit?action=webhook.disabled', { token: org.adminKey });
    expect(audit.body.items).toEqual([expect.objectContaining({ actor: 'svc-hub', resource: `webhook:${id}` })]);

    await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Written while the webhook is off', scope: 'org:wh-down' },
    });
    skew += 3_600_000;
    await new Promise((d) => setTimeout(d, 300));
    expect(r.received).toHaveLength(3);

    r.answer = () => 200;
    const on = await hub.request('PATCH', `/admin/webhooks/${id}`, {
      token: org.adminKey,
      body: { state: 'active' },
      template: '/admin/webhooks/{id}',
    });
    expect(on.body).toMatchObject({ state: 'active', disabled_reason: null });
    await r.until(() => r.accepted().length === 1);
    expect(r.accepted()[0]!.data.statement).toBe('Waits for the webhook to come back');
  });

  it("delivers only what the webhook's creator may read when it is sent: never another person's own scope", async () => {
    const org = await hub.newOrg('wh-private');
    const r = await receiver();
    const webhook = await register(hub, org, r, ['engram.created', 'session.ended']);
    const erin = await org.user('erin', 'editor', [{ path: 'eng' }]);
    const mine = await hub.request('POST', '/engrams', {
      token: erin.key,
      body: { statement: 'My own deploy note zqx', scope: 'user:erin' },
    });
    const team = await hub.request('POST', '/engrams', {
      token: erin.key,
      body: { statement: 'The team deploys through the pipeline', scope: 'group:eng' },
    });
    const session = await hub.request('POST', '/sessions', { token: erin.key, body: { task: 'my own task zqx' } });
    await hub.request('POST', `/sessions/${session.body.session.id}/end`, { token: erin.key, body: { summary: 'own summary zqx' } });
    await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'The org runs on call weekly', scope: 'org:wh-private' },
    });
    await r.until((all) => all.some((x) => x.data.scope === 'org:wh-private'));
    await settle();
    const sent = r.received.map((x) => x.data.id);
    expect(sent).toContain(team.body.id);
    expect(sent).not.toContain(mine.body.id);
    expect(sent).not.toContain(session.body.session.id);
    expect(JSON.stringify(r.received)).not.toMatch(/zqx/);
    // The deliveries view says what was held back and why.
    const view = await hub.request('GET', `/admin/webhooks/${webhook}`, { token: org.adminKey });
    expect(JSON.stringify(view.body)).toMatch(/withheld: admin may not read scope \\"user:erin\\"/);
  });

  it("follows its creator's access from one delivery to the next: demoted, then deactivated", async () => {
    const org = await hub.newOrg('wh-ended');
    const ada = await org.user('ada', 'admin');
    const r = await receiver();
    const made = await hub.request('POST', '/admin/webhooks', {
      token: ada.key,
      body: { url: r.url, events: ['engram.created', 'audit.entry'] },
    });
    expect(made.status, made.text).toBe(201);
    r.secret = made.body.secret;
    const write = async (statement: string) =>
      expect((await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement, scope: 'org:wh-ended' } })).status).toBe(201);
    const engrams = () => r.received.filter((x) => x.type === 'engram.created').map((x) => x.data.statement);
    /** The webhook's deliveries view, once it says `what`. */
    const viewSays = async (what: RegExp) => {
      for (let i = 0; i < 100; i++) {
        const view = await hub.request('GET', `/admin/webhooks/${made.body.id}`, { token: org.adminKey });
        if (what.test(JSON.stringify(view.body))) return;
        await new Promise((d) => setTimeout(d, 50));
      }
      throw new Error(`the deliveries view never said ${what}`);
    };

    // Delivered while ada is an admin: the policy the worker resolved for her is now in hand.
    await write('First rule while ada is an admin');
    await r.until(() => engrams().length === 1 && r.received.some((x) => x.type === 'audit.entry'));
    await settle();

    const demoted = await hub.request('PATCH', `/admin/users/${ada.id}`, { token: org.adminKey, body: { role: 'editor' } });
    expect(demoted.status, demoted.text).toBe(200);
    await write('Second rule, ada an editor');
    await r.until(() => engrams().length === 2);
    // An editor still reads the organization's scope, but gets no audit entry any more: not even the one of her demotion.
    await viewSays(/withheld: ada is no admin any more/);
    expect(r.received.filter((x) => x.type === 'audit.entry' && String(x.data.action).includes('/admin/users/'))).toEqual([]);

    const ended = await hub.request('PATCH', `/admin/users/${ada.id}`, { token: org.adminKey, body: { active: false } });
    expect(ended.status, ended.text).toBe(200);
    await write('Third rule, ada gone');
    await viewSays(/withheld: ada, who made this webhook, has no access any more/);
    await settle();
    expect(engrams()).toEqual(['First rule while ada is an admin', 'Second rule, ada an editor']);
  });

  it("lets a slow receiver delay only its own deliveries: a fast one beside it, and another organization's, get theirs at once", async () => {
    const a = await hub.newOrg('wh-slow-a');
    const b = await hub.newOrg('wh-slow-b');
    const slow = await receiver();
    slow.answer = () => 'hang'; // held until the hub's attempt times out (10 s)
    const fastA = await receiver();
    const fastB = await receiver();
    await register(hub, a, slow, ['engram.created']);
    await register(hub, a, fastA, ['engram.created']);
    await register(hub, b, fastB, ['engram.created']);
    for (let i = 0; i < 30; i++) {
      expect(
        (
          await hub.request('POST', '/engrams', {
            token: a.adminKey,
            body: { statement: `Slow receiver rule ${i}`, scope: 'org:wh-slow-a' },
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await hub.request('POST', '/engrams', {
            token: b.adminKey,
            body: { statement: `Other organization rule ${i}`, scope: 'org:wh-slow-b' },
          })
        ).status,
      ).toBe(201);
    }
    // Well inside the slow receiver's 10 s timeout: nothing waits for it.
    await fastA.until((all) => all.length === 30, 5_000);
    await fastB.until((all) => all.length === 30, 5_000);
    expect(fastA.received.every((x) => x.verified)).toBe(true);
    // The slow one holds at most its bound of deliveries at a time.
    expect(slow.received.length).toBeLessThanOrEqual(2);
  }, 60_000);

  it('gives up one payload a working receiver keeps refusing, without disabling the webhook', async () => {
    const org = await hub.newOrg('wh-poison');
    const r = await receiver();
    r.answer = (x) => (String(x.data.statement).includes('poison') ? 422 : 200);
    const id = await register(hub, org, r, ['engram.created']);
    await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: 'A poison payload', scope: 'org:wh-poison' } });
    await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: 'A fine payload', scope: 'org:wh-poison' } });
    for (let i = 0; i < 3; i++) {
      await r.until((all) => all.filter((x) => x.answered === 422).length === i + 1);
      await settle();
      skew += 240_000;
    }
    const read = async () =>
      (await hub.request('GET', `/admin/webhooks/${id}`, { token: org.adminKey, template: '/admin/webhooks/{id}' })).body;
    for (let i = 0; i < 100 && (await read()).deliveries.some((d: { state: string }) => d.state === 'pending'); i++)
      await new Promise((d) => setTimeout(d, 25));
    const hook = await read();
    expect(hook.state).toBe('active');
    expect(hook.deliveries.map((d: { state: string }) => d.state).sort()).toEqual(['delivered', 'failed']);
  });
});

describe('webhook destinations', () => {
  it('refuses loopback and private receivers unless the deployment allows them', async () => {
    const hub = await startTestHub('pglite', { allowPrivateUrls: false });
    try {
      const org = await hub.newOrg('wh-ssrf');
      for (const url of [
        'https://127.0.0.1/hook',
        'https://10.1.2.3/hook',
        'https://[::1]/hook',
        'https://169.254.169.254/latest',
        'http://example.com/hook',
      ]) {
        const r = await hub.request('POST', '/admin/webhooks', { token: org.adminKey, body: { url, events: ['engram.created'] } });
        expect(r.status, url).toBe(400);
        expect(r.body.detail).toMatch(/private, loopback or link-local|only https URLs/);
      }
    } finally {
      await hub.close();
    }
  });
});
