import type { ApiKeyInfo } from '../access/identity.js';
import type { ScimTokenInfo } from '../scim/scim-tokens.js';
import type { Grant } from '../login/grant-routes.js';
import { perform, refusedPage, type ApiClient } from './api-call.js';
import { everything } from './admin-people.js';
import { html, type Html } from './html.js';
import { csrfField, field, notice, queryOf, renderPage, table, when, type PageCtx, type Viewer } from './page-kit.js';
import { queryText } from '../http/route-kit.js';
import type { PageRouter } from './page-router.js';

// /admin/api-keys, /admin/scim-tokens and /admin/providers: what lets people and programs in.
// A new key or token is shown once, on the page that answers its form, and never again.

interface Provider {
  id: string;
  name: string;
  kind: string;
  issuer: string;
  client_id: string | null;
  allowed_domains: string[];
  create_users: boolean;
  default_role: string;
  login_url: string;
  redirect_uri: string;
  metadata_url: string | null;
}

/** The page that shows a new secret, once. */
export function secretPage(
  ctx: PageCtx,
  o: { title: string; section: 'admin' | 'me'; what: string; secret: string; back: string; backLabel: string; extra?: Html },
): void {
  renderPage(ctx, {
    title: o.title,
    section: o.section,
    status: 201,
    body: html`<div class="warning" role="status">Copy ${o.what} now: it is shown only this once. The hub keeps only its hash.</div>
<p class="secret" id="new-secret">${o.secret}</p>${o.extra ?? null}
<p><a href="${o.back}">${o.backLabel}</a></p>`,
  });
}

export function keyRows(v: Viewer, keys: ApiKeyInfo[], owner: (k: ApiKeyInfo) => string | null, revokeBase: string): Html[] {
  return keys.map(
    (
      k,
    ) => html`<tr><td>${k.name}</td>${owner(k) === null ? null : html`<td>${owner(k)}</td>`}<td><code>${k.prefix}…</code></td><td>${when(k.created_at)}</td><td>${when(k.last_used_at)}</td>
<td>${
      k.revoked_at
        ? html`<span class="badge bad">revoked</span> ${when(k.revoked_at)}`
        : html`<form class="inline" method="post" action="${revokeBase}/${encodeURIComponent(k.id)}/revoke" data-confirm="Revoke the key ${k.name}? Programs using it stop working at once.">${csrfField(v)}<button type="submit" class="danger">Revoke</button></form>`
    }</td></tr>`,
  );
}

/** MCP clients let in through OAuth, each with its revoke button (`revokeBase`/{id}/revoke). */
export function grantTable(v: Viewer, grants: Grant[], withUser: boolean, revokeBase: string): Html {
  return table(
    [...(withUser ? ['User'] : []), 'MCP client', 'Returns to', 'Connected', 'Until', ''],
    grants.map(
      (
        g,
      ) => html`<tr>${withUser ? html`<td>${g.user_name}</td>` : null}<td>${g.client_name}</td><td class="mono">${g.redirect_hosts.join(', ')}</td><td>${when(g.created_at)}</td><td>${when(g.expires_at)}</td>
<td><form class="inline" method="post" action="${revokeBase}/${encodeURIComponent(g.id)}/revoke" data-confirm="Disconnect ${g.client_name}? Its tokens stop working at once.">${csrfField(v)}<button type="submit" class="danger">Revoke</button></form></td></tr>`,
    ),
    'No MCP client is connected through OAuth.',
  );
}

