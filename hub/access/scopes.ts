import type { Org, Queryable, Role } from '../contracts.js';
import { ident } from '../data/sql.js';

// Scope resolution, on the server, per request: the user's own scope, the groups they belong to
// and those groups' parents, the organization, global. That is the readable set. The writable
// set is a subset: nothing for viewers; for editors their own scope and the groups they are a
// (not read-only) member of; admins also write the organization's scope and global. A parent
// group is readable through a child's membership but not writable. Admins administer every
// group, so they read and write every group scope; other users' own scopes stay private.
// Installed packs (pack:<name>) are readable by everyone in the organization.

export interface ResolvedScopes {
  readable: string[];
  writable: string[];
}

export async function resolveScopes(q: Queryable, org: Org, user: { id: string; name: string; role: Role }): Promise<ResolvedScopes> {
  const s = ident(org.schema);
  const r = await q.query<{ path: string; direct: boolean; read_only: boolean }>(
    `WITH RECURSIVE mine AS (
       SELECT g.id, g.path, g.parent_id, true AS direct, m.read_only
         FROM ${s}.memberships m JOIN ${s}.groups g ON g.id = m.group_id WHERE m.user_id = $1
       UNION
       SELECT p.id, p.path, p.parent_id, false, true FROM ${s}.groups p JOIN mine c ON c.parent_id = p.id)
     SELECT path, bool_or(direct) AS direct, bool_and(read_only) AS read_only FROM mine GROUP BY path ORDER BY path`,
    [user.id],
  );
  const own = `user:${user.name}`;
  // Installed packs are the organization's: everyone reads them, admins (who install) write.
  const packs = (await q.query<{ name: string }>(`SELECT name FROM ${s}.packs ORDER BY name`)).rows.map((p) => `pack:${p.name}`);
  if (user.role === 'admin') {
    const all = (await q.query<{ path: string }>(`SELECT path FROM ${s}.groups ORDER BY path`)).rows.map((g) => `group:${g.path}`);
    const scopes = [own, ...all, `org:${org.slug}`, 'global', ...packs];
    return { readable: scopes, writable: [...scopes] };
  }
  const groups = r.rows.map((g) => `group:${g.path}`);
  const readable = [own, ...groups, `org:${org.slug}`, 'global', ...packs];
  const writable: string[] = [];
  if (user.role !== 'viewer') {
    writable.push(own, ...r.rows.filter((g) => g.direct && !g.read_only).map((g) => `group:${g.path}`));
  }
  return { readable, writable };
}
