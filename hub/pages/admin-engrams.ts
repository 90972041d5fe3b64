import type { Insights } from '../data/insights.js';
import { ENGRAM_STATUSES, ENGRAM_TYPES } from '../../engine/model/engram-types.js';
import { perform, refusedPage, type ApiClient } from './api-call.js';
import { AUDIT_HEADERS, auditRows, type AuditRow } from './admin-audit.js';
import { html, type Html } from './html.js';
import { csrfField, errorBox, field, notice, queryOf, renderPage, table, when, type PageCtx } from './page-kit.js';
import { queryText } from '../http/route-kit.js';
import type { PageRouter } from './page-router.js';

// /admin/ (the overview), /admin/engrams (listed by filters, never searched: the spec keeps
// free-form search out of the UI; one engram's every field and its history; retire and pin after
// a confirmation) and /admin/packs (install an exported pack by upload, uninstall).

export interface Engram {
  id: string;
  status: string;
  type: string;
  scope: string;
  statement: string;
  domain?: string;
  pinned?: boolean;
  temporal?: { learned_at?: string };
  [field: string]: unknown;
}

interface HistoryEvent {
  at: string;
  action: string;
  session?: string;
  changed?: string[];
  details?: Record<string, unknown>;
}

interface Pack {
  name: string;
  version: number;
  description: string;
  creator: string;
  installed_at: string;
  engram_count: number;
  state: string;
}

const counts = (title: string, m: Record<string, number>): Html =>
  html`<section class="card"><h2>${title}</h2>${
    Object.keys(m).length
      ? html`<table><tbody>${Object.entries(m)
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => html`<tr><th scope="row">${k}</th><td class="num">${n}</td></tr>`)}</tbody></table>`
      : html`<p class="empty">None yet.</p>`
  }</section>`;

const option = (value: string, selected: string | undefined, label = value): Html =>
  html`<option value="${value}"${value === selected ? html` selected` : null}>${label}</option>`;

/** A list of engrams as a table, each linking to its page under `base`. */
export function engramTable(rows: Engram[], base: string, empty: string): Html {
  return table(
    ['Engram', 'Statement', 'Type', 'Scope', 'Status', 'Learned'],
    rows.map(
      (
        e,
      ) => html`<tr><td class="mono"><a href="${base}/${encodeURIComponent(e.id)}">${e.id}</a>${e.pinned ? html` <span class="badge">pinned</span>` : null}</td><td>${e.statement}</td><td>${e.type}</td>
<td class="mono">${e.scope}</td><td>${e.status}</td><td>${when(e.temporal?.learned_at)}</td></tr>`,
    ),
    empty,
  );
}

/** Every field of an engram: scalars as text, the rest as YAML. */
export async function engramFields(e: Engram): Promise<Html> {
  const { stringify } = await import('yaml');
  return html`<dl class="fields">${Object.entries(e).map(
    ([k, v]) => html`<dt>${k}</dt><dd>${v !== null && typeof v === 'object' ? html`<pre>${stringify(v).trimEnd()}</pre>` : String(v)}</dd>`,
  )}</dl>`;
}

export function historyTable(events: HistoryEvent[]): Html {
  return table(
    ['When', 'Change', 'Fields', 'Details'],
    events.map(
      (ev) =>
        html`<tr><td>${when(ev.at)}</td><td>${ev.action}</td><td>${(ev.changed ?? []).join(', ')}</td><td class="mono">${ev.details && Object.keys(ev.details).length ? JSON.stringify(ev.details) : ''}</td></tr>`,
    ),
    'No recorded changes.',
  );
}

const ACTIONS = {
  retire: {
    title: 'Retire',
    question: 'Retire this engram? It stops being recalled and injected; its history stays.',
    call: (id: string) => ['DELETE', `/engrams/${id}`, undefined] as const,
    code: 'engram-retired',
  },
  pin: {
    title: 'Pin',
    question: 'Pin this engram? It is injected in every session of the scopes that read it, whatever the prompt.',
    call: (id: string) => ['POST', `/engrams/${id}/pin`, { pinned: true }] as const,
    code: 'engram-pinned',
  },
  unpin: {
    title: 'Unpin',
    question: 'Unpin this engram? It is injected only when relevant again.',
    call: (id: string) => ['POST', `/engrams/${id}/pin`, { pinned: false }] as const,
    code: 'engram-unpinned',
  },
};
type ActionName = keyof typeof ACTIONS;
const actionOf = (name: string | undefined): (typeof ACTIONS)[ActionName] | undefined =>
  name && Object.hasOwn(ACTIONS, name) ? ACTIONS[name as ActionName] : undefined;

