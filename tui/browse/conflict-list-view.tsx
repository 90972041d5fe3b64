import { conflictSubject } from './conflicts.js';
import type { ScreenFooter } from './footer-lines.js';
import type { FrameLine } from './frame-lines.js';
import { HELP_LINE } from './keymap.js';
import { Lines } from './frame.js';
import { listRowLines } from './list-rows.js';
import type { ConflictList } from './state.js';
import { fit } from './text.js';

/** A heading, a hint, then `rows` sync conflicts, oldest first. */
export function ConflictListView({ list, width, rows }: { list: ConflictList; width: number; rows: number }) {
  const { nav } = list;
  const lines: FrameLine[] = [
    { text: `Sync conflicts${list.rows ? ` · ${list.rows.length}` : ''}`, style: 'dim' },
    { text: "c keeps the current version, o takes the other machine's; svc sync shares the choice", style: 'dim' },
  ];
  const visible = (list.rows ?? [])
    .slice(nav.offset, nav.offset + rows)
    .map((c) => `${c.detectedAt.replace('T', ' ').slice(0, 16)}  ${fit(c.detectedOn, 8)} ${conflictSubject(c)}`);
  const empty = list.error ? `Error: ${list.error}` : list.rows ? 'No sync conflicts' : 'Loading…';
  lines.push(...listRowLines(list.rows?.length ?? 0, visible, nav.cursor, nav.offset, empty, rows));
  return <Lines lines={lines} width={width} count={rows + 2} />;
}

/** The footer: the selected record. */
export function conflictListFooter({ rows, nav }: ConflictList): ScreenFooter {
  const c = rows?.[nav.cursor];
  return { info: c ? { text: `${c.id} · ${c.path}` } : null, help: HELP_LINE.conflicts };
}
