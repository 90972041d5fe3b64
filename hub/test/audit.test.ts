import { asOwner } from './support/audit-tamper.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditWriter, GAP_ACTION, rowHash, verifyAudit, WRITER_START, WRITER_STOP, type AuditEntry } from '../audit/audit-log.js';
import { badSignature, checkAgainstCheckpoints, readCheckpoints, type Checkpoint } from '../audit/checkpoints.js';
import { ident } from '../data/sql.js';
import type { Database, Org } from '../contracts.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { svc } from '../../engine/test/support/run-svc.js';
import { startHub } from '../start.js';

const MARKERS = [WRITER_START, WRITER_STOP, GAP_ACTION];

/** Rows of one organization's log, in order. */
async function rows(
  db: Database,
  org: Org,
): Promise<
  Array<{ seq: number; action: string; outcome: number; actor: string; resource: string | null; details: Record<string, unknown> }>
> {
  return (
    await db.query<{
      seq: number;
      action: string;
      outcome: number;
      actor: string;
      resource: string | null;
      details: Record<string, unknown>;
    }>(`SELECT seq, action, outcome, actor, resource, details FROM ${ident(org.schema)}.audit_log ORDER BY seq`)
  ).rows.map((r) => ({ ...r, seq: Number(r.seq), outcome: Number(r.outcome) }));
}

const entry = (action: string, extra: Partial<AuditEntry> = {}): AuditEntry => ({
  at: new Date().toISOString(),
  actor: 'tester',
  token_id: null,
  action,
  resource: null,
  outcome: 200,
  details: {},
  ...extra,
});

