import type { DetailLine } from './fields.js';

/**
 * Detail lines laid out as they are needed: what the screen shows (and a page ahead) at
 * once, the rest a slice at a time between keystrokes. Opening a 1 MB engram lays out one
 * screen, not 13,000 lines, and quitting never waits for the rest.
 */
export class LazyLines {
  private readonly lines: DetailLine[] = [];
  private source: Iterator<DetailLine> | null;

  constructor(source: Iterable<DetailLine>) {
    this.source = source[Symbol.iterator]();
  }

  /** Lines laid out so far. */
  get count(): number {
    return this.lines.length;
  }

  /** Every line is laid out: `count` is the total. */
  get complete(): boolean {
    return this.source === null;
  }

  /** Lays out lines until there are `n` (or the text ends). */
  ensure(n: number): void {
    while (this.source && this.lines.length < n) this.next();
  }

  slice(from: number, to: number): DetailLine[] {
    this.ensure(to);
    return this.lines.slice(from, to);
  }

  /** Lays out lines for about `ms` milliseconds; false once every line is laid out. */
  layFor(ms: number): boolean {
    const end = performance.now() + ms;
    while (this.source) {
      for (let i = 0; i < 64 && this.source; i++) this.next();
      if (performance.now() >= end) break;
    }
    return this.source !== null;
  }

  private next(): void {
    const r = this.source!.next();
    if (r.done) this.source = null;
    else this.lines.push(r.value);
  }
}
