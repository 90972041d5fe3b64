import { randomUUID } from 'node:crypto';
import type { Org, Queryable, Role } from '../contracts.js';
import { ident } from '../data/sql.js';
import { authChanged } from '../access/epoch.js';
import { freeUserName, LINKABLE_BY_EMAIL_SQL } from '../access/identity.js';
import type { ProviderWithSecret } from './identity-providers.js';
import type { ExternalIdentity } from './provider-client.js';

// Which user of the organization a provider's account is. In order: the account linked at an
// earlier sign-in; else the person whose e-mail is one of the account's verified addresses (then
// linked); else, when the provider may create users, a new person named after the address.
// Only verified addresses count, and when the provider lists allowed domains, only addresses in
// them: an unverified address claiming an allowed domain signs nobody in. Linking by address
// needs exactly one person with it (two: an admin decides), and a person whose address may be
// linked (mayLinkByEmail in access/identity.ts: not one a SCIM client changed).

export class SignInRefused extends Error {
  override name = 'SignInRefused';
}

export interface SignedIn {
  userId: string;
  userName: string;
  created: boolean;
}

const domainOf = (email: string): string => email.slice(email.lastIndexOf('@') + 1);

export async function signInUser(q: Queryable, org: Org, p: ProviderWithSecret, who: ExternalIdentity): Promise<SignedIn> {
  const s = ident(org.schema);
  const emails = p.allowed_domains.length ? who.emails.filter((e) => p.allowed_domains.includes(domainOf(e))) : who.emails;
  if (emails.length === 0) {
    throw new SignInRefused(
      p.allowed_domains.length
        ? `this ${p.kind} account has no verified e-mail address in ${p.allowed_domains.join(', ')}`
        : `this ${p.kind} account has no verified e-mail address`,
    );
  }
  const linked = (
    await q.query<{ id: string; name: string; active: boolean }>(
      `SELECT u.id, u.name, u.active FROM ${s}.external_identities x JOIN ${s}.users u ON u.id = x.user_id WHERE x.provider_id = $1 AND x.subject = $2`,
      [p.id, who.subject],
    )
  ).rows[0];
  if (linked) return active(linked, false);

  // Every person (not deleted) holding one of the addresses, the preferred address first.
  const holders = (
    await q.query<{ id: string; name: string; active: boolean; email: string; linkable: boolean }>(
      `SELECT id, name, active, lower(email) AS email, (${LINKABLE_BY_EMAIL_SQL}) AS linkable FROM ${s}.users
        WHERE kind = 'person' AND deleted_at IS NULL AND lower(email) = ANY($1::text[]) ORDER BY array_position($1::text[], lower(email)), created_at`,
      [emails],
    )
  ).rows;
  const address = holders[0]?.email;
  const known = holders.filter((h) => h.email === address);
  let user: { id: string; name: string; active: boolean };
  let created = false;
  if (known.length > 1) {
    throw new SignInRefused(`more than one person of ${org.slug} has the e-mail address ${address}; ask an admin to tell them apart`);
  } else if (known[0]) {
    if (!known[0].linkable)
      throw new SignInRefused(
        `the e-mail address ${address} of ${known[0].name} was set by a provisioning client, so it cannot link a sign-in account; ask an admin`,
      );
    user = known[0];
  } else if (p.create_users) {
    user = { id: randomUUID(), name: await freeUserName(q, org, emails[0]!.slice(0, emails[0]!.lastIndexOf('@'))), active: true };
    await q.query(`INSERT INTO ${s}.users (id, name, email, role, kind) VALUES ($1, $2, $3, $4, 'person')`, [
      user.id,
      user.name,
      emails[0],
      p.default_role as Role,
    ]);
    created = true;
    await authChanged(q, org);
  } else {
    throw new SignInRefused(`no user of ${org.slug} has the e-mail address ${emails[0]}; ask an admin to add you`);
  }
  await q.query(`INSERT INTO ${s}.external_identities (provider_id, subject, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
    p.id,
    who.subject,
    user.id,
  ]);
  return active(user, created);
}

function active(u: { id: string; name: string; active: boolean }, created: boolean): SignedIn {
  if (!u.active) throw new SignInRefused(`the user ${u.name} is deactivated`);
  return { userId: u.id, userName: u.name, created };
}
