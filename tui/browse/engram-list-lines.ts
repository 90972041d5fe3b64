import { ALL_STORES } from './data.js';
import type { ScreenFooter } from './footer-lines.js';
import type { FrameLine } from './frame-lines.js';
import { HELP_LINE } from './keymap.js';
import { listRowLines } from './list-rows.js';
import { pageKey, type EngramList } from './state.js';
import { displayWidth, fit, formatCount, truncate } from './text.js';

const TYPE_ABBR: Record<string, string> = { behavioral: 'beh', terminological: 'ter', procedural: 'pro', architectural: 'arc' };
const STATUS_MARK: Record<string, string> = { active: ' ', candidate: 'c', dormant: 'z', retired: 'x' };

const engramsText = (shown: string, n: number) => `${shown} ${n === 1 ? 'engram' : 'engrams'}`;

/** The filters, the search line, then `rows` rows of engrams. */
export function engramListLines(list: EngramList, searching: boolean, width: number, rows: number): FrameLine[] {
  const { filters, page, query, activeQuery, nav } = list;
  const label = (name: string, value: string | null, fallback: string) => `${name}:${value ?? fallback}`;
  const cell = (s: string) => truncate(s, 22);
  const filtered = filters.scope || filters.type || filters.domain || filters.status !== 'live' || filters.store !== ALL_STORES;
  const lines: FrameLine[] = [
    {
      text: [
        cell(label('scope', filters.scope, 'all')),
        cell(label('type', filters.type, 'all')),
        cell(label('domain', filters.domain, 'all')),
        label('status', filters.status, 'live'),
        label('store', filters.store, ALL_STORES),
      ].join('  '),
      style: filtered ? 'accent' : 'dim',
    },
  ];
  const count =
    !page || list.pageFor !== pageKey(filters, activeQuery)
      ? 'loading…'
      : activeQuery
        ? `${formatCount(page.rows.length)}${page.complete ? '' : '+'} found`
        : page.total !== undefined
          ? engramsText(formatCount(page.total), page.total)
          : engramsText(`${formatCount(page.rows.length)}${page.complete ? '' : '+'}`, page.rows.length);
  if (searching || query) {
    const tail = `${count}${query !== activeQuery ? ' …' : ''} `;
    lines.push({
      text: fit(`/ ${query}${searching ? '▏' : ''}`, Math.max(1, width - displayWidth(tail))) + tail,
      style: searching ? 'prompt' : undefined,
    });
  } else {
    const tail = `${count} `;
    lines.push({ text: fit('/ to search (BM25)', Math.max(1, width - displayWidth(tail))) + tail, style: 'dim' });
  }
  const { scopeW, domainW } = columnWidths(page?.rows ?? [], width);
  const visible = (page?.rows ?? []).slice(nav.offset, nav.offset + rows).map((r) => {
    const marks = `${STATUS_MARK[r.status] ?? '?'}${r.pinned ? '*' : ' '}`;
    const cols = [marks, TYPE_ABBR[r.type] ?? fit(r.type, 3), fit(r.scope, scopeW)];
    if (domainW) cols.push(fit(r.domain ?? '', domainW));
    return `${cols.join(' ')} ${r.statement}`;
  });
  const empty = list.error
    ? `Error: ${list.error}`
    : !page
      ? 'Loading…'
      : !activeQuery
        ? 'No engrams'
        : filters.status === 'retired'
          ? 'Search never returns retired engrams: Esc clears the search to list them'
          : `No engram matches "${activeQuery}"`;
  lines.push(...listRowLines(page?.rows.length ?? 0, visible, nav.cursor, nav.offset, empty, rows));
  return lines;
}

/**
 * The scope and domain columns: as wide as the longest loaded value (so they stay put while
 * scrolling), within a share of the terminal: "project:my-service" is whole on a wide one and
 * cut only where the statement would otherwise get too little room.
 */
export function columnWidths(
  rows: ReadonlyArray<{ scope: string; domain?: string | null }>,
  width: number,
): { scopeW: number; domainW: number } {
  if (width < 70) return { scopeW: 8, domainW: 0 };
  const longest = (values: string[]) => Math.max(0, ...values.map(displayWidth));
  const scopeW = Math.min(Math.max(12, Math.floor(width * 0.2)), Math.max(6, longest(rows.map((r) => r.scope))));
  const domainW = Math.min(Math.max(16, Math.floor(width * 0.15)), longest(rows.map((r) => r.domain ?? '')));
  return { scopeW, domainW };
}

/** The footer: the selected engram, its position first (a long id or domain is what gets cut at the edge). */
export function engramListFooter({ page, nav }: EngramList, searching: boolean): ScreenFooter {
  const help = searching ? HELP_LINE.search : HELP_LINE.engrams;
  const row = page?.rows[nav.cursor];
  if (!page || !row) return { info: null, help };
  const position = `${formatCount(nav.cursor + 1)}/${formatCount(page.total ?? page.rows.length)}${page.complete || page.total !== undefined ? '' : '+'}`;
  return {
    info: {
      text: `${position}  ${row.id} · ${row.status}${row.pinned ? ' · pinned' : ''} · ${row.type} · ${row.scope}${row.domain ? ' · ' + row.domain : ''}`,
    },
    help,
  };
}
