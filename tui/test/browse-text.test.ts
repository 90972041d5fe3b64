import { describe, expect, it } from 'vitest';
import { displayWidth, wrap } from '../browse/text.js';

// wrap() on very long text: it must finish (linear in the text's length) and lose nothing.
// No timings are asserted: a quadratic wrap of 1 MB runs for minutes and hits the timeout.

/** About `size` characters of words of 5 to ~300 characters, every 25th of them 50 to 100 KB long (a pasted blob). */
function longWords(size: number): string {
  const words: string[] = [];
  let n = 0;
  for (let i = 0; n < size; i++) {
    const length = i % 25 === 24 ? 50_000 + ((i * 7919) % 50_000) : 5 + ((i * 7919) % 300);
    const word = `w${i}`.padEnd(length, String.fromCharCode(97 + (i % 26)));
    words.push(word);
    n += word.length + 1;
  }
  return words.join(' ');
}

const noSpaces = (s: string) => s.replace(/ /g, '');

describe('wrap() on long text', () => {
  it('wraps ~1 MB of long words: every line within the width, every character kept in order', { timeout: 5_000 }, () => {
    const text = longWords(1_000_000);
    const lines = wrap(text, 78, 60);
    expect(displayWidth(lines[0]!)).toBeLessThanOrEqual(60);
    for (const line of lines.slice(1)) expect(displayWidth(line)).toBeLessThanOrEqual(78);
    expect(noSpaces(lines.join(''))).toBe(noSpaces(text));
    // Greedy: a line ends only where the next word (or fragment) would not fit.
    for (let i = 1; i < lines.length; i++) {
      const next = lines[i]!.split(' ')[0]!;
      expect(displayWidth(lines[i - 1]!) + 1 + displayWidth(next)).toBeGreaterThan(i === 1 ? 60 : 78);
    }
  });

  it('hard-splits 100 KB without spaces into full lines', { timeout: 2_000 }, () => {
    const text = Array.from({ length: 100_000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
    const lines = wrap(text, 80);
    expect(lines).toHaveLength(1250);
    for (const line of lines) expect(line).toHaveLength(80);
    expect(lines.join('')).toBe(text);
  });

  it('hard-splits wide characters by display width', { timeout: 2_000 }, () => {
    const text = '数据库迁移'.repeat(20_000); // 100,000 characters, 200,000 columns
    const lines = wrap(text, 79);
    for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(79);
    expect(lines.join('')).toBe(text);
    expect(lines).toHaveLength(Math.ceil(200_000 / 78));
  });
});
