import { perform, refusedPage, type ApiClient } from './api-call.js';
import { secretPage } from './admin-credentials.js';
import type { WebhookView } from '../webhooks/webhook-routes.js';
import { html } from './html.js';
import { csrfField, done, field, notice, renderPage, table, when } from './page-kit.js';
import type { PageRouter } from './page-router.js';

// /admin/webhooks: register (the signing secret shown once), send a test event, read the recent
// deliveries, disable and re-enable, remove.

type Webhook = WebhookView;

interface Delivery {
  id: string;
  event: string;
  event_id: string;
  created_at: string;
  attempts: number;
  state: 'delivered' | 'failed' | 'pending';
  next_at: string | null;
  status: number | null;
  latency_ms: number | null;
  error: string | null;
}

const EVENTS = ['engram.created', 'engram.updated', 'engram.retired', 'pack.installed', 'session.ended', 'audit.entry'];

/** What a receiver must know of delivery, said where webhooks are registered. */
const HOW_DELIVERY_WORKS = html`<section class="card"><h2>How deliveries behave</h2><ul>
<li>At least once: a receiver drops an event id it has handled already.</li>
<li>Order is not kept: retries (exponential backoff) arrive after later events; sort by <code>created_at</code>.</li>
<li>Events raised while a webhook is disabled are never sent, even after it is re-enabled; what was already waiting is.</li>
<li>A delivery carries only what the webhook's creator may read when it is sent; others are kept as withheld.</li>
</ul></section>`;

const stateBadge = (h: Webhook) =>
  h.state === 'active' ? html`<span class="badge ok">active</span>` : html`<span class="badge bad">disabled</span>`;

export function registerWebhookPages(router: PageRouter, api: ApiClient): void {
  router.get('/admin/webhooks', async (ctx) => {
    const v = ctx.state.viewer;
    const hooks = await api.get<{ items: Webhook[] }>(ctx, '/admin/webhooks');
    renderPage(ctx, {
      title: 'Webhooks',
      section: 'admin',
      body: [
        notice(ctx),
        table(
          ['Receiver', 'Events', 'State', 'Last success', ['Waiting', 'num'], 'Registered'],
          hooks.items.map(
            (
              h,
            ) => html`<tr><td class="mono"><a href="/admin/webhooks/${encodeURIComponent(h.id)}">${h.url}</a></td><td>${h.events.join(', ')}</td><td>${stateBadge(h)}</td>
<td>${when(h.last_success_at)}</td><td class="num">${h.pending}</td><td>${when(h.created_at)} <span class="muted">by ${h.created_by}</span></td></tr>`,
          ),
          'No webhooks yet.',
        ),
        html`<section class="card"><h2>Register a webhook</h2><form class="stack" method="post" action="/admin/webhooks">${csrfField(v)}
<label>Receiver URL <input type="url" name="url" required placeholder="https://example.com/hooks/svc"></label>
<fieldset><legend>Events</legend>${EVENTS.map((e) => html`<label class="check"><input type="checkbox" name="events" value="${e}"${e.startsWith('engram.') ? html` checked` : null}> ${e}</label>`)}</fieldset>
<div><button type="submit">Register webhook</button></div></form></section>`,
        HOW_DELIVERY_WORKS,
      ],
    });
  });

  router.post('/admin/webhooks', async (ctx) => {
    const r = await api.call<Webhook & { secret: string }>(ctx, 'POST', '/admin/webhooks', {
      json: { url: field(ctx, 'url'), events: ctx.state.form!.fields.getAll('events') },
    });
    if (!r.ok) return refusedPage(ctx, r, '/admin/webhooks');
    secretPage(ctx, {
      title: 'Webhook registered',
      section: 'admin',
      what: 'the signing secret',
      secret: r.body.secret,
      back: `/admin/webhooks/${encodeURIComponent(r.body.id)}`,
      backLabel: 'Go to the webhook',
      extra: html`<p>The receiver checks each delivery's <code>webhook-signature</code> with it (Standard Webhooks).</p>`,
    });
  });

  router.get('/admin/webhooks/:id', async (ctx) => {
    const v = ctx.state.viewer;
    const h = await api.get<Webhook & { deliveries: Delivery[] }>(ctx, `/admin/webhooks/${encodeURIComponent(ctx.params.id!)}`);
    const base = `/admin/webhooks/${encodeURIComponent(h.id)}`;
    renderPage(ctx, {
      title: 'Webhook',
      section: 'admin',
      body: [
        notice(ctx),
        html`<section class="card"><dl class="fields"><dt>Receiver</dt><dd class="mono">${h.url}</dd><dt>Events</dt><dd>${h.events.join(', ')}</dd>
<dt>State</dt><dd>${stateBadge(h)}${h.disabled_reason ? html` <span class="muted">${h.disabled_reason}</span>` : null}</dd><dt>Registered</dt><dd>${when(h.created_at)} by ${h.created_by}</dd>
<dt>Last success</dt><dd>${when(h.last_success_at)}</dd></dl>
<div class="actions">
<form class="inline" method="post" action="${base}/test">${csrfField(v)}<button type="submit">Send a test event</button></form>
<form class="inline" method="post" action="${base}/state">${csrfField(v)}<input type="hidden" name="state" value="${h.state === 'active' ? 'disabled' : 'active'}"><button type="submit" class="secondary">${h.state === 'active' ? 'Disable' : 'Re-enable'}</button></form>
<form class="inline" method="post" action="${base}/remove" data-confirm="Remove this webhook? Deliveries waiting for it are dropped.">${csrfField(v)}<button type="submit" class="danger">Remove</button></form>
</div></section>`,
        html`<h2>Recent deliveries</h2>`,
        table(
          ['Event', 'Created', 'State', ['Attempts', 'num'], ['Status', 'num'], ['Latency', 'num'], 'Error'],
          h.deliveries.map(
            (d) => html`<tr><td>${d.event} <span class="muted mono">${d.event_id}</span></td><td>${when(d.created_at)}</td>
<td><span class="badge ${d.state === 'delivered' ? 'ok' : d.state === 'failed' ? 'bad' : ''}">${d.state}</span>${d.next_at ? html` <span class="muted">next ${when(d.next_at)}</span>` : null}</td>
<td class="num">${d.attempts}</td><td class="num">${d.status ?? '—'}</td><td class="num">${d.latency_ms === null ? '—' : `${d.latency_ms} ms`}</td><td>${d.error ?? ''}</td></tr>`,
          ),
          'Nothing sent yet.',
        ),
        html`<p><a href="/admin/webhooks">All webhooks</a></p>`,
      ],
    });
  });

  router.post('/admin/webhooks/:id/test', async (ctx) => {
    const back = `/admin/webhooks/${encodeURIComponent(ctx.params.id!)}`;
    const r = await api.call<{ delivered: boolean }>(ctx, 'POST', `${back}/test`);
    if (!r.ok) return refusedPage(ctx, r, back);
    done(ctx, back, r.body.delivered ? 'test-delivered' : 'test-failed');
  });

  router.post('/admin/webhooks/:id/state', async (ctx) => {
    const back = `/admin/webhooks/${encodeURIComponent(ctx.params.id!)}`;
    await perform(ctx, api, 'PATCH', back, { json: { state: field(ctx, 'state') } }, back, 'webhook-changed');
  });

  router.post('/admin/webhooks/:id/remove', async (ctx) => {
    await perform(ctx, api, 'DELETE', `/admin/webhooks/${encodeURIComponent(ctx.params.id!)}`, {}, '/admin/webhooks', 'webhook-removed');
  });
}
