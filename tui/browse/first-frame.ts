import type { BrowseData, EngramPage } from './data.js';
import { engramListFooter, engramListLines } from './engram-list-lines.js';
import { helpItems, infoLine } from './footer-lines.js';
import type { FrameLine, LineStyle } from './frame-lines.js';
import { frameSize, initialState } from './state.js';
import { fit } from './text.js';
import { titleLine } from './title-line.js';

// The first screen, painted as plain text before Ink and React are loaded (most of the
// start-up): the engram list as the App will draw it from the same state, so the App's
// first frame, written over it, changes nothing on screen.

/** The store, opened, with the list's first page and the counts: what the first screen shows. */
export interface Opened {
  data: BrowseData;
  firstPage: EngramPage;
  counts?: Record<string, number>;
}

const SGR: Record<LineStyle, string> = { title: '7;1', selected: '7', dim: '2', bold: '1', error: '31', prompt: '1;33', accent: '36' };
const styled = (text: string, codes?: string) => (codes ? `\u001B[${codes}m${text}\u001B[0m` : text);

/** The frame's lines, each ending in a newline, as the App draws the list on a `columns` × `rows` terminal. */
export function firstFrame(opened: Opened, columns: number, rows: number): string {
  const { width, listRows } = frameSize(columns, rows);
  const state = initialState(opened.firstPage, opened.counts);
  const screen = engramListFooter(state.engrams, false);
  const lines: FrameLine[] = [titleLine(state.view, state.counts, width), ...engramListLines(state.engrams, false, width, listRows)];
  while (lines.length < listRows + 3) lines.push({ text: '' });
  lines.push(infoLine(state, screen));
  const text = lines.map((l) => styled(fit(l.text, width), l.style && SGR[l.style]));
  const help = helpItems(state, screen, width).map((k, i) => `${i ? ' ' : ''}${styled(k.keys, '1;36')}${styled(` ${k.label}`, '2')}`);
  return [...text, help.join('')].map((l) => l + '\n').join('');
}
