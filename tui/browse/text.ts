// Terminal text helpers for the browser: display width (wide East Asian characters take two
// columns, combining marks none), truncation and word wrapping. The
// layout never relies on Ink to wrap: every line is cut to the width before it is rendered.

import { oneLine } from '../../engine/text.js';

/** Columns a code point takes: 0 (combining, zero-width), 2 (wide, fullwidth, emoji) or 1. */
export function charWidth(cp: number): number {
  if (cp === 0) return 0;
  if (cp < 32 || (cp >= 0x7f && cp < 0xa0)) return 0;
  if (
    (cp >= 0x0300 && cp <= 0x036f) || // combining diacritics
    (cp >= 0x0483 && cp <= 0x0489) ||
    (cp >= 0x0591 && cp <= 0x05bd) ||
    (cp >= 0x0610 && cp <= 0x061a) ||
    (cp >= 0x064b && cp <= 0x065f) ||
    (cp >= 0x0e31 && cp <= 0x0e3a && cp !== 0x0e32 && cp !== 0x0e33) ||
    (cp >= 0x1ab0 && cp <= 0x1aff) ||
    (cp >= 0x1dc0 && cp <= 0x1dff) ||
    (cp >= 0x200b && cp <= 0x200f) || // zero-width space, joiners, marks
    (cp >= 0x20d0 && cp <= 0x20ff) ||
    (cp >= 0xfe00 && cp <= 0xfe0f) || // variation selectors
    (cp >= 0xfe20 && cp <= 0xfe2f) ||
    cp === 0xfeff ||
    (cp >= 0xe0100 && cp <= 0xe01ef)
  ) {
    return 0;
  }
  if (
    (cp >= 0x1100 && cp <= 0x115f) || // Hangul Jamo
    (cp >= 0x231a && cp <= 0x231b) ||
    (cp >= 0x2329 && cp <= 0x232a) ||
    (cp >= 0x23e9 && cp <= 0x23ec) ||
    (cp >= 0x25fd && cp <= 0x25fe) ||
    (cp >= 0x2614 && cp <= 0x2615) ||
    (cp >= 0x2648 && cp <= 0x2653) ||
    (cp >= 0x26aa && cp <= 0x26ab) ||
    (cp >= 0x26bd && cp <= 0x26be) ||
    (cp >= 0x26c4 && cp <= 0x26c5) ||
    (cp >= 0x2705 && cp <= 0x2705) ||
    (cp >= 0x270a && cp <= 0x270b) ||
    (cp >= 0x2753 && cp <= 0x2755) ||
    (cp >= 0x2795 && cp <= 0x2797) ||
    (cp >= 0x2b1b && cp <= 0x2b1c) ||
    (cp >= 0x2e80 && cp <= 0x303e) || // CJK radicals, punctuation
    (cp >= 0x3041 && cp <= 0x33ff) || // kana, CJK symbols
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) || // CJK unified ideographs
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xa960 && cp <= 0xa97f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) || // Hangul syllables
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe10 && cp <= 0xfe19) ||
    (cp >= 0xfe30 && cp <= 0xfe6f) ||
    (cp >= 0xff00 && cp <= 0xff60) || // fullwidth forms
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f000 && cp <= 0x1faff) || // emoji and pictographs
    (cp >= 0x20000 && cp <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}

export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch.codePointAt(0)!);
  return w;
}

/** Cuts `s` to at most `width` columns, ending in `…` when something was cut. */
export function truncate(s: string, width: number): string {
  if (width <= 0) return '';
  if (displayWidth(s) <= width) return s;
  let out = '';
  let w = 0;
  for (const ch of s) {
    const cw = charWidth(ch.codePointAt(0)!);
    if (w + cw > width - 1) break;
    out += ch;
    w += cw;
  }
  return out + '…';
}

/** Truncates or pads with spaces to exactly `width` columns. */
export function fit(s: string, width: number): string {
  const t = truncate(s, width);
  return t + ' '.repeat(Math.max(0, width - displayWidth(t)));
}

/** Cuts to `width` columns keeping the end (for paths): `…/end/of/it`. */
export function truncateStart(s: string, width: number): string {
  if (width <= 0) return '';
  if (displayWidth(s) <= width) return s;
  const chars = [...s];
  let out = '';
  let w = 0;
  for (let i = chars.length - 1; i >= 0; i--) {
    const cw = charWidth(chars[i]!.codePointAt(0)!);
    if (w + cw > width - 1) break;
    out = chars[i]! + out;
    w += cw;
  }
  return '…' + out;
}

/**
 * Word-wraps one paragraph to `width` columns, a line at a time; words longer than a line are
 * split. The first line may be narrower (`firstWidth`), for text that follows a label. Each
 * character is measured once, so the work is linear in the text's length, and a caller that
 * stops after the lines it shows stops the work there too.
 */
export function* wrapLines(text: string, width: number, firstWidth = width): Generator<string> {
  const flat = oneLine(text);
  let line = '';
  let lineW = 0;
  let first = true;
  let at = 0;
  while (at < flat.length) {
    let end = flat.indexOf(' ', at);
    if (end < 0) end = flat.length;
    const word = flat.slice(at, end);
    at = end + 1;
    const limit = first ? firstWidth : width;
    const wordW = displayWidth(word);
    if (line !== '' && lineW + 1 + wordW <= limit) {
      line += ' ' + word;
      lineW += 1 + wordW;
      continue;
    }
    if (line !== '') {
      yield line;
      first = false;
      line = '';
      lineW = 0;
    }
    if (wordW <= (first ? firstWidth : width)) {
      line = word;
      lineW = wordW;
      continue;
    }
    // A word wider than the line: hard-split it, character by character. A character wider
    // than the whole line (width 1, a wide character) still goes out, alone.
    for (const ch of word) {
      const cw = charWidth(ch.codePointAt(0)!);
      if (line !== '' && lineW + cw > (first ? firstWidth : width)) {
        yield line;
        first = false;
        line = '';
        lineW = 0;
      }
      line += ch;
      lineW += cw;
    }
  }
  if (line !== '' || first) yield line;
}

/** All the lines of `wrapLines`. */
export function wrap(text: string, width: number, firstWidth = width): string[] {
  return [...wrapLines(text, width, firstWidth)];
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}
