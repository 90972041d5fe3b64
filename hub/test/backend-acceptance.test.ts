import { afterAll, describe, expect } from 'vitest';
import { runBackendContract } from '../../engine/test/support/backend-contract.js';
import { createOrg } from '../data/organizations.js';
import { openOrgBackend, PgBackend } from '../org-backend/pg-backend.js';
import { DATABASES, freshDatabase, type DatabaseKind, type TestDatabase } from './support/databases.js';

// The engine's contract (engine/test/support/backend-contract.ts) on an organization's PostgreSQL
// schema, on PGlite and on the PostgreSQL server when it is reachable (support/databases.ts).
// The local store, the multi-store and the in-memory reference backend run the same suite in
// engine/test/backend-contract.test.ts. One database per kind; each case gets a fresh
// organization in it (its own schema), which is much cheaper than a database per case.

for (const kind of DATABASES) {
  describe(`on ${kind}`, () => {
    let database: Promise<TestDatabase> | undefined;
    let orgs = 0;
    afterAll(async () => (await database)?.close());

    runBackendContract(
      `the hub's backend on ${kind}`,
      async () => {
        database ??= freshDatabase(kind);
        const t = await database;
        const backend = openOrgBackend(t.db, await createOrg(t.db, `accept-${++orgs}`), null);
        return { backend, teardown: async () => {} };
      },
      { beforeEmbedding: (backend) => reportVectorPath(kind, backend), timeout: 60_000 },
    );
  });
}

/** PGlite has pgvector; this machine's PostgreSQL server does not (either path must be right). */
async function reportVectorPath(kind: DatabaseKind, backend: unknown): Promise<void> {
  expect(backend).toBeInstanceOf(PgBackend);
  const path = await (backend as PgBackend).vectorPath();
  if (kind === 'pglite') expect(path).toBe('pgvector');
  console.log(`hub backend on ${kind}: vectors through ${path}`);
}
