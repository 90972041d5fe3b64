import type { Org, Queryable } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/sql.js';

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
