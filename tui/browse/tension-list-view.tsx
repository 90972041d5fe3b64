import type { ScreenFooter } from './footer-lines.js';
import type { FrameLine } from './frame-lines.js';
import { HELP_LINE } from './keymap.js';
import { Lines } from './frame.js';
import { listRowLines } from './list-rows.js';
import type { TensionList } from './state.js';
import { oneLine } from '../../engine/text.js';
import { fit } from './text.js';

/** A heading, a hint, then `rows` tension records. */
export function TensionListView({ list, width, rows }: { list: TensionList; width: number; rows: number }) {
  const { port, nav } = list;
  const lines: FrameLine[] = [
    { text: `Tensions · ${list.all ? 'all records' : 'unresolved'}${list.rows ? ` · ${list.rows.length}` : ''}`, style: 'dim' },
    { text: port && !port.available ? '' : 'r resolves the selected tension with a winner', style: 'dim' },
  ];
  const visible = (list.rows ?? []).slice(nav.offset, nav.offset + rows).map((t) => {
    const pair = t.engrams.join(' vs ');
    return `${fit(t.id, 17)} ${fit(t.status, 10)} ${pair}${t.summary ? '  ' + oneLine(t.summary) : ''}`;
  });
  const empty = list.error
    ? `Error: ${list.error}`
    : !port
      ? 'Loading…'
      : !port.available
        ? `Tensions unavailable: ${port.reason}`
        : list.all
          ? 'No tension records'
          : 'No unresolved tensions';
  lines.push(...listRowLines(list.rows?.length ?? 0, visible, nav.cursor, nav.offset, empty, rows));
  return <Lines lines={lines} width={width} count={rows + 2} />;
}

/** The footer: the selected tension. */
export function tensionListFooter({ rows, nav }: TensionList): ScreenFooter {
  const t = rows?.[nav.cursor];
  return { info: t ? { text: `${t.id} · ${t.status} · ${t.engrams.length} engrams` } : null, help: HELP_LINE.tensions };
}
