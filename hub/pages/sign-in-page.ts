import type Router from '@koa/router';
import type { Database } from '../contracts.js';
import { findOrg } from '../data/organizations.js';
import { listProviders } from '../login/identity-providers.js';
import { checkReturnTo } from '../login/login-routes.js';
import { queryText } from '../http/route-kit.js';
import { html } from './html.js';
import { queryOf, renderPage, type PageCtx } from './page-kit.js';

// /sign-in: where the pages send a browser without a session. It asks for the organization (the
// hub never lists its tenants), then offers that organization's sign-in providers.

/** The way in without a provider: a single-use sign-in link (hub/login/login-links.ts). */
const linkHelp = (slug: string) =>
  html`<section class="card"><h2>Sign in with a link</h2><p>No provider, or it does not know you? Ask an admin of ${slug} for a sign-in link, or, on the hub's machine, run <code>svc hub login-link --org ${slug} --user &lt;your name&gt;</code>. A link works once, for 10 minutes. An admin adds sign-in providers on the admin pages.</p></section>`;

export function registerSignInPage(router: Router, db: Database): void {
  router.get('/sign-in', async (ctx) => {
    const page = ctx as unknown as PageCtx;
    const slug = queryText(ctx, 'org')?.trim() ?? '';
    const raw = queryText(ctx, 'return_to');
    let returnTo = '/me/';
    try {
      returnTo = raw === undefined ? returnTo : checkReturnTo(raw);
    } catch {
      // A return address that is not a path here is dropped, not followed.
    }
    const orgForm = html`<form class="stack" method="get" action="/sign-in"><input type="hidden" name="return_to" value="${returnTo}">
<label>Organization <input type="text" name="org" required autocomplete="organization" value="${slug}"></label><div><button type="submit">Continue</button></div></form>`;
    if (!slug) return renderPage(page, { title: 'Sign in', section: 'me', body: html`<section class="card">${orgForm}</section>` });
    const org = await findOrg(db, slug).catch(() => null);
    const providers = org ? await listProviders(db, org) : [];
    const body = providers.length
      ? html`<section class="card"><p>Sign in to <strong>${slug}</strong> with:</p><ul>${providers.map(
          (p) =>
            html`<li><a href="/auth/${slug}/${p.name}/login${queryOf({ return_to: returnTo })}">${p.name}</a> <span class="muted">(${p.kind})</span></li>`,
        )}</ul></section>${linkHelp(slug)}<p><a href="/sign-in${queryOf({ return_to: returnTo })}">Another organization</a></p>`
      : // The same answer for an unknown organization and one without providers: tenants are not listed.
        html`<p class="error" role="alert">No sign-in providers for "${slug}". Check the organization's name.</p>${linkHelp(slug)}<section class="card">${orgForm}</section>`;
    renderPage(page, { title: 'Sign in', section: 'me', body });
  });
}