describe.each(DATABASES)('the audit chain (%s)', (kind) => {
  let hub: TestHub;
  const key = () => hub.running.hub.config.auditKey;
  const warnings: string[] = [];

  beforeAll(async () => {
    hub = await startTestHub(kind, { log: (m) => warnings.push(m), rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
  }, 60_000);
  afterAll(async () => hub?.close());

  async function orgWithCalls(slug: string, n: number): Promise<TestOrg> {
    const org = await hub.newOrg(slug);
    for (let i = 0; i < n; i++)
      await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: `Audited rule ${i}`, scope: `org:${slug}` } });
    await hub.request('GET', '/me', { token: org.adminKey });
    await hub.request('GET', '/engrams/ENG-NOPE-2020-0101-001', { token: org.adminKey });
    await hub.running.hub.audit.drain();
    return org;
  }

  it('writes one signed, linked row per call, failures included, and marks where a batching writer starts', async () => {
    const org = await orgWithCalls('chain', 5);
    const all = await rows(hub.db, org.org);
    expect(all.filter((r) => !MARKERS.includes(r.action)).map((r) => r.outcome)).toEqual([201, 201, 201, 201, 201, 200, 404]);
    expect(all.at(-1)).toMatchObject({ action: 'GET /api/v1/engrams/:id', actor: 'admin' });
    // Writes carry their rows in their own transactions; the reads went through the queue, whose
    // writer announced itself first.
    expect(all.map((r) => r.action).indexOf(WRITER_START)).toBe(5);
    expect(await verifyAudit(hub.db, org.org, key())).toMatchObject({ ok: true, rows: 8, gaps: [], unfinished: [{ started_seq: 6 }] });
  });

  it("chains a write's row after a row another process appended, and still commits the write with it", async () => {
    const org = await orgWithCalls('guessed', 2);
    // Another hub process appends: this one's guess of the chain's head is now stale.
    const last = (
      await hub.db.query<{ seq: number; hash: string }>(
        `SELECT seq, hash FROM ${ident(org.org.schema)}.audit_log ORDER BY seq DESC LIMIT 1`,
      )
    ).rows[0]!;
    const e = entry('elsewhere');
    const seq = Number(last.seq) + 1;
    await hub.db.query(
      `INSERT INTO ${ident(org.org.schema)}.audit_log (seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10)`,
      [
        seq,
        e.at,
        e.actor,
        e.token_id,
        e.action,
        e.resource,
        e.outcome,
        JSON.stringify(e.details),
        last.hash,
        rowHash(key(), last.hash, seq, e),
      ],
    );
    const created = await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Written after the guess went stale', scope: 'org:guessed' },
    });
    expect(created.status).toBe(201);
    expect((await hub.request('GET', `/engrams/${created.body.id}`, { token: org.adminKey, template: '/engrams/{id}' })).status).toBe(200);
    await hub.running.hub.audit.drain();
    const all = await rows(hub.db, org.org);
    expect(all.filter((r) => r.seq > seq && r.action === 'POST /api/v1/engrams')).toMatchObject([
      { outcome: 201, resource: `engram:${created.body.id}` },
    ]);
    expect(await verifyAudit(hub.db, org.org, key())).toMatchObject({ ok: true, gaps: [] });
    expect(warnings.filter((w) => w.includes('queued instead'))).toEqual([]);
  });

  it('is append-only in the database: UPDATE, DELETE and TRUNCATE are refused', async () => {
    const org = await orgWithCalls('locked', 2);
    const t = `${ident(org.org.schema)}.audit_log`;
    await expect(hub.db.query(`UPDATE ${t} SET outcome = 200 WHERE seq = 1`)).rejects.toThrow(/append-only/);
    await expect(hub.db.query(`DELETE FROM ${t} WHERE seq = (SELECT max(seq) FROM ${t})`)).rejects.toThrow(/append-only/);
    await expect(hub.db.query(`TRUNCATE ${t}`)).rejects.toThrow(/append-only/);
    expect(await verifyAudit(hub.db, org.org, key())).toMatchObject({ ok: true, rows: 5 });
  });

  it('names the first row edited, removed or inserted by someone who switched that off', async () => {
    const edited = await orgWithCalls('edited', 4);
    await asOwner(hub.db, edited.org, `UPDATE ${ident(edited.org.schema)}.audit_log SET outcome = 200 WHERE seq = 3`);
    expect(await verifyAudit(hub.db, edited.org, key())).toMatchObject({
      ok: false,
      rows: 2,
      first_bad: { seq: 3, problem: expect.stringMatching(/edited/) },
    });

    const removed = await orgWithCalls('removed', 4);
    await asOwner(hub.db, removed.org, `DELETE FROM ${ident(removed.org.schema)}.audit_log WHERE seq = 2`);
    expect(await verifyAudit(hub.db, removed.org, key())).toMatchObject({
      ok: false,
      first_bad: { seq: 3, problem: expect.stringMatching(/row 2 is missing/) },
    });

    const inserted = await orgWithCalls('inserted', 2);
    const s = ident(inserted.org.schema);
    const last = (await hub.db.query<{ seq: number; hash: string }>(`SELECT seq, hash FROM ${s}.audit_log ORDER BY seq DESC LIMIT 1`))
      .rows[0]!;
    await hub.db.query(
      `INSERT INTO ${s}.audit_log (seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash) VALUES ($1, $2, 'mallory', null, 'DELETE /api/v1/engrams/:id', null, 200, '{}', $3, $4)`,
      [Number(last.seq) + 1, new Date().toISOString(), last.hash, 'f'.repeat(64)],
    );
    expect(await verifyAudit(hub.db, inserted.org, key())).toMatchObject({ ok: false, first_bad: { seq: Number(last.seq) + 1 } });

    const renumbered = await orgWithCalls('renumbered', 3);
    await asOwner(hub.db, renumbered.org, `DELETE FROM ${ident(renumbered.org.schema)}.audit_log WHERE seq = 3`);
    await asOwner(hub.db, renumbered.org, `UPDATE ${ident(renumbered.org.schema)}.audit_log SET seq = seq - 1 WHERE seq > 3`);
    expect(await verifyAudit(hub.db, renumbered.org, key())).toMatchObject({ ok: false, first_bad: { seq: 3 } });

    if (kind === 'postgres') {
      const env = { DATABASE_URL: hub.database.url!, SVC_HUB_AUDIT_KEY: key() };
      const bad = await svc(['hub', 'audit', 'verify', '--org', 'edited', '--no-json'], { env });
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/Audit chain of edited BROKEN at row 3: its content does not match its signature/);
      const good = await svc(['hub', 'audit', 'verify', '--org', 'chain', '--json'], { env });
      expect(good.code).toBe(0);
      expect(JSON.parse(good.stdout)).toMatchObject({ ok: true, rows: 8 });
      const none = await svc(['hub', 'audit', 'verify', '--org', 'nobody', '--no-json'], { env });
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/no organization "nobody"/);
    }
  });

  it('never fails a request when the audit write fails, and catches up when it works again', async () => {
    const org = await hub.newOrg('flaky');
    const s = ident(org.org.schema);
    await hub.db.query(`ALTER TABLE ${s}.audit_log RENAME TO audit_log_away`);
    const r = await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Written while audit is down', scope: 'org:flaky' },
    });
    expect(r.status).toBe(201);
    expect((await hub.request('GET', '/me', { token: org.adminKey })).status).toBe(200);
    await new Promise((done) => setTimeout(done, 300));
    await hub.db.query(`ALTER TABLE ${s}.audit_log_away RENAME TO audit_log`);
    expect(await hub.running.hub.audit.drain(20_000)).toBe(true);
    const actions = (await rows(hub.db, org.org)).map((r) => r.action);
    expect(actions.filter((a) => !MARKERS.includes(a))).toEqual(['POST /api/v1/engrams', 'GET /api/v1/me']);
    expect(warnings.join('\n')).toMatch(/audit row of POST \/api\/v1\/engrams could not be written with it/);
    expect((await verifyAudit(hub.db, org.org, key())).ok).toBe(true);
  });

  it("stores any request's row; a row that truly cannot be stored leaves a gap marker and holds back nothing", async () => {
    const org = await hub.newOrg('poison');
    const writer = new AuditWriter(hub.db, key(), { log: () => undefined });
    // What a hostile request can put in a row: NUL, lone surrogates, huge strings, odd numbers.
    writer.record(
      org.org,
      entry('DELETE /api/v1/packs/:name', { resource: 'pack:\u0000', details: { name: 'x\ud800y', big: 'z'.repeat(50_000), n: Infinity } }),
    );
    // A row the database refuses for what it holds (a constraint a DBA added, say). Added once the
    // first row is in: the ALTER and the writer's insert would otherwise deadlock on PostgreSQL.
    expect(await writer.drain(10_000)).toBe(true);
    await asOwner(hub.db, org.org, `ALTER TABLE ${ident(org.org.schema)}.audit_log ADD CONSTRAINT no_poison CHECK (action <> 'poison')`);
    writer.record(org.org, entry('poison'));
    writer.record(org.org, entry('GET /api/v1/me'));
    expect(await writer.drain(10_000)).toBe(true);
    await writer.close();
    const all = await rows(hub.db, org.org);
    // The gap marker follows the rows of the batch the lost row was in.
    expect(all.map((r) => r.action)).toEqual([WRITER_START, 'DELETE /api/v1/packs/:name', 'GET /api/v1/me', GAP_ACTION, WRITER_STOP]);
    expect(all[1]!.resource).toBe('pack:\uFFFD');
    expect(String(all[1]!.details.big).length).toBeLessThan(2100);
    const v = await verifyAudit(hub.db, org.org, key());
    expect(v).toMatchObject({
      ok: true,
      gaps: [{ seq: 4, lost: 1, reason: expect.stringMatching(/poison row could not be stored/) }],
      unfinished: [],
    });
  });

  it('audits the hostile request that once switched auditing off, and keeps writing after it', async () => {
    const org = await hub.newOrg('nul');
    const r = await fetch(`${hub.url}/api/v1/packs/%00`, { method: 'DELETE', headers: { authorization: `Bearer ${org.adminKey}` } });
    expect(r.status).toBe(400);
    expect((await hub.request('GET', '/me', { token: org.adminKey })).status).toBe(200);
    await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: 'Still audited', scope: 'org:nul' } });
    expect(await hub.running.hub.audit.drain(10_000)).toBe(true);
    const all = (await rows(hub.db, org.org)).filter((x) => !MARKERS.includes(x.action));
    expect(all.map((x) => [x.action, x.outcome])).toEqual(
      expect.arrayContaining([
        ['DELETE /api/v1/packs/%00', 400],
        ['GET /api/v1/me', 200],
        ['POST /api/v1/engrams', 201],
      ]),
    );
    expect(all).toHaveLength(3);
    expect(await verifyAudit(hub.db, org.org, key())).toMatchObject({ ok: true, gaps: [] });
  });

  it('keeps its queue bounded, and counts what it had to drop in a gap marker', async () => {
    const org = await hub.newOrg('bounded');
    const s = ident(org.org.schema);
    const writer = new AuditWriter(hub.db, key(), { maxQueue: 5, log: () => undefined });
    await hub.db.query(`ALTER TABLE ${s}.audit_log RENAME TO audit_log_away`);
    for (let i = 0; i < 12; i++) writer.record(org.org, entry(`GET /api/v1/me#${i}`));
    expect(writer.pending).toBe(5);
    await hub.db.query(`ALTER TABLE ${s}.audit_log_away RENAME TO audit_log`);
    expect(await writer.drain(20_000)).toBe(true);
    await writer.close();
    const all = await rows(hub.db, org.org);
    expect(all.map((r) => r.action)).toEqual([WRITER_START, GAP_ACTION, ...[0, 1, 2, 3, 4].map((i) => `GET /api/v1/me#${i}`), WRITER_STOP]);
    expect((await verifyAudit(hub.db, org.org, key())).gaps).toEqual([
      { seq: 2, lost: 7, reason: expect.stringMatching(/queue was full \(5 rows\)/) },
    ]);
  });

  it('closes within its drain window when the database will not take its rows, and retries nothing after', async () => {
    const org = await hub.newOrg('stuck');
    const s = ident(org.org.schema);
    const writer = new AuditWriter(hub.db, key(), { log: () => undefined });
    await hub.db.query(`ALTER TABLE ${s}.audit_log RENAME TO audit_log_away`);
    writer.record(org.org, entry('GET /api/v1/me'));
    const t0 = Date.now();
    expect(await writer.close(700)).toEqual({ drained: false, unwritten: 1 });
    expect(Date.now() - t0).toBeLessThan(2000);
    await hub.db.query(`ALTER TABLE ${s}.audit_log_away RENAME TO audit_log`);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await rows(hub.db, org.org)).toEqual([]);
  });

  it('signs checkpoints that catch a cut tail and a re-signed chain, served to admins and written by the CLI', async () => {
    const org = await orgWithCalls('pinned', 3);
    const editor = await org.user('ed', 'editor');
    expect((await hub.request('GET', '/admin/audit/checkpoint', { token: editor.key })).status).toBe(403);
    const served = await hub.request('GET', '/admin/audit/checkpoint', { token: org.adminKey, template: '/admin/audit/checkpoint' });
    expect(served.status).toBe(200);
    const c = served.body as Checkpoint;
    expect(c).toMatchObject({ org: 'pinned', org_id: org.org.id, key_id: hub.running.hub.config.checkpointKey.id });
    expect(badSignature(c)).toBeNull();
    expect(badSignature({ ...c, seq: c.seq + 1 })).toMatch(/does not verify/);
    const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoints-'));
    writeFileSync(join(dir, 'pinned-served.json'), JSON.stringify(c));
    const trusted = [hub.running.hub.config.checkpointKey.id];
    const check = async () => {
      const chain = await verifyAudit(hub.db, org.org, key());
      return { chain, report: await checkAgainstCheckpoints(hub.db, org.org, chain, readCheckpoints(dir, 'pinned').checkpoints, trusted) };
    };
    expect((await check()).report).toEqual({ checked: 1, latest: { seq: c.seq, at: c.at }, problems: [] });

    // Re-signed: whoever holds the key edits row 2 and signs every row again. The chain verifies;
    // the checkpoint does not.
    await hub.running.hub.audit.drain();
    const s = ident(org.org.schema);
    const all = (
      await hub.db.query<AuditEntry & { seq: number }>(
        `SELECT seq, at, actor, token_id, action, resource, outcome, details FROM ${s}.audit_log ORDER BY seq`,
      )
    ).rows;
    let prev = '0'.repeat(64);
    for (const r of all) {
      const e: AuditEntry = {
        at: r.at,
        actor: Number(r.seq) === 2 ? 'mallory' : r.actor,
        token_id: r.token_id,
        action: r.action,
        resource: r.resource,
        outcome: Number(r.outcome),
        details: r.details,
      };
      const hash = rowHash(key(), prev, Number(r.seq), e);
      await asOwner(hub.db, org.org, `UPDATE ${s}.audit_log SET actor = $1, prev_hash = $2, hash = $3 WHERE seq = $4`, [
        e.actor,
        prev,
        hash,
        r.seq,
      ]);
      prev = hash;
    }
    const resigned = await check();
    expect(resigned.chain.ok).toBe(true);
    expect(resigned.report.problems).toEqual([
      {
        file: 'pinned-served.json',
        problem: expect.stringMatching(/row \d+ is not the row the checkpoint of .* signed: the chain was edited and re-signed/),
      },
    ]);

    // A cut tail: every row after the first removed.
    await asOwner(hub.db, org.org, `DELETE FROM ${s}.audit_log WHERE seq > 1`);
    const cut = await check();
    expect(cut.chain.ok).toBe(true);
    expect(cut.report.problems[0]!.problem).toMatch(
      new RegExp(`rows were removed: the checkpoint of .* saw ${c.seq} rows, the log now ends at row 1`),
    );

    if (kind === 'postgres') {
      const env = { DATABASE_URL: hub.database.url!, SVC_HUB_AUDIT_KEY: key() };
      const other = await orgWithCalls('cli-pinned', 2);
      const out = mkdtempSync(join(tmpdir(), 'svc-checkpoints-cli-'));
      const made = await svc(['hub', 'audit', 'checkpoint', '--org', 'cli-pinned', '--out', out, '--json'], { env });
      expect(made.code, made.stderr).toBe(0);
      expect(readdirSync(out)).toEqual([`cli-pinned-${String(JSON.parse(made.stdout).checkpoint.seq).padStart(12, '0')}.json`]);
      const fine = await svc(['hub', 'audit', 'verify', '--org', 'cli-pinned', '--checkpoints', out, '--no-json'], { env });
      expect(fine.code, fine.stdout + fine.stderr).toBe(0);
      expect(fine.stdout).toMatch(/1 checkpoint\(s\); the newest that holds is row \d+/);
      await asOwner(hub.db, other.org, `DELETE FROM ${ident(other.org.schema)}.audit_log WHERE seq > 2`);
      const broken = await svc(['hub', 'audit', 'verify', '--org', 'cli-pinned', '--checkpoints', out, '--json'], { env });
      expect(broken.code).toBe(1);
      expect(JSON.parse(broken.stdout)).toMatchObject({
        ok: false,
        checkpoints: { problems: [{ problem: expect.stringMatching(/rows were removed/) }] },
      });
      // A forged file (signed by another key) is not trusted.
      const forged = JSON.parse(readFileSync(join(out, readdirSync(out)[0]!), 'utf8'));
      writeFileSync(join(out, 'forged.json'), JSON.stringify({ ...forged, key_id: 'ffffffffffffffff' }));
      expect(
        JSON.parse((await svc(['hub', 'audit', 'verify', '--org', 'cli-pinned', '--checkpoints', out, '--json'], { env })).stdout)
          .checkpoints.problems,
      ).toContainEqual({
        file: 'forged.json',
        problem: expect.stringMatching(/key id does not match/),
      });
    }
  });

  it('warns at start-up when the audit keys live in the database', () => {
    expect(warnings.join('\n')).toMatch(/the audit HMAC key is kept in the database \(set SVC_HUB_AUDIT_KEY\)/);
    expect(warnings.join('\n')).toMatch(/checkpoint signing key is kept in the database/);
  });
});

