import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { ident } from '../data/sql.js';

// A person's data: GET /me/export gives them everything the hub holds about them; deleting them
// (admin or SCIM, both through end-access.ts) erases their own data and keeps the team's.

describe.each(DATABASES)('a person’s data: export and erasure (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    Number((await hub.db.query<{ n: string | number }>(`SELECT count(*) AS n FROM ${ident(acme.org.schema)}.${sql}`, params)).rows[0]!.n);

  it('exports what the hub holds about the caller, then erases it on delete while the team keeps its engrams', async () => {
    const dana = await acme.user('dana', 'editor', [{ path: 'eng' }]);
    const learn = (statement: string, scope: string) => hub.request('POST', '/engrams', { token: dana.key, body: { statement, scope } });
    const mine = await learn('Dana prefers the zebrafish notation for her own notes', 'user:dana');
    await learn('Dana keeps her zebrafish reading list in the personal wiki', 'user:dana');
    const team = await learn('The zebrafish service deploys from the release branch only', 'group:eng');
    expect([mine.status, team.status]).toEqual([201, 201]);
    const session = await hub.request('POST', '/sessions', { token: dana.key, body: { task: 'tidy the zebrafish notes' } });
    expect(session.status).toBe(201);
    expect((await hub.request('POST', '/episodes', { token: dana.key, body: { summary: 'dana sorted the zebrafish notes' } })).status).toBe(
      201,
    );
    expect((await hub.request('POST', '/inject', { token: dana.key, body: { task: 'how do I deploy zebrafish' } })).status).toBe(200);

    const exported = await hub.request('GET', '/me/export', { token: dana.key, template: '/me/export' });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-disposition')).toMatch(/attachment; filename="svc-acme-dana\.json"/);
    const doc = exported.body;
    expect(doc).toMatchObject({
      format: 'svc-person-export/1',
      organization: 'acme',
      scope: 'user:dana',
      user: { name: 'dana', groups: ['eng'] },
    });
    expect(doc.engrams.map((e: { statement: string }) => e.statement).sort()).toEqual([
      'Dana keeps her zebrafish reading list in the personal wiki',
      'Dana prefers the zebrafish notation for her own notes',
    ]);
    expect(doc.sessions).toHaveLength(1);
    // Her own episode, and the one her session's start wrote.
    expect(doc.episodes.map((e: { summary: string }) => e.summary)).toContain('dana sorted the zebrafish notes');
    expect(doc.injections.length).toBeGreaterThanOrEqual(1);
    expect(doc.injections[0]).not.toHaveProperty('owner');
    expect(doc.api_keys).toHaveLength(1);
    // Metadata only: the key itself is never held, so never exported.
    expect(JSON.stringify(doc)).not.toContain(dana.key);

    // Another person's export holds nothing of hers.
    const eve = await acme.user('eve', 'editor', [{ path: 'eng' }]);
    const evesExport = (await hub.request('GET', '/me/export', { token: eve.key })).body;
    expect(JSON.stringify(evesExport)).not.toContain('Dana');

    // A recall first, so the hub's in-memory postings hold her engrams before they are erased.
    expect(
      (await hub.request('POST', '/recall', { token: dana.key, body: { query: 'zebrafish notes' } })).body.results.length,
    ).toBeGreaterThan(0);

    const deleted = await hub.request('DELETE', `/admin/users/${dana.id}`, { token: acme.adminKey, template: '/admin/users/{id}' });
    expect(deleted.status).toBe(204);

    expect(await count(`engrams WHERE scope = 'user:dana'`)).toBe(0);
    expect(await count(`engram_terms WHERE scope = 'user:dana'`)).toBe(0);
    expect(await count(`sessions WHERE owner = 'dana'`)).toBe(0);
    expect(await count(`episodes WHERE owner = 'dana'`)).toBe(0);
    expect(await count(`engram_events WHERE doc->>'owner' = 'dana' OR engram_id = $1`, [mine.body.id])).toBe(0);
    expect(await count(`idempotency_keys WHERE user_id = $1`, [dana.id])).toBe(0);
    // The team's engram stays, and recall still finds it (the postings no longer hold hers).
    expect(await count(`engrams WHERE id = $1`, [team.body.id])).toBe(1);
    const recalled = await hub.request('POST', '/recall', { token: eve.key, body: { query: 'zebrafish' } });
    expect(recalled.body.results.map((h: { id: string }) => h.id)).toEqual([team.body.id]);
    const stats = await hub.db.query<{ n_rows: string | number }>(
      `SELECT n_rows FROM ${ident(acme.org.schema)}.fts_scope_stats WHERE scope = 'user:dana'`,
    );
    expect(Number(stats.rows[0]?.n_rows ?? 0)).toBe(0);

    // The audit log keeps its chain and says what was erased, with counts and no content.
    const audit = await hub.db.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM ${ident(acme.org.schema)}.audit_log WHERE resource = $1 AND outcome = 204 ORDER BY seq DESC LIMIT 1`,
      [`user:${dana.id}`],
    );
    expect(audit.rows[0]?.details).toMatchObject({ mode: 'delete', erased: { engrams: 2, sessions: 1, episodes: doc.episodes.length } });
    expect(JSON.stringify(audit.rows[0]?.details)).not.toContain('zebrafish');
    const verify = await hub.request('GET', '/admin/audit/verify', { token: acme.adminKey });
    expect(verify.status).toBe(200);
    expect(verify.body).toMatchObject({ ok: true });
  });
});
