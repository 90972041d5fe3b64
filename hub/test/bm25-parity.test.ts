import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { systemContext } from '../../engine/ops/context.js';
import { syntheticEngrams, syntheticQueries } from '../../tui/bench/synthetic-engrams.js';
import { createOrg } from '../data/organizations.js';
import { openOrgBackend, type PgBackend } from '../data/pg-backend.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// The hub ranks exactly as the local index does: the same engrams learned into a local store and
// into an organization give the same BM25 order and the same scores, query after query.

const EXTRA = [
  { statement: 'Ne jamais déployer le vendredi après-midi', domain: 'deploy', tags: ['français'] },
  { statement: 'Über-Regeln: Prüfe die Migrationen vor dem Zusammenführen', domain: 'db' },
  { statement: 'Use the e-mail queue for notifications, never send inline', tags: ['email', 'queue'] },
  { statement: 'Κανόνας: τρέξε τα τεστ πριν το merge', domain: 'ci' },
  { statement: 'COVID-19 rota: on-call swaps go through the bot', rationale: 'fairness' },
];

describe.each(DATABASES)('BM25 parity with the local index (%s)', (kind) => {
  let t: TestDatabase;
  let local: LocalStore;
  let hub: PgBackend;

  beforeAll(async () => {
    t = await freshDatabase(kind);
    const org = await createOrg(t.db, `parity-${kind}`);
    hub = openOrgBackend(t.db, org);
    local = await LocalStore.open(join(mkdtempSync(join(tmpdir(), 'svc-parity-')), 'store'));
    const inputs = [...syntheticEngrams(400, 5), ...EXTRA];
    for (const input of inputs) {
      await learn(local, input, systemContext);
      await learn(hub, input, systemContext);
    }
    // Retire a few on both sides: they stay in N and document frequency, never in results.
    for (const backend of [local, hub]) {
      const some = await backend.list({ limit: 400 });
      await backend.write(async (tx) => {
        for (const e of some.filter((_, i) => i % 37 === 0)) await tx.put({ ...e, status: 'retired' });
      });
    }
  }, 120_000);

  afterAll(async () => {
    local?.close();
    await t?.close();
  });

  it('gives the same order and scores for 150 queries', async () => {
    const queries = [...syntheticQueries(150, 9), 'déployer vendredi', 'migrationen prüfe', 'email queue', 'covid rota', 'τεστ merge'];
    let compared = 0;
    for (const q of queries) {
      const a = await local.searchText(q, 20);
      const b = await hub.searchText(q, 20);
      expect(b.map((h) => h.engram.statement), q).toEqual(a.map((h) => h.engram.statement));
      for (let i = 0; i < a.length; i++) expect(b[i]!.score, `${q} #${i}`).toBeCloseTo(a[i]!.score, 6);
      compared += a.length;
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('agrees in "all" mode too', async () => {
    for (const q of syntheticQueries(40, 3)) {
      const a = await local.searchText(q, 10, 'all');
      const b = await hub.searchText(q, 10, 'all');
      expect(b.map((h) => h.engram.id.slice(-3) && h.engram.statement), q).toEqual(a.map((h) => h.engram.statement));
    }
  });
});
