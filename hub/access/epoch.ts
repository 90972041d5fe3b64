import type { Database, Org, Queryable } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/sql.js';
import { FreshRead } from '../data/fresh-read.js';

// The organization's authorization epoch (migration control/005): bump it in the transaction of
// any change to identities, keys, roles, memberships, groups or installed packs.

export async function authChanged(q: Queryable, org: Pick<Org, 'id'>): Promise<void> {
  await q.query(
    `INSERT INTO ${CONTROL_SCHEMA}.org_epochs (org_id, epoch) VALUES ($1, 1)
     ON CONFLICT (org_id) DO UPDATE SET epoch = ${CONTROL_SCHEMA}.org_epochs.epoch + 1`,
    [org.id],
  );
}

export async function authEpoch(q: Queryable, org: Pick<Org, 'id'>): Promise<number> {
  const r = await q.query<{ epoch: number }>(`SELECT epoch FROM ${CONTROL_SCHEMA}.org_epochs WHERE org_id = $1`, [org.id]);
  return Number(r.rows[0]?.epoch ?? 0);
}

const fresh = new WeakMap<Database, FreshRead<number>>();

/**
 * The epoch as of this call, for a caller that acts on what was authorized before (a request's
 * cached principal, a webhook creator's policy): the calls that come together share one read
 * (fresh-read.ts), never one sent before they were made.
 */
export function currentEpoch(db: Database, org: Pick<Org, 'id'>): Promise<number> {
  let reads = fresh.get(db);
  if (!reads) fresh.set(db, (reads = new FreshRead((id) => authEpoch(db, { id }))));
  return reads.get(org.id);
}
