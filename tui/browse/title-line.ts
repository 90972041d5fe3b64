import type { FrameLine } from './frame-lines.js';
import { VIEWS, type View } from './state.js';
import { displayWidth, formatCount } from './text.js';

const VIEW_TITLES: Record<View, string> = { engrams: 'Engrams', episodes: 'Episodes', tensions: 'Tensions', conflicts: 'Conflicts' };

/** Views on the left, what the store holds on the right. */
export function titleLine(view: View, counts: Record<string, number> | null, width: number): FrameLine {
  const tabs = VIEWS.map((v, i) => (v === view ? `[${i + 1} ${VIEW_TITLES[v]}]` : ` ${i + 1} ${VIEW_TITLES[v]} `)).join('');
  let right = '';
  if (counts) {
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const retired = counts.retired ?? 0;
    right = `${formatCount(total - retired)} live · ${formatCount(total)} total `;
  }
  const left = ` svc ${tabs}`;
  const gap = width - displayWidth(left) - displayWidth(right);
  return { text: gap >= 1 ? left + ' '.repeat(gap) + right : left, style: 'title' };
}
