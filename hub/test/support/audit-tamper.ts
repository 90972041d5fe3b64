import type { Database, Org } from '../../contracts.js';
import { ident } from '../../data/sql.js';

/** What the audit table's owner (or a superuser) can still do: switch the append-only triggers off and change rows. */
export async function asOwner(db: Database, org: Org, sql: string, params: unknown[] = []): Promise<void> {
  const t = `${ident(org.schema)}.audit_log`;
  await db.transaction(async (q) => {
    await q.query(`ALTER TABLE ${t} DISABLE TRIGGER USER`);
    await q.query(sql, params);
    await q.query(`ALTER TABLE ${t} ENABLE TRIGGER USER`);
  });
}
