import type { Group, Member, User } from '../access/identity.js';
import { ApiFailure, perform, refusedPage, type ApiClient } from './api-call.js';
import { html, type Html } from './html.js';
import { csrfField, field, notice, queryOf, renderPage, table, when, type PageCtx, type Viewer } from './page-kit.js';
import { queryText } from '../http/route-kit.js';
import type { PageRouter } from './page-router.js';
import { secretPage } from './admin-credentials.js';

// /admin/users and /admin/groups: people, their roles, and the groups that give them scopes.

interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

const ROLES = ['viewer', 'editor', 'admin'];

const roleOptions = (selected: string): Html[] =>
  ROLES.map((r) => html`<option value="${r}"${r === selected ? html` selected` : null}>${r}</option>`);

/** Every item of a paged admin list (users, groups: an organization's worth, for pickers). */
export async function everything<T>(ctx: PageCtx, api: ApiClient, path: string, max = 2000): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await api.get<Page<T>>(ctx, `${path}${queryOf({ limit: '200', cursor: cursor ?? undefined })}`);
    out.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && out.length < max);
  return out;
}

function userRow(v: Viewer, u: User): Html {
  const self = u.id === v.userId;
  return html`<tr>
<td>${u.name}${self ? html` <span class="badge">you</span>` : null}</td><td>${u.email ?? ''}</td><td>${u.kind}</td>
<td><form class="inline" method="post" action="/admin/users/${u.id}">${csrfField(v)}<select name="role" aria-label="Role of ${u.name}">${roleOptions(u.role)}</select> <button type="submit" class="secondary">Change role</button></form></td>
<td>${u.active ? html`<span class="badge ok">active</span>` : html`<span class="badge bad">deactivated</span>`}</td>
<td>${when(u.created_at)}</td>
<td>${
    self
      ? html`<span class="muted">—</span>`
      : html`<form class="inline" method="post" action="/admin/users/${u.id}" data-confirm="${u.active ? `Deactivate ${u.name}? Their keys and sessions stop working.` : `Reactivate ${u.name}?`}">${csrfField(v)}<input type="hidden" name="active" value="${u.active ? 'false' : 'true'}"><button type="submit" class="${u.active ? 'danger' : 'secondary'}">${u.active ? 'Deactivate' : 'Reactivate'}</button></form>`
  }${
    // A single-use sign-in link: shown for someone who never signed in, e-mailed to anyone else (login-links.ts).
    u.kind === 'person' && u.active && !self
      ? html` <form class="inline" method="post" action="/admin/users/${u.id}/login-link">${csrfField(v)}<button type="submit" class="secondary" aria-label="Sign-in link for ${u.name}">Sign-in link</button></form>`
      : null
  }</td></tr>`;
}

/** Groups as a tree: each under its parent, by path. */
function groupTree(groups: Group[]): Html {
  const children = new Map<string | null, Group[]>();
  for (const g of groups) children.set(g.parent_id, [...(children.get(g.parent_id) ?? []), g]);
  const ids = new Set(groups.map((g) => g.id));
  const level = (parent: string | null): Html | null => {
    const kids = (children.get(parent) ?? []).sort((a, b) => a.path.localeCompare(b.path));
    if (kids.length === 0) return null;
    return html`<ul class="tree">${kids.map(
      (g) =>
        html`<li><a href="/admin/groups/${encodeURIComponent(g.id)}">${g.path.split('/').pop()}</a> <span class="muted">${g.scope} · ${g.members} ${g.members === 1 ? 'member' : 'members'}</span>${level(g.id)}</li>`,
    )}</ul>`;
  };
  // Roots: no parent, or a parent not in the list.
  const roots = groups.filter((g) => g.parent_id === null || !ids.has(g.parent_id));
  for (const r of roots) if (r.parent_id !== null) children.set(null, [...(children.get(null) ?? []), r]);
  return level(null) ?? html``;
}

