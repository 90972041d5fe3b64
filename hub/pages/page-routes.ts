import type Koa from 'koa';
import type { Middleware } from 'koa';
import type { AuditWriter } from '../audit/audit-log.js';
import type { Database } from '../contracts.js';
import type { HubConfig } from '../config.js';
import type { Gatekeeper } from '../http/gatekeeper.js';
import type { HubLogger } from '../observe/logger.js';
import { ApiClient } from './api-call.js';
import { registerAuditPages } from './admin-audit.js';
import { registerCredentialPages } from './admin-credentials.js';
import { registerEngramPages } from './admin-engrams.js';
import { registerPeoplePages } from './admin-people.js';
import { registerWebhookPages } from './admin-webhooks.js';
import { browserGate, isPagePath } from './browser-gate.js';
import { registerMePages } from './me-pages.js';
import { newPageRouter } from './page-router.js';

// The admin UI (/admin/) and the portal (/me/): the gate (browser-gate.ts), then the pages. A
// request for a page path ends here; everything else goes on down the hub's chain.

export interface PageDeps {
  app: Koa;
  db: Database;
  config: HubConfig;
  gatekeeper: Gatekeeper;
  audit: AuditWriter;
  log: HubLogger;
}

export function pageSurface(deps: PageDeps): Middleware {
  const api = new ApiClient(deps.app);
  const router = newPageRouter();
  registerEngramPages(router, api);
  registerPeoplePages(router, api);
  registerCredentialPages(router, api);
  registerWebhookPages(router, api);
  registerAuditPages(router, api);
  registerMePages(router, { api, db: deps.db, config: deps.config, audit: deps.audit });
  const gate = browserGate(deps);
  const routes = router.routes() as unknown as Middleware;
  return (ctx, next) => (isPagePath(ctx.path) ? gate(ctx as never, () => routes(ctx, async () => undefined)) : next());
}