describe.each(DATABASES)('audit checkpoints at an interval (%s)', (kind) => {
  it('writes one signed checkpoint per organization whose chain grew', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoint-dir-'));
    const hub = await startTestHub(kind, { checkpointDir: dir, checkpointIntervalMs: 200, auditKey: 'k'.repeat(32) });
    try {
      const org = await hub.newOrg('timed');
      await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: 'Checkpointed', scope: 'org:timed' } });
      await new Promise((r) => setTimeout(r, 700));
      const files = readdirSync(dir).filter((f) => f.startsWith('timed-'));
      expect(files.length).toBeGreaterThanOrEqual(1);
      const c = JSON.parse(readFileSync(join(dir, files.at(-1)!), 'utf8')) as Checkpoint;
      expect(badSignature(c)).toBeNull();
      expect(c.seq).toBe(1);
    } finally {
      await hub.close();
    }
  });
});

// Issue 25, item 15: a tail cut after the newest checkpoint needed no key and went unseen. Now a
// hub with a checkpoint folder checkpoints every N rows (or T seconds), refuses to start on a
// chain shorter than its newest checkpoint, and `audit verify --checkpoints` calls such a chain cut.
describe.each(DATABASES)('audit checkpoints by rows, and a cut chain at start (%s)', (kind) => {
  it('checkpoints after N rows without waiting for the interval', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoint-rows-'));
    const hub = await startTestHub(kind, {
      checkpointDir: dir,
      checkpointIntervalMs: 3_600_000,
      checkpointEveryRows: 5,
      auditKey: 'k'.repeat(32),
    });
    try {
      const org = await hub.newOrg('rows');
      for (let i = 0; i < 6; i++)
        await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: `Row-counted rule ${i}`, scope: 'org:rows' } });
      const pinned = () => readCheckpoints(dir, 'rows').checkpoints.map((c) => c.checkpoint.seq);
      for (let i = 0; i < 100 && !pinned().some((seq) => seq >= 5); i++) await new Promise((r) => setTimeout(r, 100));
      expect(pinned().some((seq) => seq >= 5)).toBe(true);
    } finally {
      await hub.close();
    }
  });

  it('will not start on a chain cut below its newest checkpoint, and verify calls it cut', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-checkpoint-cut-'));
    const auditKey = 'c'.repeat(32);
    const hub = await startTestHub(kind, { checkpointDir: dir, checkpointEveryRows: 1000, auditKey });
    const org = await hub.newOrg('cutme');
    for (let i = 0; i < 4; i++)
      await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: `Pinned rule ${i}`, scope: 'org:cutme' } });
    // A clean stop checkpoints what grew: the whole chain is pinned.
    await hub.running.close();
    const newest = readCheckpoints(dir, 'cutme').checkpoints.at(-1)!;
    expect(newest.checkpoint.seq).toBeGreaterThanOrEqual(4);
    try {
      // Unchanged, it starts again.
      const again = await startHub({ db: hub.db, checkpointDir: dir, auditKey, log: () => undefined });
      await again.close();
      const head = readCheckpoints(dir, 'cutme').checkpoints.at(-1)!.checkpoint.seq;
      await asOwner(hub.db, org.org, `DELETE FROM ${ident(org.org.schema)}.audit_log WHERE seq > 2`);
      const refused = await startHub({ db: hub.db, checkpointDir: dir, auditKey, log: () => undefined }).catch((e: Error) => e);
      expect((refused as Error).message).toBe(
        `svc hub will not append to a cut audit chain: the audit chain of cutme ends at row 2, but checkpoint cutme-${String(head).padStart(12, '0')}.json (${readCheckpoints(dir, 'cutme').checkpoints.at(-1)!.checkpoint.at}) signed row ${head}: its tail was cut; restore the rows, or move the checkpoint out of ${dir} once you have looked into it`,
      );
      const chain = await verifyAudit(hub.db, org.org, auditKey);
      expect(chain.ok).toBe(true);
      const report = await checkAgainstCheckpoints(hub.db, org.org, chain, readCheckpoints(dir, 'cutme').checkpoints, [
        hub.running.hub.config.checkpointKey.id,
      ]);
      expect(report.cut).toMatchObject({ seq: head, head: 2 });
      if (kind === 'postgres') {
        const env = { DATABASE_URL: hub.database.url!, SVC_HUB_AUDIT_KEY: auditKey };
        const verify = await svc(['hub', 'audit', 'verify', '--org', 'cutme', '--checkpoints', dir, '--no-json'], { env });
        expect(verify.code).toBe(1);
        expect(verify.stdout.split('\n')[0]).toMatch(
          new RegExp(`^Audit chain of cutme CUT: it ends at row 2, but checkpoint cutme-0+${head}\\.json \\(.*\\) signed row ${head}$`),
        );
        const serve = await svc(['hub', '--port', '0', '--no-json'], { env: { ...env, SVC_HUB_CHECKPOINT_DIR: dir } });
        expect(serve.code).toBe(1);
        expect(serve.stderr).toMatch(
          /^svc: svc hub will not append to a cut audit chain: the audit chain of cutme ends at row 2, but checkpoint .* signed row \d+: its tail was cut; restore the rows, or move the checkpoint out of .* once you have looked into it\n$/m,
        );
        expect(serve.stderr).not.toMatch(/internal error|    at /);
      }
    } finally {
      await hub.database.close();
    }
  }, 60_000);
});