export function registerCredentialPages(router: PageRouter, api: ApiClient): void {
  router.get('/admin/api-keys', async (ctx) => {
    const v = ctx.state.viewer;
    const [page, users, grants] = await Promise.all([
      api.get<{ items: ApiKeyInfo[]; next_cursor: string | null }>(
        ctx,
        `/admin/api-keys${queryOf({ limit: '100', cursor: queryText(ctx, 'cursor') })}`,
      ),
      everything<{ id: string; name: string; active: boolean; kind: string }>(ctx, api, '/admin/users'),
      api.get<{ items: Grant[] }>(ctx, '/admin/grants'),
    ]);
    const names = new Map(users.map((u) => [u.id, u.name]));
    renderPage(ctx, {
      title: 'API keys',
      section: 'admin',
      body: [
        notice(ctx),
        table(
          ['Name', 'User', 'Key', 'Issued', 'Last used', ''],
          keyRows(v, page.items, (k) => names.get(k.user_id) ?? k.user_id, '/admin/api-keys'),
          'No API keys yet.',
        ),
        page.next_cursor
          ? html`<p class="pager"><a href="/admin/api-keys${queryOf({ cursor: page.next_cursor })}">Next page</a></p>`
          : null,
        // A key acts as its owner: an admin issues keys only for service accounts and themselves.
        html`<section class="card"><h2>Issue a key</h2><form class="stack" method="post" action="/admin/api-keys">${csrfField(v)}
<label>For user <select name="user_id" required><optgroup label="You">${users.filter((u) => u.id === v.userId).map((u) => html`<option value="${u.id}">${u.name}</option>`)}</optgroup><optgroup label="Service accounts">${users
          .filter((u) => u.active && u.kind === 'service')
          .map((u) => html`<option value="${u.id}">${u.name}</option>`)}</optgroup></select></label>
<label>Name <input type="text" name="name" required maxlength="100" placeholder="ci-pipeline"></label>
<div><button type="submit">Issue key</button></div></form>
<p class="muted">Keys for service accounts (add one on the <a href="/admin/users">Users</a> page) and for yourself. A person makes their own keys in their portal; to give someone their first, <a href="/admin/users">invite them</a>.</p></section>`,
        html`<h2>MCP clients connected through OAuth</h2><p>Each acts as its person on the MCP endpoints only. Revoking one ends its tokens at once.</p>`,
        grantTable(v, grants.items, true, '/admin/grants'),
      ],
    });
  });

  router.post('/admin/grants/:id/revoke', async (ctx) => {
    await perform(ctx, api, 'DELETE', `/admin/grants/${encodeURIComponent(ctx.params.id!)}`, {}, '/admin/api-keys', 'grant-revoked');
  });

  router.post('/admin/api-keys', async (ctx) => {
    const r = await api.call<ApiKeyInfo & { key: string }>(ctx, 'POST', '/admin/api-keys', {
      json: { user_id: field(ctx, 'user_id'), name: field(ctx, 'name') || 'key' },
    });
    if (!r.ok) return refusedPage(ctx, r, '/admin/api-keys');
    secretPage(ctx, {
      title: `New API key ${r.body.name}`,
      section: 'admin',
      what: 'the key',
      secret: r.body.key,
      back: '/admin/api-keys',
      backLabel: 'Back to API keys',
    });
  });

  router.post('/admin/api-keys/:id/revoke', async (ctx) => {
    await perform(ctx, api, 'DELETE', `/admin/api-keys/${encodeURIComponent(ctx.params.id!)}`, {}, '/admin/api-keys', 'key-revoked');
  });

  router.get('/admin/scim-tokens', async (ctx) => {
    const v = ctx.state.viewer;
    const tokens = await api.get<{ items: ScimTokenInfo[] }>(ctx, '/admin/scim-tokens');
    renderPage(ctx, {
      title: 'SCIM tokens',
      section: 'admin',
      body: [
        notice(ctx),
        html`<p>An identity provider provisions users and groups at <code>/scim/v2/</code> with one of these tokens.</p>`,
        table(
          ['Name', 'Token', 'Issued by', 'Issued', 'Last used', ''],
          tokens.items.map(
            (
              t,
            ) => html`<tr><td>${t.name}</td><td><code>${t.prefix}…</code></td><td>${t.created_by}</td><td>${when(t.created_at)}</td><td>${when(t.last_used_at)}</td>
<td>${
              t.revoked_at
                ? html`<span class="badge bad">revoked</span>`
                : html`<form class="inline" method="post" action="/admin/scim-tokens/${encodeURIComponent(t.id)}/revoke" data-confirm="Revoke the SCIM token ${t.name}?">${csrfField(v)}<button type="submit" class="danger">Revoke</button></form>`
            }</td></tr>`,
          ),
          'No SCIM tokens yet.',
        ),
        html`<section class="card"><h2>Issue a SCIM token</h2><form class="stack" method="post" action="/admin/scim-tokens">${csrfField(v)}
<label>Name <input type="text" name="name" required maxlength="100" placeholder="okta"></label>
<div><button type="submit">Issue token</button></div></form></section>`,
      ],
    });
  });

  router.post('/admin/scim-tokens', async (ctx) => {
    const r = await api.call<ScimTokenInfo & { token: string }>(ctx, 'POST', '/admin/scim-tokens', { json: { name: field(ctx, 'name') } });
    if (!r.ok) return refusedPage(ctx, r, '/admin/scim-tokens');
    secretPage(ctx, {
      title: `New SCIM token ${r.body.name}`,
      section: 'admin',
      what: 'the token',
      secret: r.body.token,
      back: '/admin/scim-tokens',
      backLabel: 'Back to SCIM tokens',
    });
  });

  router.post('/admin/scim-tokens/:id/revoke', async (ctx) => {
    await perform(
      ctx,
      api,
      'DELETE',
      `/admin/scim-tokens/${encodeURIComponent(ctx.params.id!)}`,
      {},
      '/admin/scim-tokens',
      'token-revoked',
    );
  });

  router.get('/admin/providers', async (ctx) => {
    const v = ctx.state.viewer;
    const providers = await api.get<{ items: Provider[] }>(ctx, '/admin/identity-providers');
    renderPage(ctx, {
      title: 'Sign-in providers',
      section: 'admin',
      body: [
        notice(ctx),
        table(
          ['Name', 'Kind', 'Issuer', 'Users', 'Give the provider', ''],
          providers.items.map(
            (p) => html`<tr><td>${p.name}</td><td>${p.kind}</td><td class="mono">${p.issuer}</td>
<td>${p.create_users ? `created on first sign-in as ${p.default_role}` : 'existing users only'}${p.allowed_domains.length ? html`<br><span class="muted">${p.allowed_domains.join(', ')}</span>` : null}</td>
<td class="mono">${p.kind === 'saml' ? html`entity ID ${p.metadata_url}<br>ACS ${p.redirect_uri}` : html`redirect URI ${p.redirect_uri}`}<br><span class="muted">sign-in link ${p.login_url}</span></td>
<td><form class="inline" method="post" action="/admin/providers/${encodeURIComponent(p.id)}/remove" data-confirm="Remove ${p.name}? Everyone signed in through it is signed out.">${csrfField(v)}<button type="submit" class="danger">Remove</button></form></td></tr>`,
          ),
          'No sign-in providers yet: add one so people can sign in to these pages.',
        ),
        html`<section class="card"><h2>Add a provider</h2><form class="stack" method="post" action="/admin/providers">${csrfField(v)}
<label>Name (in the sign-in URL) <input type="text" name="name" required pattern="[a-z0-9][a-z0-9\\-]{0,39}" placeholder="okta"></label>
<label>Kind <select name="kind"><option value="oidc">OpenID Connect</option><option value="github">GitHub</option><option value="gitlab">GitLab</option><option value="saml">SAML 2.0</option></select></label>
<label>Issuer (OIDC), base URL (GitHub Enterprise, self-managed GitLab) or IdP entity ID (SAML) <input type="url" name="issuer"></label>
<label>Client ID <input type="text" name="client_id" autocomplete="off"></label>
<label>Client secret <input type="password" name="client_secret" autocomplete="new-password"></label>
<label>SAML: IdP metadata XML (instead of the entity ID above and the two fields below) <textarea name="idp_metadata" rows="3"></textarea></label>
<label>SAML: single sign-on URL <input type="url" name="sso_url"></label>
<label>SAML: signing certificate (PEM) <textarea name="idp_cert" rows="3"></textarea></label>
<label>Allowed e-mail domains (comma-separated; empty: any verified address) <input type="text" name="allowed_domains"></label>
<label class="check"><input type="checkbox" name="create_users" value="true"> Create a user at their first sign-in</label>
<label>Role of created users <select name="default_role"><option value="viewer">viewer</option><option value="editor">editor</option><option value="admin">admin</option></select></label>
<div><button type="submit">Add provider</button></div></form></section>`,
      ],
    });
  });

  router.post('/admin/providers', async (ctx) => {
    const body: Record<string, unknown> = { name: field(ctx, 'name'), kind: field(ctx, 'kind') };
    for (const k of ['issuer', 'client_id', 'client_secret', 'idp_metadata', 'sso_url', 'idp_cert', 'default_role'])
      if (field(ctx, k)) body[k] = field(ctx, k);
    const domains = field(ctx, 'allowed_domains');
    if (domains) body.allowed_domains = domains.split(/[\s,]+/).filter(Boolean);
    body.create_users = field(ctx, 'create_users') === 'true';
    await perform(ctx, api, 'POST', '/admin/identity-providers', { json: body }, '/admin/providers', 'provider-added');
  });

  router.post('/admin/providers/:id/remove', async (ctx) => {
    await perform(
      ctx,
      api,
      'DELETE',
      `/admin/identity-providers/${encodeURIComponent(ctx.params.id!)}`,
      {},
      '/admin/providers',
      'provider-removed',
    );
  });
}