async function packUpload(ctx: PageCtx): Promise<{ body: Buffer; contentType: string } | string> {
  const file = ctx.state.form!.files.get('pack');
  if (!file || file.data.length === 0) return 'choose the pack file to upload (the JSON that `POST /api/v1/packs/export` answers)';
  let doc: { files?: Array<{ path?: unknown; content?: unknown }> };
  try {
    doc = JSON.parse(file.data.toString('utf8'));
  } catch {
    return `${file.filename} is not JSON: upload the file a pack export answers ({"files": [{"path", "content"}]})`;
  }
  if (!Array.isArray(doc.files) || doc.files.some((f) => typeof f?.path !== 'string' || typeof f?.content !== 'string')) {
    return `${file.filename} has no "files" list of {path, content}: upload the file a pack export answers`;
  }
  // The REST route takes the pack as one multipart part per file, named by its path.
  const form = new FormData();
  for (const f of doc.files as Array<{ path: string; content: string }>) form.append(f.path, new Blob([f.content]), f.path);
  const request = new Request('http://hub.invalid/', { method: 'POST', body: form });
  return { body: Buffer.from(await request.arrayBuffer()), contentType: request.headers.get('content-type')! };
}

export function registerEngramPages(router: PageRouter, api: ApiClient): void {
  router.get('/admin/', async (ctx) => {
    const [ins, recent] = await Promise.all([
      api.get<Insights>(ctx, '/admin/insights'),
      api.get<{ items: AuditRow[] }>(ctx, '/admin/audit?order=desc&limit=10&changes=true'),
    ]);
    renderPage(ctx, {
      title: 'Overview',
      section: 'admin',
      body: [
        html`<section class="card"><dl class="fields"><dt>Engrams</dt><dd>${ins.engrams}</dd><dt>Candidates to review</dt><dd>${ins.candidates}</dd>
<dt>Never used</dt><dd>${ins.never_used} <span class="muted">(live, never injected, hit or rated)</span></dd><dt>Stale</dt><dd>${ins.stale} <span class="muted">(not used in 90 days)</span></dd>
<dt>Feedback</dt><dd>${ins.feedback.positive} positive, ${ins.feedback.negative} negative, ${ins.feedback.neutral} neutral</dd></dl></section>`,
        html`<div class="stats">${counts('By status', ins.by_status)}${counts('By type', ins.by_type)}${counts('By scope', ins.by_scope)}</div>`,
        html`<h2>Recent changes</h2>`,
        table(AUDIT_HEADERS, auditRows(recent.items), 'Nothing has changed yet.'),
        html`<p><a href="/admin/audit">The whole audit log</a> (reads and page views included)</p>`,
      ],
    });
  });

  router.get('/admin/engrams', async (ctx) => {
    const f = {
      scope: queryText(ctx, 'scope'),
      status: queryText(ctx, 'status'),
      type: queryText(ctx, 'type'),
      domain: queryText(ctx, 'domain'),
    };
    const [page, scopes] = await Promise.all([
      api.call<{ items: Engram[]; next_cursor: string | null }>(
        ctx,
        'GET',
        `/engrams${queryOf({ ...f, limit: '50', cursor: queryText(ctx, 'cursor') })}`,
      ),
      api.get<{ items: Array<{ scope: string; engrams: number }> }>(ctx, '/me/scopes'),
    ]);
    renderPage(ctx, {
      title: 'Engrams',
      section: 'admin',
      body: [
        notice(ctx),
        html`<form class="filters" method="get" action="/admin/engrams">
<label>Scope <select name="scope">${option('', f.scope, 'any')}${scopes.items.map((s) => option(s.scope, f.scope, `${s.scope} (${s.engrams})`))}</select></label>
<label>Status <select name="status">${option('', f.status, 'any')}${ENGRAM_STATUSES.map((s) => option(s, f.status))}</select></label>
<label>Type <select name="type">${option('', f.type, 'any')}${ENGRAM_TYPES.map((s) => option(s, f.type))}</select></label>
<label>Domain (exact) <input type="text" name="domain" value="${f.domain ?? ''}"></label>
<button type="submit">List</button> <a href="/admin/engrams">Clear</a></form>`,
        page.ok ? null : errorBox(page.problem!),
        engramTable(page.ok ? page.body.items : [], '/admin/engrams', 'No engrams match these filters.'),
        page.ok && page.body.next_cursor
          ? html`<p class="pager"><a href="/admin/engrams${queryOf({ ...f, cursor: page.body.next_cursor })}">Next page</a></p>`
          : null,
      ],
    });
  });

  router.get('/admin/engrams/:id', async (ctx) => {
    const id = encodeURIComponent(ctx.params.id!);
    const [e, history] = await Promise.all([
      api.get<Engram>(ctx, `/engrams/${id}`),
      api.get<{ items: HistoryEvent[] }>(ctx, `/engrams/${id}/history`),
    ]);
    const base = `/admin/engrams/${id}`;
    renderPage(ctx, {
      title: e.id,
      section: 'admin',
      body: [
        notice(ctx),
        html`<p class="lead">${e.statement}</p><div class="actions">${e.status !== 'retired' ? html`<a href="${base}/retire">Retire…</a>` : null}${e.pinned ? html`<a href="${base}/unpin">Unpin…</a>` : html`<a href="${base}/pin">Pin…</a>`}<a href="/admin/engrams">All engrams</a></div>`,
        html`<h2>Fields</h2><section class="card">${await engramFields(e)}</section>`,
        html`<h2>History</h2>`,
        historyTable(history.items),
      ],
    });
  });

  // A confirmation page, then the POST: works without the script's confirm() too.
  router.get('/admin/engrams/:id/:action', async (ctx) => {
    const action = actionOf(ctx.params.action);
    if (!action) return;
    const id = encodeURIComponent(ctx.params.id!);
    const e = await api.get<Engram>(ctx, `/engrams/${id}`);
    renderPage(ctx, {
      title: `${action.title} ${e.id}?`,
      section: 'admin',
      body: html`<section class="card"><p>${e.statement}</p><p>${action.question}</p>
<form method="post" action="/admin/engrams/${id}/${ctx.params.action}">${csrfField(ctx.state.viewer)}<div class="actions"><button type="submit" class="${ctx.params.action === 'retire' ? 'danger' : ''}">${action.title}</button><a href="/admin/engrams/${id}">Cancel</a></div></form></section>`,
    });
  });

  router.post('/admin/engrams/:id/:action', async (ctx) => {
    const action = actionOf(ctx.params.action);
    if (!action) return;
    const id = encodeURIComponent(ctx.params.id!);
    const [method, path, json] = action.call(id);
    await perform(ctx, api, method, path, json === undefined ? {} : { json }, `/admin/engrams/${id}`, action.code);
  });

  router.get('/admin/packs', async (ctx) => {
    const v = ctx.state.viewer;
    const packs = await api.get<{ items: Pack[] }>(ctx, '/packs');
    renderPage(ctx, {
      title: 'Packs',
      section: 'admin',
      body: [
        notice(ctx),
        table(
          ['Pack', 'Version', 'Creator', ['Engrams', 'num'], 'Installed', ''],
          packs.items.map(
            (
              p,
            ) => html`<tr><td>${p.name}${p.state === 'installing' ? html` <span class="badge bad">install interrupted</span>` : null}<br><span class="muted">${p.description}</span></td><td>${p.version}</td><td>${p.creator}</td><td class="num">${p.engram_count}</td><td>${when(p.installed_at)}</td>
<td><form class="inline" method="post" action="/admin/packs/${encodeURIComponent(p.name)}/uninstall" data-confirm="Uninstall ${p.name}? Its engrams are removed from this organization.">${csrfField(v)}<button type="submit" class="danger">Uninstall</button></form></td></tr>`,
          ),
          'No packs installed.',
        ),
        html`<section class="card"><h2>Install a pack</h2><form class="stack" method="post" action="/admin/packs" enctype="multipart/form-data">${csrfField(v)}
<label>Pack file (the JSON a pack export answers) <input type="file" name="pack" accept="application/json,.json" required></label>
<label class="check"><input type="checkbox" name="allow_untrusted" value="true"> Install although nobody this hub trusts signed it</label>
<div><button type="submit">Install</button></div></form></section>`,
      ],
    });
  });

  router.post('/admin/packs', async (ctx) => {
    const upload = await packUpload(ctx);
    if (typeof upload === 'string')
      return renderPage(ctx, {
        title: 'Packs',
        section: 'admin',
        status: 400,
        body: [errorBox(upload), html`<p><a href="/admin/packs">Back</a></p>`],
      });
    const untrusted = field(ctx, 'allow_untrusted') === 'true';
    const r = await api.call<{ name: string; version: number; action: string; created: unknown[]; updated: unknown[] }>(
      ctx,
      'POST',
      `/packs${untrusted ? '?allow_untrusted=true' : ''}`,
      { raw: upload },
    );
    if (!r.ok) return refusedPage(ctx, r, '/admin/packs');
    renderPage(ctx, {
      title: `Pack ${r.body.name} ${r.body.action}`,
      section: 'admin',
      body: html`<p class="notice" role="status">Version ${r.body.version}: ${r.body.created.length} engrams created, ${r.body.updated.length} updated.</p><p><a href="/admin/packs">Back to packs</a></p>`,
    });
  });

  router.post('/admin/packs/:name/uninstall', async (ctx) => {
    await perform(ctx, api, 'DELETE', `/packs/${encodeURIComponent(ctx.params.name!)}`, {}, '/admin/packs', 'pack-uninstalled');
  });
}
