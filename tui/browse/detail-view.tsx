import type { FrameLine } from './frame-lines.js';
import { Lines } from './frame.js';
import type { LazyLines } from './lazy-lines.js';
import { detailTop, type Detail } from './state.js';
import { formatCount } from './text.js';

const TITLES: Record<Detail['kind'], string> = { engram: 'Engram', episode: 'Episode', tension: 'Tension', conflict: 'Sync conflict' };

const targetId = (t: Detail) =>
  t.kind === 'engram' ? t.id : t.kind === 'episode' ? t.episode.id : t.kind === 'tension' ? t.tension.id : t.conflict.id;

/** A title with the position, then `rows` lines of the record from `scroll` (clamped to the end). */
export function DetailView({
  target,
  lines,
  scroll,
  width,
  rows,
}: {
  target: Detail;
  lines: LazyLines;
  scroll: number;
  width: number;
  rows: number;
}) {
  const top = detailTop(scroll, { detailRows: rows, detailLines: lines.count });
  const shown = lines.slice(top, top + rows);
  const total = `${formatCount(lines.count)}${lines.complete ? '' : '+'}`;
  const pos = lines.count > rows || !lines.complete ? ` · lines ${top + 1}-${top + shown.length} of ${total}` : '';
  const body: FrameLine[] = [
    { text: `${TITLES[target.kind]} ${targetId(target)}${pos}`, style: 'bold' },
    ...shown.map((l): FrameLine => ({ text: l.text, style: l.kind === 'heading' ? 'accent' : undefined })),
  ];
  return <Lines lines={body} width={width} count={rows + 1} />;
}
