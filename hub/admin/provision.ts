import type { Database, Org } from '../contracts.js';
import { createOrg } from '../data/organizations.js';
import { createUser, issueApiKey } from '../access/identity.js';

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
