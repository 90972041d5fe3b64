import type { AuditRow } from '../audit/audit-log.js';
import type { ApiClient } from './api-call.js';
import { html, type Html } from './html.js';
import { notice, queryOf, renderPage, table, when } from './page-kit.js';
import { queryText } from '../http/route-kit.js';
import type { PageRouter } from './page-router.js';

// /admin/audit: the log, newest first, filtered and paged; and whether its hash chain holds,
// naming the first row that breaks it.

export type { AuditRow };

interface Verification {
  ok: boolean;
  rows: number;
  first_bad?: { seq: number; problem: string };
  gaps: Array<{ seq: number; lost: number; reason: string }>;
  unfinished: Array<{ writer: string; started_seq: number }>;
}

const FILTERS = ['actor', 'action', 'resource', 'from', 'to'] as const;

export function auditRows(rows: AuditRow[]): Html[] {
  return rows.map(
    (
      r,
    ) => html`<tr><td class="num">${r.seq}</td><td>${when(r.at)}</td><td>${r.actor}</td><td class="mono">${r.action}</td><td class="mono">${r.resource ?? ''}</td>
<td class="num"><span class="badge ${r.outcome < 400 ? 'ok' : 'bad'}">${r.outcome}</span></td><td class="mono">${Object.keys(r.details ?? {}).length ? JSON.stringify(r.details) : ''}</td></tr>`,
  );
}

export const AUDIT_HEADERS: Array<string | [string, 'num']> = [
  ['#', 'num'],
  'When',
  'Actor',
  'Action',
  'Resource',
  ['Outcome', 'num'],
  'Details',
];

function verificationBox(v: Verification): Html {
  if (v.first_bad) {
    return html`<div class="error" role="alert"><strong>The chain is broken at row ${v.first_bad.seq}:</strong> ${v.first_bad.problem}. Rows before it (${v.first_bad.seq - 1}) verify.</div>`;
  }
  const notes: Html[] = [];
  for (const g of v.gaps)
    notes.push(html`<li>row ${g.seq} records ${g.lost} lost ${g.lost === 1 ? 'entry' : 'entries'} (${g.reason})</li>`);
  for (const w of v.unfinished)
    notes.push(
      html`<li>writer ${w.writer} (from row ${w.started_seq}) has recorded no stop: it is still running, or it crashed and reads queued there may be missing</li>`,
    );
  return html`<div class="notice" role="status"><strong>The chain verifies:</strong> all ${v.rows} rows are signed and linked.${notes.length ? html`<ul>${notes}</ul>` : null}</div>`;
}

export function registerAuditPages(router: PageRouter, api: ApiClient): void {
  router.get('/admin/audit', async (ctx) => {
    const filters = Object.fromEntries(FILTERS.map((f) => [f, queryText(ctx, f)])) as Record<(typeof FILTERS)[number], string | undefined>;
    const [page, verification] = await Promise.all([
      api.call<{ items: AuditRow[]; next_cursor: string | null }>(
        ctx,
        'GET',
        `/admin/audit${queryOf({ ...filters, order: 'desc', limit: '50', cursor: queryText(ctx, 'cursor') })}`,
      ),
      api.get<Verification>(ctx, '/admin/audit/verify'),
    ]);
    const rows = page.ok ? page.body.items : [];
    renderPage(ctx, {
      title: 'Audit log',
      section: 'admin',
      body: [
        notice(ctx),
        verificationBox(verification),
        html`<form class="filters" method="get" action="/admin/audit">
<label>Actor <input type="text" name="actor" value="${filters.actor ?? ''}"></label>
<label>Action <input type="text" name="action" value="${filters.action ?? ''}" placeholder="POST /api/v1/engrams"></label>
<label>Resource <input type="text" name="resource" value="${filters.resource ?? ''}" placeholder="engram:ENG-…"></label>
<label>From (ISO 8601, UTC) <input type="text" name="from" value="${filters.from ?? ''}" placeholder="2026-01-31"></label>
<label>To <input type="text" name="to" value="${filters.to ?? ''}"></label>
<button type="submit">Filter</button> <a href="/admin/audit">Clear</a></form>`,
        page.ok ? null : html`<p class="error" role="alert">${page.problem}</p>`,
        table(AUDIT_HEADERS, auditRows(rows), 'No audit rows match.'),
        page.ok && page.body.next_cursor
          ? html`<p class="pager"><a href="/admin/audit${queryOf({ ...filters, cursor: page.body.next_cursor })}">Older rows</a></p>`
          : null,
      ],
    });
  });
}
