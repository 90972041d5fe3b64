import type { FrameLine } from './frame-lines.js';
import { Lines } from './frame.js';
import { KEY_SCREEN } from './keymap.js';
import { fit, truncateStart } from './text.js';

const KEY_W = 12;

/** The `?` screen: every key, by section, and the store's path. */
export function KeyScreen({ root, width, rows }: { root: string; width: number; rows: number }) {
  const lines: FrameLine[] = [{ text: `Keys · store ${truncateStart(root, Math.max(10, width - 17))}`, style: 'bold' }];
  for (const [keys, what] of KEY_SCREEN)
    lines.push(what === '' ? { text: keys, style: 'accent' } : { text: `  ${fit(keys, KEY_W)} ${what}` });
  return <Lines lines={lines} width={width} count={rows + 1} />;
}
