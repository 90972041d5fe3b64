import type { ParameterizedContext } from 'koa';
import type { Role } from '../contracts.js';
import { html, type Html } from './html.js';

// What every page of the admin UI and the portal is made of: who is looking, the layout (one
// stylesheet, one script, both from this hub; a strict policy), and the small pieces pages share
// (dates, tables, notices, the CSRF field).

export type PageCtx = ParameterizedContext<{ viewer: Viewer; form?: PageForm }>;

export interface Viewer {
  name: string;
  userId: string;
  role: Role;
  org: { id: string; slug: string };
  /** What the page's REST calls carry: the caller's own Bearer header, or one minted from the session. */
  authorization: string;
  /** The CSRF token every state-changing form sends back (null for a Bearer caller: no cookie to ride on). */
  csrf: string | null;
}

/** A posted form: its fields, and the files of a multipart one. */
export interface PageForm {
  fields: URLSearchParams;
  files: Map<string, { filename: string; data: Buffer }>;
}

export const CSP =
  "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export function securityHeaders(ctx: ParameterizedContext): void {
  ctx.set('content-security-policy', CSP);
  ctx.set('x-frame-options', 'DENY');
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('cache-control', 'no-store');
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with our own
  // forms, and the gate could no longer tell them from another site's.
  ctx.set('referrer-policy', 'same-origin');
}

type Section = 'admin' | 'me';

const ADMIN_NAV: Array<[string, string]> = [
  ['/admin/', 'Overview'],
  ['/admin/users', 'Users'],
  ['/admin/groups', 'Groups'],
  ['/admin/api-keys', 'API keys'],
  ['/admin/scim-tokens', 'SCIM tokens'],
  ['/admin/providers', 'Sign-in providers'],
  ['/admin/webhooks', 'Webhooks'],
  ['/admin/audit', 'Audit log'],
  ['/admin/engrams', 'Engrams'],
  ['/admin/packs', 'Packs'],
];

const ME_NAV: Array<[string, string]> = [
  ['/me/', 'Me'],
  ['/me/api-keys', 'My API keys'],
  ['/me/engrams', 'My engrams'],
  ['/me/sessions', 'My sessions'],
  ['/me/connect', 'Connect your agent'],
];

const current = (path: string, href: string): boolean =>
  href.endsWith('/') ? path === href : path === href || path.startsWith(`${href}/`);

export interface PageOptions {
  title: string;
  section: Section;
  body: Html | Array<Html | null>;
  status?: number;
}

/** Answers a page in the layout; the viewer (when signed in) sees the section's navigation. */
export function renderPage(ctx: PageCtx, o: PageOptions): void {
  const viewer = ctx.state.viewer as Viewer | undefined;
  const nav = o.section === 'admin' ? ADMIN_NAV : ME_NAV;
  const other =
    viewer?.role === 'admin' ? (o.section === 'admin' ? html`<a href="/me/">My portal</a>` : html`<a href="/admin/">Admin</a>`) : null;
  const top = viewer
    ? html`<header class="top"><a class="brand" href="${o.section === 'admin' ? '/admin/' : '/me/'}">svc hub</a><span>${viewer.org.slug}</span>${other}
<div class="who"><span>${viewer.name} <span class="badge">${viewer.role}</span></span>${
        viewer.csrf
          ? html`<form method="post" action="/me/sign-out">${csrfField(viewer)}<button type="submit">Sign out</button></form>`
          : null
      }</div></header>
<nav class="sections" aria-label="Sections">${nav.map(([href, label]) => html`<a href="${href}"${current(ctx.path, href) ? html` aria-current="page"` : null}>${label}</a>`)}</nav>`
    : html`<header class="top"><span class="brand">svc hub</span></header>`;
  securityHeaders(ctx);
  ctx.status = o.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · svc hub</title><link rel="icon" href="/assets/svc.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/svc.css"><script src="/assets/svc.js" defer></script></head>
<body>${top}<main id="main"><h1>${o.title}</h1>
${o.body}
</main></body></html>
`.text;
}

export const csrfField = (viewer: Viewer): Html => (viewer.csrf ? html`<input type="hidden" name="_csrf" value="${viewer.csrf}">` : html``);

/** A date as UTC text the script turns into the viewer's local time. */
export function when(iso: string | null | undefined): Html {
  if (!iso) return html`<span class="muted">never</span>`;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return html`${iso}`;
  return html`<time datetime="${d.toISOString()}">${d.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** A table, or a clear empty state. */
export function table(headers: Array<string | [string, 'num']>, rows: Html[], empty: string, caption?: string): Html {
  if (rows.length === 0) return html`<div class="card empty">${empty}</div>`;
  const label =
    caption ??
    headers
      .map((h) => (typeof h === 'string' ? h : h[0]))
      .filter(Boolean)
      .join(', ');
  // Focusable, so a keyboard can scroll a wide table sideways on a narrow screen.
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${label}"><table>${caption ? html`<caption class="muted">${caption}</caption>` : null}<thead><tr>${headers.map(
    (h) => (typeof h === 'string' ? html`<th scope="col">${h}</th>` : html`<th scope="col" class="num">${h[0]}</th>`),
  )}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** Notices after an action, by code (a redirect carries the code, never the text). */
const NOTICES: Record<string, string> = {
  'user-changed': 'The user was changed.',
  'user-added': 'The user was added.',
  'group-added': 'The group was created.',
  'member-added': 'The member was added.',
  'member-removed': 'The member was removed.',
  'key-revoked': 'The API key was revoked.',
  'token-revoked': 'The SCIM token was revoked.',
  'grant-revoked': 'The MCP client was disconnected: its tokens no longer work.',
  'provider-added': 'The sign-in provider was added.',
  'provider-removed': 'The sign-in provider was removed.',
  'webhook-changed': 'The webhook was changed.',
  'webhook-removed': 'The webhook was removed.',
  'test-delivered': 'The test event was delivered.',
  'test-failed': 'The test event was not delivered: see the error below.',
  'engram-retired': 'The engram was retired.',
  'engram-pinned': 'The engram was pinned.',
  'engram-unpinned': 'The engram was unpinned.',
  'pack-uninstalled': 'The pack was uninstalled.',
};

export function notice(ctx: PageCtx): Html | null {
  const code = typeof ctx.query.done === 'string' ? ctx.query.done : '';
  const text = NOTICES[code];
  return text ? html`<p class="notice" role="status">${text}</p>` : null;
}

export const errorBox = (message: string): Html => html`<p class="error" role="alert">${message}</p>`;

/** After a successful form: back to a page, with a notice code (303: the browser GETs it). */
export function done(ctx: PageCtx, path: string, code: string): void {
  ctx.status = 303;
  ctx.redirect(`${path}${path.includes('?') ? '&' : '?'}done=${code}`);
}

export const field = (ctx: PageCtx, name: string): string => ctx.state.form?.fields.get(name)?.trim() ?? '';

/** Query parameters kept across filter forms and pager links. */
export function queryOf(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
