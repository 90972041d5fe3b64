import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { systemContext } from '../../engine/ops/context.js';
import { syntheticEngrams, syntheticQueries, variedQueries } from '../../scripts/support/synthetic-engrams.js';
import { createOrg } from '../data/organizations.js';
import { openOrgBackend, type PgBackend } from '../org-backend/pg-backend.js';
import { Policy } from '../access/policy.js';
import { enablePostingsCache } from '../data/postings-cache.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// The hub ranks exactly as the local index does: the same engrams learned into a local store and
// into an organization give the same BM25 order and the same scores, query after query, whether
// the hub reads the postings from the database or holds them in memory (postings-cache.ts).

const POSTINGS = [
  ['from the database', 0],
  ['held in memory', 1_000_000],
] as const;

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
    hub = openOrgBackend(t.db, org, null);
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

  it.each(POSTINGS)('gives the same order and scores for 215 queries, postings %s', async (_, cache) => {
    enablePostingsCache(t.db, cache);
    const queries = [
      ...syntheticQueries(150, 9),
      ...variedQueries(60, 2),
      'déployer vendredi',
      'migrationen prüfe',
      'email queue',
      'covid rota',
      'τεστ merge',
    ];
    let compared = 0;
    for (const q of queries) {
      const a = await local.searchText(q, 20);
      const b = await hub.searchText(q, 20);
      expect(
        b.map((h) => h.engram.statement),
        q,
      ).toEqual(a.map((h) => h.engram.statement));
      for (let i = 0; i < a.length; i++) expect(b[i]!.score, `${q} #${i}`).toBeCloseTo(a[i]!.score, 6);
      compared += a.length;
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it.each(POSTINGS)('agrees in "all" mode too, postings %s', async (_, cache) => {
    enablePostingsCache(t.db, cache);
    for (const q of syntheticQueries(40, 3)) {
      const a = await local.searchText(q, 10, 'all');
      const b = await hub.searchText(q, 10, 'all');
      expect(
        b.map((h) => h.engram.id.slice(-3) && h.engram.statement),
        q,
      ).toEqual(a.map((h) => h.engram.statement));
    }
  });

  it.each(POSTINGS)(
    'ranks a caller as a local index holding only what that caller may read, postings %s',
    async (_, cache) => {
      const t2 = await freshDatabase(kind);
      enablePostingsCache(t2.db, cache);
      try {
        const org = await createOrg(t2.db, `scoped-${kind}`);
        const all = openOrgBackend(t2.db, org, null);
        const visible = ['group:eng', 'user:erin', 'global'];
        const caller = openOrgBackend(t2.db, org, new Policy({ userName: 'reader', role: 'viewer', readable: visible, writable: [] }));
        const mine = await LocalStore.open(join(mkdtempSync(join(tmpdir(), 'svc-parity-scoped-')), 'store'));
        try {
          const inputs = syntheticEngrams(300, 11);
          for (const [i, input] of inputs.entries()) {
            const scope = ['group:eng', 'user:erin', 'global', 'user:sam', 'group:sales'][i % 5]!;
            await learn(all, { ...input, scope }, systemContext);
            if (visible.includes(scope)) await learn(mine, { ...input, scope }, systemContext);
          }
          let compared = 0;
          for (const q of syntheticQueries(80, 4)) {
            const a = await mine.searchText(q, 15);
            const b = await caller.searchText(q, 15);
            expect(
              b.map((h) => h.engram.statement),
              q,
            ).toEqual(a.map((h) => h.engram.statement));
            for (let i = 0; i < a.length; i++) expect(b[i]!.score, `${q} #${i}`).toBeCloseTo(a[i]!.score, 6);
            compared += a.length;
          }
          expect(compared).toBeGreaterThan(300);
          // What others write where the caller cannot read moves none of the caller's scores.
          const probe = syntheticQueries(1, 99)[0]!;
          const before = (await caller.searchText(probe, 10)).map((h) => h.score);
          for (let i = 0; i < 20; i++) await learn(all, { statement: `${probe} hidden note ${i}`, scope: 'user:sam' }, systemContext);
          expect((await caller.searchText(probe, 10)).map((h) => h.score)).toEqual(before);
        } finally {
          mine.close();
        }
      } finally {
        await t2.close();
      }
    },
    120_000,
  );
});
