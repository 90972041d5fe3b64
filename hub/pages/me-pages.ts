import type { Database } from '../contracts.js';
import type { HubConfig } from '../config.js';
import { hubOrigin } from '../http/hub-origin.js';
import { signOut } from '../login/login-routes.js';
import type { AuditWriter } from '../audit/audit-log.js';
import { perform, refusedPage, type ApiClient } from './api-call.js';
import { grantTable, keyRows, secretPage } from './admin-credentials.js';
import type { Grant } from '../login/grant-routes.js';
import { engramFields, engramTable, historyTable, type Engram } from './admin-engrams.js';
import { html } from './html.js';
import { csrfField, field, notice, queryOf, renderPage, table, when } from './page-kit.js';
import { queryText } from '../http/route-kit.js';
import type { PageRouter } from './page-router.js';

// /me/: the personal portal, for every role. Who I am and what I may read and write, my API keys,
// my engrams (those in my own scope user:<me>), my sessions, how to connect an agent; signing out.

interface Session {
  id: string;
  status: string;
  started_at: string;
  ended_at?: string;
  task?: string;
  agent?: string;
  scope?: string;
  summary?: string;
  engram_ids: string[];
}

export interface MeDeps {
  api: ApiClient;
  db: Database;
  config: HubConfig;
  audit: AuditWriter;
}

