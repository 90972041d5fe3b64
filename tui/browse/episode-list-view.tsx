import type { ScreenFooter } from './footer-lines.js';
import type { FrameLine } from './frame-lines.js';
import { HELP_LINE } from './keymap.js';
import { Lines } from './frame.js';
import { listRowLines } from './list-rows.js';
import type { EpisodeList } from './state.js';
import { oneLine } from '../../engine/text.js';
import { fit, formatCount } from './text.js';

/** The timeline: a heading, the search line, then `rows` episodes, newest first. */
export function EpisodeListView({ list, searching, width, rows }: { list: EpisodeList; searching: boolean; width: number; rows: number }) {
  const { page, query, activeQuery, nav } = list;
  const count =
    !page || list.pageFor !== activeQuery
      ? 'loading…'
      : `${formatCount(page.rows.length)}${page.complete ? '' : '+'} ${activeQuery ? 'found' : 'loaded'}`;
  const lines: FrameLine[] = [
    { text: `Episodes, newest first · ${count}`, style: 'dim' },
    searching || query
      ? { text: `/ ${query}${searching ? '▏' : ''}${query !== activeQuery ? ' …' : ''}`, style: searching ? 'prompt' : undefined }
      : { text: '/ to search summaries', style: 'dim' },
  ];
  const visible = (page?.rows ?? [])
    .slice(nav.offset, nav.offset + rows)
    .map((e) => `${e.at.replace('T', ' ').slice(0, 16)}  ${fit(e.agent, 10)} ${oneLine(e.summary)}`);
  const empty = list.error
    ? `Error: ${list.error}`
    : page
      ? activeQuery
        ? `No episode matches "${activeQuery}"`
        : 'No episodes yet (svc capture records one)'
      : 'Loading…';
  lines.push(...listRowLines(page?.rows.length ?? 0, visible, nav.cursor, nav.offset, empty, rows));
  return <Lines lines={lines} width={width} count={rows + 2} />;
}

/** The footer: the selected episode. */
export function episodeListFooter({ page, nav }: EpisodeList, searching: boolean): ScreenFooter {
  const ep = page?.rows[nav.cursor];
  const info = ep
    ? {
        text: `${ep.id}${ep.session ? ' · session ' + ep.session : ''}${ep.engram_ids?.length ? ` · ${ep.engram_ids.length} engrams` : ''}`,
      }
    : null;
  return { info, help: searching ? HELP_LINE.search : HELP_LINE.episodes };
}
