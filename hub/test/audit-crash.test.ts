import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../audit/audit-log.js';
import { createOrgWithAdmin } from '../admin/provision.js';
import { ident } from '../data/sql.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';
import { startHubProcess } from './support/hub-process.js';

// The audit log when the hub process dies: a killed hub has an audit row for every write it
// acknowledged; a stopped hub ends inside its drain window even when the database will not take
// its queued rows.

const AUDIT_KEY = 'crash-test-audit-key-0123456789abcdef';

describe.runIf(DATABASES.includes('postgres'))('the audit log across a crash (postgres)', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase('postgres');
  }, 60_000);
  afterAll(async () => t?.close());

  const env = () => ({
    DATABASE_URL: t.url!,
    SVC_HUB_AUDIT_KEY: AUDIT_KEY,
    SVC_HUB_RATE_LIMIT: '100000',
    SVC_HUB_WRITE_RATE_LIMIT: '100000',
  });

  it('kill -9 during a burst of writes: every acknowledged write has its audit row', async () => {
    const made = await createOrgWithAdmin(t.db, 'burst', 'admin');
    const hub = await startHubProcess(env());
    const acknowledged: string[] = [];
    let sent = 0;
    let stop = false;
    const worker = async (w: number) => {
      while (!stop) {
        const i = sent++;
        try {
          const r = await fetch(`${hub.url}/api/v1/${i % 4 === 3 ? 'me' : 'engrams'}`, {
            method: i % 4 === 3 ? 'GET' : 'POST',
            headers: { authorization: `Bearer ${made.apiKey}`, 'content-type': 'application/json' },
            body: i % 4 === 3 ? undefined : JSON.stringify({ statement: `Burst rule ${i} from worker ${w}`, scope: 'org:burst' }),
          });
          const body = (await r.json()) as { id?: string };
          if (r.status === 201) acknowledged.push(body.id!);
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = Array.from({ length: 16 }, (_, w) => worker(w));
    while (acknowledged.length < 150) await new Promise((r) => setTimeout(r, 20));
    hub.child.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    expect(acknowledged.length).toBeGreaterThanOrEqual(150);
    const s = ident(made.org.schema);
    const audited = new Set(
      (
        await t.db.query<{ resource: string }>(
          `SELECT resource FROM ${s}.audit_log WHERE action = 'POST /api/v1/engrams' AND outcome = 201`,
        )
      ).rows.map((r) => r.resource),
    );
    expect(acknowledged.filter((id) => !audited.has(`engram:${id}`))).toEqual([]);
    const stored = Number((await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.engrams`)).rows[0]!.n);
    // No write committed without its row either.
    expect(audited.size).toBe(stored);
    const v = await verifyAudit(t.db, made.org, AUDIT_KEY);
    expect(v.ok).toBe(true);
    // The killed process's queue had no stop marker: verify says a crash may have lost reads.
    expect(v.unfinished.length).toBe(1);
  }, 120_000);

  it('SIGTERM ends the process within its drain window when the audit rows cannot be written', async () => {
    const made = await createOrgWithAdmin(t.db, 'stuck', 'admin');
    const hub = await startHubProcess({ ...env(), SVC_HUB_DRAIN_SECONDS: '2' });
    let stderr = '';
    hub.child.stderr!.on('data', (d) => (stderr += d));
    const s = ident(made.org.schema);
    await t.db.query(`ALTER TABLE ${s}.audit_log RENAME TO audit_log_away`);
    try {
      expect((await fetch(`${hub.url}/api/v1/me`, { headers: { authorization: `Bearer ${made.apiKey}` } })).status).toBe(200);
      const t0 = Date.now();
      expect(await hub.stop()).toBe(0);
      expect(Date.now() - t0).toBeLessThan(6000);
      expect(stderr).toMatch(/audit writer closed with 1 rows unwritten/);
    } finally {
      await t.db.query(`ALTER TABLE ${s}.audit_log_away RENAME TO audit_log`);
    }
  }, 60_000);
});