export function registerMePages(router: PageRouter, { api, db, config, audit }: MeDeps): void {
  router.get('/me/', async (ctx) => {
    const v = ctx.state.viewer;
    const scopes = await api.get<{ items: Array<{ scope: string; writable: boolean; engrams: number }> }>(ctx, '/me/scopes');
    renderPage(ctx, {
      title: `Signed in as ${v.name}`,
      section: 'me',
      body: [
        html`<section class="card"><dl class="fields"><dt>Organization</dt><dd>${v.org.slug}</dd><dt>Role</dt><dd>${v.role}${
          v.role === 'viewer'
            ? html` <span class="muted">(reads only)</span>`
            : v.role === 'admin'
              ? html` <span class="muted">(<a href="/admin/">admin pages</a>)</span>`
              : null
        }</dd></dl></section>`,
        html`<h2>Scopes I can read</h2>`,
        table(
          ['Scope', 'Access', ['Engrams', 'num']],
          scopes.items.map(
            (s) =>
              html`<tr><td class="mono">${s.scope}</td><td>${s.writable ? 'read and write' : 'read only'}</td><td class="num">${s.engrams}</td></tr>`,
          ),
          'No scopes: ask an admin to add you to a group.',
        ),
        html`<h2>My data</h2>
          <p>
            <a href="/me/export.json" download>Download everything the hub holds about me</a>
            <span class="muted"
              >(one JSON file: my account, my personal scope's engrams, my sessions and episodes, my keys and grants)</span
            >
          </p>`,
      ],
    });
  });

  // The export of GET /api/v1/me/export, as a file the browser saves.
  router.get('/me/export.json', async (ctx) => {
    const data = await api.get<Record<string, unknown>>(ctx, '/me/export');
    ctx.set('content-disposition', `attachment; filename="svc-${ctx.state.viewer.org.slug}-${ctx.state.viewer.name}.json"`);
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(data, null, 2);
  });

  router.get('/me/api-keys', async (ctx) => {
    const v = ctx.state.viewer;
    const [keys, grants] = await Promise.all([
      api.get<{ items: Parameters<typeof keyRows>[1]; next_cursor: string | null }>(
        ctx,
        `/me/api-keys${queryOf({ limit: '100', cursor: queryText(ctx, 'cursor') })}`,
      ),
      api.get<{ items: Grant[] }>(ctx, '/me/grants'),
    ]);
    renderPage(ctx, {
      title: 'My API keys',
      section: 'me',
      body: [
        notice(ctx),
        html`<p>A key lets a program act as you (the <code>svc</code> command, an agent, a script). Revoke the ones you no longer use.</p>`,
        table(
          ['Name', 'Key', 'Issued', 'Last used', ''],
          keyRows(v, keys.items, () => null, '/me/api-keys'),
          'You have no API keys yet.',
        ),
        keys.next_cursor ? html`<p class="pager"><a href="/me/api-keys${queryOf({ cursor: keys.next_cursor })}">Next page</a></p>` : null,
        html`<section class="card"><h2>Create a key</h2><form class="stack" method="post" action="/me/api-keys">${csrfField(v)}
<label>Name <input type="text" name="name" required maxlength="100" placeholder="laptop"></label>
<div><button type="submit">Create key</button></div></form></section>`,
        html`<h2>MCP clients I connected</h2><p>Clients you let in by signing in from them. Each uses your memory as you may (read, or read and write) through MCP only; revoke the ones you no longer use.</p>`,
        grantTable(v, grants.items, false, '/me/grants'),
      ],
    });
  });

  router.post('/me/grants/:id/revoke', async (ctx) => {
    await perform(ctx, api, 'DELETE', `/me/grants/${encodeURIComponent(ctx.params.id!)}`, {}, '/me/api-keys', 'grant-revoked');
  });

  router.post('/me/api-keys', async (ctx) => {
    const r = await api.call<{ name: string; key: string }>(ctx, 'POST', '/me/api-keys', { json: { name: field(ctx, 'name') || 'key' } });
    if (!r.ok) return refusedPage(ctx, r, '/me/api-keys');
    secretPage(ctx, {
      title: `New API key ${r.body.name}`,
      section: 'me',
      what: 'your key',
      secret: r.body.key,
      back: '/me/api-keys',
      backLabel: 'Back to my keys',
      extra: html`<p><a href="/me/connect">Connect an agent with it</a></p>`,
    });
  });

  router.post('/me/api-keys/:id/revoke', async (ctx) => {
    await perform(ctx, api, 'DELETE', `/me/api-keys/${encodeURIComponent(ctx.params.id!)}`, {}, '/me/api-keys', 'key-revoked');
  });

  router.get('/me/engrams', async (ctx) => {
    const v = ctx.state.viewer;
    const page = await api.get<{ items: Engram[]; next_cursor: string | null }>(
      ctx,
      `/engrams${queryOf({ scope: `user:${v.name}`, limit: '50', cursor: queryText(ctx, 'cursor') })}`,
    );
    renderPage(ctx, {
      title: 'My engrams',
      section: 'me',
      body: [
        html`<p>What you have learned in your own scope <code>user:${v.name}</code>. Team scopes are on <a href="/me/">your scopes</a>.</p>`,
        engramTable(
          page.items,
          '/me/engrams',
          'You have no engrams of your own yet: they appear here when your agents learn from your corrections.',
        ),
        page.next_cursor ? html`<p class="pager"><a href="/me/engrams${queryOf({ cursor: page.next_cursor })}">Next page</a></p>` : null,
      ],
    });
  });

  router.get('/me/engrams/:id', async (ctx) => {
    const id = encodeURIComponent(ctx.params.id!);
    const [e, history] = await Promise.all([
      api.get<Engram>(ctx, `/engrams/${id}`),
      api.get<{ items: Parameters<typeof historyTable>[0] }>(ctx, `/engrams/${id}/history`),
    ]);
    renderPage(ctx, {
      title: e.id,
      section: 'me',
      body: [
        html`<p>${e.statement}</p><h2>Fields</h2><section class="card">${await engramFields(e)}</section><h2>History</h2>`,
        historyTable(history.items),
        html`<p><a href="/me/engrams">My engrams</a></p>`,
      ],
    });
  });

  router.get('/me/sessions', async (ctx) => {
    const sessions = await api.get<{ items: Session[] }>(ctx, '/sessions?limit=50');
    renderPage(ctx, {
      title: 'My sessions',
      section: 'me',
      body: table(
        ['Started', 'Ended', 'Agent', 'Task', 'Scope', ['Engrams', 'num']],
        sessions.items.map(
          (
            s,
          ) => html`<tr><td>${when(s.started_at)}</td><td>${s.ended_at ? when(s.ended_at) : html`<span class="badge">open</span>`}</td><td>${s.agent ?? ''}</td><td>${s.task ?? ''}${s.summary ? html`<br><span class="muted">${s.summary}</span>` : null}</td>
<td class="mono">${s.scope ?? ''}</td><td class="num">${s.engram_ids.length}</td></tr>`,
        ),
        'No sessions yet: an agent starts one when it begins a task.',
      ),
    });
  });

  router.get('/me/connect', (ctx) => {
    const origin = hubOrigin(ctx, config);
    renderPage(ctx, {
      title: 'Connect your agent',
      section: 'me',
      body: html`<p>You need an API key: <a href="/me/api-keys">create one</a> and put it where <code>svc_sk_…</code> stands below.</p>
<h2>The svc command (local engine, team writes pushed here)</h2>
<pre tabindex="0">svc init
svc init-remote --url ${origin} --token svc_sk_…
svc init-remote --verify</pre>
<h2>Claude Code, straight to this hub over MCP</h2>
<pre tabindex="0">claude mcp add --transport http svc-team ${origin}/mcp</pre>
<p>Claude Code signs you in through this hub in your browser the first time. With a key instead:</p>
<pre tabindex="0">claude mcp add --transport http svc-team ${origin}/mcp --header "Authorization: Bearer svc_sk_…"</pre>
<h2>Any other MCP client</h2>
<p>Streamable HTTP at <code>${origin}/mcp</code>; the older SSE transport at <code>${origin}/sse</code>. REST: <code>${origin}/api/v1/</code> (<a href="/api/v1/openapi.yaml">OpenAPI description</a>).</p>`,
    });
  });

  // Signing out: the session and every token minted from it end, on every hub process.
  router.post('/me/sign-out', async (ctx) => {
    await signOut(ctx, { db, config, audit });
    ctx.status = 303;
    ctx.redirect(`/sign-in${queryOf({ org: ctx.state.viewer.org.slug })}`);
  });
}
