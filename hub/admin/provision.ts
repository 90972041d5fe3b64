import { conflict, invalid } from '../../engine/errors.js';
import type { Database, Org, Queryable, Role } from '../contracts.js';
import { createOrg, getOrg } from '../data/organizations.js';
import { ident } from '../data/sql.js';
import {
  addMember,
  checkUserName,
  createInvitation,
  createUser,
  freeUserName,
  getUser,
  hasHadAccess,
  insertApiKey,
  issueApiKey,
  type Invitation,
  type User,
} from '../access/identity.js';
import { checkAddress } from '../mail/mailer.js';
import { createLoginLink, firstAdmin, type LoginLink } from '../login/login-links.js';
import { authChanged } from '../access/epoch.js';
import { lockPeople } from '../access/end-access.js';
import { appendAudit, type AuditEntry } from '../audit/audit-log.js';
import { RequestDatabase } from '../data/request-database.js';

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
      hubRow('cli.org.admin.add', `user:${id}`, before ? 200 : 201, {
        command: 'svc hub org admin add',
        user: name,
        created: !before,
        previous,
        ...(key ? { api_key_id: key.info.id } : {}),
      }),
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

export interface InviteInput {
  /** An existing person, by id or name. */
  user?: string;
  /** Or an address: the person holding it, or a new person created with it. */
  email?: string;
  name?: string;
  role?: Role;
  /** A group (by id or path) the person joins. */
  group?: string;
  /** How long the invitation works (default 72 hours). */
  hours?: number;
}

export interface Invited {
  user: User;
  created: boolean;
  token: string;
  invitation: Invitation;
  group: string | null;
}

/**
 * An invitation for a person's first sign-in and key (svc hub invite, POST /admin/invitations,
 * the people page's Invite form): the person named by id or name, or by e-mail address (created
 * when nobody holds it, named after the address unless a name is given), optionally put in a
 * group. One who already had access is refused (createInvitation's rule) before anything changes.
 */
export async function invitePerson(db: Database, org: Org, input: InviteInput, by: string): Promise<Invited> {
  if (!input.user && !input.email) throw invalid('name the person: user (id or name) or email');
  const s = ident(org.schema);
  let user: User | null = null;
  if (input.user) {
    user = await getUser(db, org, input.user);
    if (!user) throw invalid(`user_id: no user ${input.user} in this organization`);
  } else {
    const email = checkAddress(input.email!, 'email');
    const held = (
      await db.query<{ id: string }>(`SELECT id FROM ${s}.users WHERE lower(email) = lower($1) AND deleted_at IS NULL LIMIT 1`, [email])
    ).rows[0];
    if (held) user = await getUser(db, org, held.id);
    if (user && input.name && input.name !== user.name) throw conflict(`${email} belongs to ${user.name} already, not ${input.name}`);
  }
  let created = false;
  let made: { token: string; invitation: Invitation };
  if (user) {
    made = await createInvitation(db, org, user.id, by, input.hours);
  } else {
    const name = input.name ?? (await freeUserName(db, org, input.email!.slice(0, input.email!.lastIndexOf('@'))));
    if (input.group) await groupId(db, org, input.group);
    user = await createUser(db, org, { name, email: input.email!, role: input.role ?? 'editor' });
    created = true;
    made = await createInvitation(db, org, user.id, by, input.hours);
  }
  if (input.group) await addMember(db, org, await groupId(db, org, input.group), user.id, false);
  return { user, created, ...made, group: input.group ?? null };
}

async function groupId(db: Queryable, org: Org, idOrPath: string): Promise<string> {
  const g = (await db.query<{ id: string }>(`SELECT id FROM ${ident(org.schema)}.groups WHERE id::text = $1 OR path = $1`, [idOrPath]))
    .rows[0];
  if (!g) throw invalid(`group: no group ${idOrPath} in ${org.slug}; create it first (the Groups page, or POST /api/v1/admin/groups)`);
  return g.id;
}

/** A sign-in link minted on the hub's machine (the operator holds the database), audited as the hub's own act. */
export async function mintLoginLinkLocally(
  db: Database,
  slug: string,
  user: string | undefined,
  auditKey: string,
): Promise<{ org: Org; link: LoginLink }> {
  const org = await getOrg(db, slug);
  const link = await db.transaction(async (q) => {
    const made = await createLoginLink(q, org, user ?? (await firstAdmin(q, org)), 'svc-hub');
    await appendAudit(q, org, auditKey, [
      hubRow('cli.login_link.create', `user:${made.user.id}`, 201, {
        command: 'svc hub login-link',
        user: made.user.name,
        link_id: made.id,
        expires_at: made.expiresAt,
      }),
    ]);
    return made;
  });
  return { org, link };
}

/** An invitation made on the hub's machine, audited as the hub's own act: the person, the invitation and the row commit together. */
export async function invitePersonLocally(
  db: Database,
  slug: string,
  input: InviteInput,
  auditKey: string,
): Promise<{ org: Org } & Invited> {
  const org = await getOrg(db, slug);
  const rdb = new RequestDatabase(db);
  try {
    const r = await invitePerson(rdb, org, input, 'svc-hub');
    await appendAudit(rdb, org, auditKey, [
      hubRow('cli.invite', `invitation:${r.invitation.id}`, 201, {
        command: 'svc hub invite',
        user: r.user.name,
        created: r.created,
        group: r.group,
        expires_at: r.invitation.expires_at,
      }),
    ]);
    await rdb.commit();
    return { org, ...r };
  } catch (err) {
    await rdb.rollback();
    throw err;
  }
}

/** An audit row of an act of the hub's operator (a `svc hub` command on its machine). */
function hubRow(action: string, resource: string, outcome: number, details: Record<string, unknown>): AuditEntry {
  return { at: new Date().toISOString(), actor: 'svc-hub', token_id: null, action, resource, outcome, details };
}
