import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

describe.each(DATABASES)('engram routes (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let editor: { id: string; key: string };
  let viewer: { id: string; key: string };
  const T = '/engrams';
  const TID = '/engrams/{id}';

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
    editor = await acme.user('erin', 'editor', [{ path: 'eng' }, { path: 'eng/backend' }]);
    viewer = await acme.user('vic', 'viewer', [{ path: 'eng' }]);
  }, 60_000);
  afterAll(async () => hub?.close());

  it('creates with 201, dedups with 200 and a reference count, and reads it back', async () => {
    const a = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'Use pnpm, never npm', scope: 'group:eng', tags: ['build'] },
      template: T,
    });
    expect(a.status).toBe(201);
    expect(a.headers.get('svc-learn-action')).toBe('created');
    expect(a.body).toMatchObject({ statement: 'Use pnpm, never npm', scope: 'group:eng', status: 'active', reference_count: 1 });
    expect(a.body.id).toMatch(new RegExp(`^ENG-${acme.org.idPrefix}-\\d{4}-\\d{4}-001$`));
    const b = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'use pnpm, never npm.', scope: 'group:eng' },
      template: T,
    });
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ id: a.body.id, reference_count: 2 });
    const c = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'Use pnpm, never npm', scope: 'user:erin' },
      template: T,
    });
    expect(c.status).toBe(201);
    expect(c.body.id).not.toBe(a.body.id);
    const g = await hub.request('GET', `/engrams/${a.body.id}`, { token: viewer.key, template: TID });
    expect(g.status).toBe(200);
    expect(g.body.recurrence_count).toBe(1);
  });

  it('answers 400 with field errors, 401 without a valid token, 403 outside the writable scopes', async () => {
    const bad = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: '', type: 'opinion', extra: 1 },
      template: T,
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(bad.body).toMatchObject({
      status: 400,
      title: 'Invalid request',
      instance: '/api/v1/engrams',
      type: 'https://svc.dev/docs/errors/validation-error',
    });
    expect(bad.body.errors).toEqual(
      expect.arrayContaining([
        'extra: unknown field',
        'type: must be one of "behavioral", "terminological", "procedural", "architectural"',
      ]),
    );
    const junk = await hub.request('POST', '/engrams', { token: editor.key, raw: '{"statement":', template: T });
    expect(junk.status).toBe(400);
    expect(junk.body.type).toMatch(/malformed-json$/);
    expect((await hub.request('POST', '/engrams', { body: { statement: 'x' }, template: T })).status).toBe(401);
    expect(
      (await hub.request('POST', '/engrams', { token: 'svc_sk_' + 'x'.repeat(43), body: { statement: 'x' }, template: T })).status,
    ).toBe(401);
    const noWrite = await hub.request('POST', '/engrams', {
      token: viewer.key,
      body: { statement: 'Viewers cannot write', scope: 'group:eng' },
      template: T,
    });
    expect(noWrite.status).toBe(403);
    expect(noWrite.body.detail).toBe('vic is a viewer: viewers change nothing');
    const orgScope = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'Editors do not write the org scope', scope: 'org:acme' },
      template: T,
    });
    expect(orgScope.status).toBe(403);
    const secret = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'the deploy key is AKIAIOSFODNN7EXAMPLE', scope: 'user:erin' },
      template: T,
    });
    expect(secret.status).toBe(400);
    expect(secret.body.detail).toMatch(/secret/);
  });

  it('hides engrams outside the readable scopes as 404, exactly like missing ones', async () => {
    const mine = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'Erin keeps notes here', scope: 'user:erin' },
    });
    const hidden = await hub.request('GET', `/engrams/${mine.body.id}`, { token: viewer.key, template: TID });
    const missing = await hub.request('GET', `/engrams/ENG-${acme.org.idPrefix}-2020-0101-999`, { token: viewer.key, template: TID });
    expect(hidden.status).toBe(404);
    expect(missing.status).toBe(404);
    const strip = (b: { detail: string; instance: string }) => ({
      ...b,
      detail: b.detail.replace(/ENG-\S+/, 'ID'),
      instance: b.instance.replace(/ENG-\S+/, 'ID'),
      request_id: undefined, // each answer's own
    });
    expect(strip(hidden.body)).toEqual(strip(missing.body));
  });

  it('lists with pagination and filters', async () => {
    for (let i = 0; i < 7; i++)
      await hub.request('POST', '/engrams', {
        token: editor.key,
        body: { statement: `Backend rule number ${i}`, scope: 'group:eng/backend', domain: 'api.http' },
      });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { items: Array<{ id: string; scope: string }>; next_cursor: string | null } } = await hub.request(
        'GET',
        `/engrams?scope=group:eng/backend&limit=3${cursor ? `&cursor=${cursor}` : ''}`,
        { token: editor.key, template: T },
      );
      seen.push(...page.body.items.map((e) => e.id));
      expect(page.body.items.every((e) => e.scope === 'group:eng/backend')).toBe(true);
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(7);
    expect(new Set(seen).size).toBe(7);
    expect((await hub.request('GET', '/engrams?limit=0', { token: editor.key, template: T })).status).toBe(400);
    expect((await hub.request('GET', '/engrams?cursor=%%%', { token: editor.key, template: T })).status).toBe(400);
    // The viewer reads group:eng/backend through... nothing: only eng (the parent) is theirs.
    expect((await hub.request('GET', '/engrams?scope=group:eng/backend', { token: viewer.key, template: T })).status).toBe(403);
  });

  it('patches, retires (soft), gives feedback, promotes candidates and pins (admin only)', async () => {
    const c = await hub.request('POST', '/engrams', {
      token: editor.key,
      body: { statement: 'Prefer small pull requests', scope: 'group:eng', status: 'candidate' },
    });
    const id = c.body.id;
    const p = await hub.request('PATCH', `/engrams/${id}`, {
      token: editor.key,
      body: { statement: 'Prefer small, focused pull requests', tags: ['review'] },
      template: TID,
    });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ statement: 'Prefer small, focused pull requests', engram_version: 2, tags: ['review'] });
    expect((await hub.request('PATCH', `/engrams/${id}`, { token: editor.key, body: {}, template: TID })).status).toBe(400);
    expect((await hub.request('PATCH', `/engrams/${id}`, { token: viewer.key, body: { tags: [] }, template: TID })).status).toBe(403);
    const promoted = await hub.request('POST', `/engrams/${id}/promote`, { token: editor.key, template: '/engrams/{id}/promote' });
    expect(promoted.body.status).toBe('active');
    const fb = await hub.request('POST', `/engrams/${id}/feedback`, {
      token: editor.key,
      body: { signal: 'positive' },
      template: '/engrams/{id}/feedback',
    });
    expect(fb.body.feedback_signals.positive).toBe(1);
    // A viewer reads and changes nothing, feedback included.
    expect(
      (
        await hub.request('POST', `/engrams/${id}/feedback`, {
          token: viewer.key,
          body: { signal: 'positive' },
          template: '/engrams/{id}/feedback',
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await hub.request('POST', `/engrams/${id}/feedback`, {
          token: editor.key,
          body: { signal: 'great' },
          template: '/engrams/{id}/feedback',
        })
      ).status,
    ).toBe(400);
    expect((await hub.request('POST', `/engrams/${id}/pin`, { token: editor.key, template: '/engrams/{id}/pin' })).status).toBe(403);
    const pinned = await hub.request('POST', `/engrams/${id}/pin`, {
      token: acme.adminKey,
      body: { pinned: true },
      template: '/engrams/{id}/pin',
    });
    expect(pinned.body.pinned).toBe(true);
    const retired = await hub.request('DELETE', `/engrams/${id}`, { token: editor.key, template: TID });
    expect(retired.status).toBe(200);
    expect(retired.body.status).toBe('retired');
    const again = await hub.request('POST', `/engrams/${id}/promote`, { token: editor.key, template: '/engrams/{id}/promote' });
    expect(again.status).toBe(409);
    expect(again.body.type).toMatch(/\/errors\/conflict$/);
    expect((await hub.request('GET', `/engrams/${id}`, { token: editor.key })).body.status).toBe('retired');
  });

  it('answers unknown routes and methods with problem documents', async () => {
    const nope = await hub.request('GET', '/nothing-here', { token: editor.key });
    expect(nope.status).toBe(404);
    expect(nope.body.type).toMatch(/not-found$/);
    const method = await hub.request('PUT', '/engrams', { token: editor.key, body: {} });
    expect(method.status).toBe(405);
    const media = await hub.request('POST', '/engrams', {
      token: editor.key,
      raw: 'statement=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(media.status).toBe(415);
    const big = await hub.request('POST', '/engrams', { token: editor.key, raw: JSON.stringify({ statement: 'x'.repeat(2_000_000) }) });
    expect(big.status).toBe(413);
  });
});
