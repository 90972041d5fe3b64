import type { FrameLine } from './frame-lines.js';

/**
 * The rows of a list window. `visible` holds the formatted rows of the window only, starting
 * at `offset`: only what is on screen is formatted and rendered.
 */
export function listRowLines(total: number, visible: string[], cursor: number, offset: number, empty: string, rows: number): FrameLine[] {
  if (total === 0) return [{ text: empty, style: 'dim' }];
  return Array.from({ length: rows }, (_, i): FrameLine => {
    const text = visible[i];
    if (text === undefined) return { text: '' };
    const selected = offset + i === cursor;
    // The cursor is marked twice: reverse video, and a › for terminals without it.
    return { text: `${selected ? '›' : ' '}${text}`, style: selected ? 'selected' : undefined };
  });
}