export function registerPeoplePages(router: PageRouter, api: ApiClient): void {
  router.get('/admin/users', async (ctx) => {
    const [page, groups, mailer] = await Promise.all([
      api.get<Page<User>>(ctx, `/admin/users${queryOf({ limit: '50', cursor: queryText(ctx, 'cursor') })}`),
      everything<Group>(ctx, api, '/admin/groups'),
      api.get<{ configured: boolean }>(ctx, '/admin/mail'),
    ]);
    const mail = mailer.configured;
    const v = ctx.state.viewer;
    renderPage(ctx, {
      title: 'Users',
      section: 'admin',
      body: [
        notice(ctx),
        table(
          ['Name', 'E-mail', 'Kind', 'Role', 'State', 'Added', ''],
          page.items.map((u) => userRow(v, u)),
          'No users yet.',
        ),
        page.next_cursor ? html`<p class="pager"><a href="/admin/users${queryOf({ cursor: page.next_cursor })}">Next page</a></p>` : null,
        html`<section class="card"><h2>Invite a person</h2><form class="stack" method="post" action="/admin/users/invite">${csrfField(v)}
<label>E-mail <input type="email" name="email" required autocomplete="off"></label>
<label>Name (optional; default: from the address) <input type="text" name="name" pattern="[a-z0-9][a-z0-9._\\-]{0,63}" autocomplete="off"></label>
<label>Role <select name="role">${roleOptions('editor')}</select></label>
<label>Group (optional) <select name="group"><option value="">none</option>${groups.map((g) => html`<option value="${g.path}">${g.path}</option>`)}</select></label>
<div><button type="submit">Invite</button></div></form>
<p class="muted">${mail ? 'The invitation goes to their e-mail address.' : 'The hub sends no e-mail (no SMTP configured): you get the invitation link to pass on.'} Opening it signs them in and gives them their first API key. People who sign in through a provider that creates users appear here by themselves.</p></section>`,
        html`<section class="card"><h2>Add a service account</h2><form class="stack" method="post" action="/admin/users">${csrfField(v)}<input type="hidden" name="kind" value="service">
<label>Name <input type="text" name="name" required pattern="[a-z0-9][a-z0-9._\\-]{0,63}" autocomplete="off" placeholder="ci-pipeline"></label>
<label>Role <select name="role">${roleOptions('editor')}</select></label>
<div><button type="submit">Add service account</button></div></form>
<p class="muted">For programs (CI, bots): issue its key on the <a href="/admin/api-keys">API keys</a> page. People are invited above and make their own keys.</p></section>`,
      ],
    });
  });

  router.post('/admin/users', async (ctx) => {
    const email = field(ctx, 'email');
    const kind = field(ctx, 'kind');
    await perform(
      ctx,
      api,
      'POST',
      '/admin/users',
      { json: { name: field(ctx, 'name'), role: field(ctx, 'role') || 'editor', ...(email ? { email } : {}), ...(kind ? { kind } : {}) } },
      '/admin/users',
      'user-added',
    );
  });

  router.post('/admin/users/:id/login-link', async (ctx) => {
    const r = await api.call<{ user: { name: string }; emailed: boolean; sent_to?: string; path?: string; expires_at: string }>(
      ctx,
      'POST',
      '/admin/login-links',
      { json: { user: ctx.params.id! } },
    );
    if (!r.ok) return refusedPage(ctx, r, '/admin/users');
    if (r.body.emailed) {
      return renderPage(ctx, {
        title: `Sign-in link for ${r.body.user.name}`,
        section: 'admin',
        status: 201,
        body: html`<p class="notice" role="status">A sign-in link was e-mailed to ${r.body.sent_to}. It works once, until ${when(r.body.expires_at)}.</p><p><a href="/admin/users">Back to users</a></p>`,
      });
    }
    secretPage(ctx, {
      title: `Sign-in link for ${r.body.user.name}`,
      section: 'admin',
      what: 'the sign-in link',
      secret: `${ctx.protocol}://${ctx.host}${r.body.path}`,
      back: '/admin/users',
      backLabel: 'Back to users',
      extra: html`<p>Give it to ${r.body.user.name} only: it signs one browser in as them, once, until ${when(r.body.expires_at)}.</p>`,
    });
  });

  router.post('/admin/users/invite', async (ctx) => {
    const json: Record<string, string> = { email: field(ctx, 'email'), role: field(ctx, 'role') || 'editor' };
    for (const k of ['name', 'group']) if (field(ctx, k)) json[k] = field(ctx, k);
    const r = await api.call<{
      user: { name: string; created: boolean };
      emailed: boolean;
      sent_to?: string;
      path?: string;
      expires_at: string;
    }>(ctx, 'POST', '/admin/invitations', { json });
    if (!r.ok) return refusedPage(ctx, r, '/admin/users');
    const who = `${r.body.user.name}${r.body.user.created ? ' (added)' : ''}`;
    if (r.body.emailed) {
      return renderPage(ctx, {
        title: `Invited ${r.body.user.name}`,
        section: 'admin',
        status: 201,
        body: html`<p class="notice" role="status">The invitation for ${who} was e-mailed to ${r.body.sent_to}. It works once, until ${when(r.body.expires_at)}.</p><p><a href="/admin/users">Back to users</a></p>`,
      });
    }
    secretPage(ctx, {
      title: `Invited ${r.body.user.name}`,
      section: 'admin',
      what: 'the invitation link',
      secret: `${ctx.protocol}://${ctx.host}${r.body.path}`,
      back: '/admin/users',
      backLabel: 'Back to users',
      extra: html`<p>Send it to ${who} yourself. It works once, until ${when(r.body.expires_at)}: it signs them in and shows their first API key.</p>`,
    });
  });

  router.post('/admin/users/:id', async (ctx) => {
    const change: Record<string, unknown> = {};
    if (field(ctx, 'role')) change.role = field(ctx, 'role');
    if (field(ctx, 'active')) change.active = field(ctx, 'active') === 'true';
    await perform(
      ctx,
      api,
      'PATCH',
      `/admin/users/${encodeURIComponent(ctx.params.id!)}`,
      { json: change },
      '/admin/users',
      'user-changed',
    );
  });

  router.get('/admin/groups', async (ctx) => {
    const groups = await everything<Group>(ctx, api, '/admin/groups');
    const v = ctx.state.viewer;
    renderPage(ctx, {
      title: 'Groups',
      section: 'admin',
      body: [
        notice(ctx),
        groups.length
          ? html`<section class="card">${groupTree(groups)}</section>`
          : html`<div class="card empty">No groups yet. A group gives its members the scope <code>group:&lt;path&gt;</code> and its parents'.</div>`,
        html`<section class="card"><h2>Create a group</h2><form class="stack" method="post" action="/admin/groups">${csrfField(v)}
<label>Path <input type="text" name="path" required placeholder="platform/payments" pattern="[a-z0-9][a-z0-9_\\-]*(/[a-z0-9][a-z0-9_\\-]*)*"></label>
<div><button type="submit">Create group</button></div></form><p class="muted">A path with slashes nests the group under its parent, which must exist first.</p></section>`,
      ],
    });
  });

  router.post('/admin/groups', async (ctx) => {
    await perform(ctx, api, 'POST', '/admin/groups', { json: { path: field(ctx, 'path') } }, '/admin/groups', 'group-added');
  });

  router.get('/admin/groups/:id', async (ctx) => {
    const id = ctx.params.id!;
    const [groups, members, users] = await Promise.all([
      everything<Group>(ctx, api, '/admin/groups'),
      api.get<{ items: Member[] }>(ctx, `/admin/groups/${encodeURIComponent(id)}/members`),
      everything<User>(ctx, api, '/admin/users'),
    ]);
    const group = groups.find((g) => g.id === id || g.path === id);
    if (!group) throw new ApiFailure(404, `no group ${id}`);
    const v = ctx.state.viewer;
    const memberIds = new Set(members.items.map((m) => m.user_id));
    const back = `/admin/groups/${encodeURIComponent(id)}`;
    renderPage(ctx, {
      title: `Group ${group.path}`,
      section: 'admin',
      body: [
        notice(ctx),
        html`<p>Members read scope <code>${group.scope}</code> (and its parents'); read-only members do not write it. <a href="/admin/groups">All groups</a></p>`,
        table(
          ['Member', 'Role', 'Access', ''],
          members.items.map(
            (
              m,
            ) => html`<tr><td>${m.name}${m.active ? null : html` <span class="badge bad">deactivated</span>`}</td><td>${m.role}</td><td>${m.read_only ? 'read only' : 'read and write'}</td>
<td><form class="inline" method="post" action="${back}/members/${encodeURIComponent(m.user_id)}/remove" data-confirm="Remove ${m.name} from ${group.path}?">${csrfField(v)}<button type="submit" class="danger">Remove</button></form></td></tr>`,
          ),
          'This group has no members yet.',
        ),
        html`<section class="card"><h2>Add a member</h2><form class="stack" method="post" action="${back}/members">${csrfField(v)}
<label>User <select name="user_id" required>${users.filter((u) => u.active && !memberIds.has(u.id)).map((u) => html`<option value="${u.id}">${u.name}</option>`)}</select></label>
<label class="check"><input type="checkbox" name="read_only" value="true"> Read only</label>
<div><button type="submit">Add member</button></div></form></section>`,
      ],
    });
  });

  router.post('/admin/groups/:id/members', async (ctx) => {
    const id = ctx.params.id!;
    await perform(
      ctx,
      api,
      'POST',
      `/admin/groups/${encodeURIComponent(id)}/members`,
      { json: { user_id: field(ctx, 'user_id'), read_only: field(ctx, 'read_only') === 'true' } },
      `/admin/groups/${encodeURIComponent(id)}`,
      'member-added',
    );
  });

  router.post('/admin/groups/:id/members/:user/remove', async (ctx) => {
    const id = ctx.params.id!;
    await perform(
      ctx,
      api,
      'DELETE',
      `/admin/groups/${encodeURIComponent(id)}/members/${encodeURIComponent(ctx.params.user!)}`,
      {},
      `/admin/groups/${encodeURIComponent(id)}`,
      'member-removed',
    );
  });
}
