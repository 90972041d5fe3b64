import type { KeyHelp } from './keymap.js';
import { displayWidth } from './text.js';

// The frame as data: lines of text with a style. Ink draws them (frame.tsx), and so does the
// first paint before Ink is loaded (first-frame.ts).

export type LineStyle = 'title' | 'selected' | 'dim' | 'bold' | 'error' | 'prompt' | 'accent';

export interface FrameLine {
  text: string;
  style?: LineStyle;
}

const helpWidth = (items: KeyHelp[]) => items.reduce((w, k, i) => w + (i ? 1 : 0) + displayWidth(`${k.keys} ${k.label}`), 0);

/** The help line's items that fit the width (keys are bold, so one space separates items); the tail always stays. */
export function fitHelp(items: KeyHelp[], tail: KeyHelp[], width: number): KeyHelp[] {
  const shown: KeyHelp[] = [];
  for (const item of items) {
    if (helpWidth([...shown, item, ...tail]) > width) break;
    shown.push(item);
  }
  return [...shown, ...tail];
}
