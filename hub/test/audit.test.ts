import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../audit/audit-log.js';
import { ident } from '../data/migrate.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { svc } from '../../tui/test/run-svc.js';

describe.each(DATABASES)('the audit chain (%s)', (kind) => {
  let hub: TestHub;
  const key = () => hub.running.hub.config.auditKey;

  beforeAll(async () => {
    hub = await startTestHub(kind);
  }, 60_000);
  afterAll(async () => hub?.close());

  async function orgWithCalls(slug: string, n: number): Promise<TestOrg> {
    const org = await hub.newOrg(slug);
    for (let i = 0; i < n; i++) await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: `Audited rule ${i}`, scope: `org:${slug}` } });
    await hub.request('GET', '/me', { token: org.adminKey });
    await hub.request('GET', '/engrams/ENG-NOPE-2020-0101-001', { token: org.adminKey });
    await hub.running.hub.audit.drain();
    return org;
  }

  it('writes one signed, linked row per call, failures included', async () => {
    const org = await orgWithCalls('chain', 5);
    const rows = (await hub.db.query<{ seq: number; action: string; outcome: number; actor: string }>(`SELECT seq, action, outcome, actor FROM ${ident(org.org.schema)}.audit_log ORDER BY seq`)).rows;
    expect(rows.map((r) => Number(r.outcome))).toEqual([201, 201, 201, 201, 201, 200, 404]);
    expect(rows.at(-1)).toMatchObject({ action: 'GET /api/v1/engrams/:id', actor: 'admin' });
    expect(await verifyAudit(hub.db, org.org, key())).toEqual({ ok: true, rows: 7 });
  });

  it('names the first row edited, removed or inserted', async () => {
    const edited = await orgWithCalls('edited', 4);
    await hub.db.query(`UPDATE ${ident(edited.org.schema)}.audit_log SET outcome = 200 WHERE seq = 3`);
    expect(await verifyAudit(hub.db, edited.org, key())).toMatchObject({ ok: false, rows: 2, first_bad: { seq: 3, problem: expect.stringMatching(/edited/) } });

    const removed = await orgWithCalls('removed', 4);
    await hub.db.query(`DELETE FROM ${ident(removed.org.schema)}.audit_log WHERE seq = 2`);
    expect(await verifyAudit(hub.db, removed.org, key())).toMatchObject({ ok: false, first_bad: { seq: 3, problem: expect.stringMatching(/row 2 is missing/) } });

    const inserted = await orgWithCalls('inserted', 2);
    const s = ident(inserted.org.schema);
    const last = (await hub.db.query<{ seq: number; hash: string }>(`SELECT seq, hash FROM ${s}.audit_log ORDER BY seq DESC LIMIT 1`)).rows[0]!;
    await hub.db.query(
      `INSERT INTO ${s}.audit_log (seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash) VALUES ($1, $2, 'mallory', null, 'DELETE /api/v1/engrams/:id', null, 200, '{}', $3, $4)`,
      [Number(last.seq) + 1, new Date().toISOString(), last.hash, 'f'.repeat(64)],
    );
    expect(await verifyAudit(hub.db, inserted.org, key())).toMatchObject({ ok: false, first_bad: { seq: Number(last.seq) + 1 } });

    const renumbered = await orgWithCalls('renumbered', 3);
    await hub.db.query(`DELETE FROM ${ident(renumbered.org.schema)}.audit_log WHERE seq = 3`);
    await hub.db.query(`UPDATE ${ident(renumbered.org.schema)}.audit_log SET seq = seq - 1 WHERE seq > 3`);
    expect(await verifyAudit(hub.db, renumbered.org, key())).toMatchObject({ ok: false, first_bad: { seq: 3 } });

    if (kind === 'postgres') {
      const env = { DATABASE_URL: hub.database.url! };
      const bad = await svc(['hub', 'audit', 'verify', '--org', 'edited', '--no-json'], { env });
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/Audit chain of edited BROKEN at row 3: its content does not match its signature/);
      const good = await svc(['hub', 'audit', 'verify', '--org', 'chain', '--json'], { env });
      expect(good.code).toBe(0);
      expect(JSON.parse(good.stdout)).toMatchObject({ ok: true, rows: 7 });
      const none = await svc(['hub', 'audit', 'verify', '--org', 'nobody', '--no-json'], { env });
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/no organization "nobody"/);
    }
  });

  it('never fails a request when the audit write fails, and catches up when it works again', async () => {
    const org = await hub.newOrg('flaky');
    const s = ident(org.org.schema);
    await hub.db.query(`ALTER TABLE ${s}.audit_log RENAME TO audit_log_away`);
    const r = await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: 'Written while audit is down', scope: 'org:flaky' } });
    expect(r.status).toBe(201);
    expect((await hub.request('GET', '/me', { token: org.adminKey })).status).toBe(200);
    await new Promise((done) => setTimeout(done, 300));
    await hub.db.query(`ALTER TABLE ${s}.audit_log_away RENAME TO audit_log`);
    expect(await hub.running.hub.audit.drain(20_000)).toBe(true);
    expect(await verifyAudit(hub.db, org.org, key())).toEqual({ ok: true, rows: 2 });
  });
});
