import { conflict } from '../../engine/errors.js';
import type { Database, Org } from '../contracts.js';
import { createOrg, getOrg } from '../data/organizations.js';
import { ident } from '../data/migrate.js';
import { checkUserName, createInvitation, createUser, hasHadAccess, insertApiKey, issueApiKey } from '../access/identity.js';
import { authChanged } from '../access/epoch.js';
import { lockPeople } from '../access/end-access.js';
import { appendAudit } from '../audit/audit-log.js';

/** A new organization with its first admin and that admin's API key (shown once). */
export async function createOrgWithAdmin(
  db: Database,
  slug: string,
  adminName: string,
): Promise<{ org: Org; userId: string; apiKey: string; keyId: string }> {
  const org = await createOrg(db, slug);
  const user = await createUser(db, org, { name: adminName, role: 'admin' });
  const { key, info } = await issueApiKey(db, org, user.id, `${adminName} (created with the organization)`);
  return { org, userId: user.id, apiKey: key, keyId: info.id };
}

export interface AdminAdded {
  org: Org;
  user: { id: string; name: string };
  created: boolean;
  previous: { role: string; active: boolean } | null;
  /** An invitation for the person's first key, when they never had a credential (shown once). */
  invitation: { id: string; token: string; expires_at: string } | null;
  /** A new API key, when they had credentials but hold no live key (shown once): the way back in. */
  api_key: { id: string; key: string } | null;
}

/**
 * The operator's recovery from the machine the hub runs on (svc hub org admin add): makes the
 * person named an active admin of the organization, creating them when there is none, with an
 * audit row by the hub itself. A person who never had a credential gets an invitation to redeem;
 * one who had some but holds no live key gets a new key (the operator holds the database anyway,
 * as when creating the organization).
 */
export async function addOrgAdmin(db: Database, slug: string, name: string, auditKey: string): Promise<AdminAdded> {
  checkUserName(name);
  const org = await getOrg(db, slug);
  const s = ident(org.schema);
  const done = await db.transaction(async (q) => {
    await lockPeople(q, org);
    const before = (
      await q.query<{ id: string; role: string; active: boolean; kind: string; deleted: boolean }>(
        `SELECT id, role, active, kind, deleted_at IS NOT NULL AS deleted FROM ${s}.users WHERE name = $1`,
        [name],
      )
    ).rows[0];
    if (before?.deleted) throw conflict(`${name} was deleted from ${slug}; a deleted user stays deleted: pick another name`);
    if (before && before.kind !== 'person') throw conflict(`${name} is a service account of ${slug}, not a person`);
    const id = before ? before.id : (await createUser(q, org, { name, role: 'admin' })).id;
    if (before) await q.query(`UPDATE ${s}.users SET role = 'admin', active = true WHERE id = $1`, [id]);
    await authChanged(q, org);
    const previous = before ? { role: before.role, active: before.active } : null;
    const hadAccess = await hasHadAccess(q, org, id);
    const live = (await q.query(`SELECT 1 FROM ${s}.api_keys WHERE user_id = $1 AND revoked_at IS NULL LIMIT 1`, [id])).rows.length > 0;
    const key = hadAccess && !live ? await insertApiKey(q, org, id, 'recovery (svc hub org admin add)') : null;
    await appendAudit(q, org, auditKey, [
      {
        at: new Date().toISOString(),
        actor: 'svc-hub',
        token_id: null,
        action: 'cli.org.admin.add',
        resource: `user:${id}`,
        outcome: before ? 200 : 201,
        details: { command: 'svc hub org admin add', user: name, created: !before, previous, ...(key ? { api_key_id: key.info.id } : {}) },
      },
    ]);
    return { id, previous, hadAccess, key };
  });
  let invitation: AdminAdded['invitation'] = null;
  if (!done.hadAccess) {
    const made = await createInvitation(db, org, done.id, 'svc-hub');
    invitation = { id: made.invitation.id, token: made.token, expires_at: made.invitation.expires_at };
  }
  const api_key = done.key ? { id: done.key.info.id, key: done.key.key } : null;
  return { org, user: { id: done.id, name }, created: done.previous === null, previous: done.previous, invitation, api_key };
}
