// Text helpers shared by every part: what reaches a terminal, one-line summaries, error lines,
// shell words and rounded figures.

// Text that reaches a terminal must not drive it, nor a model be fed what a person cannot see. A
// statement, a pack or an imported memory can hold escape sequences (clear the screen, colours,
// an OSC title or hyperlink) or other control characters; printed raw they would act on the
// user's terminal, and hidden in a prompt they would reach the model unseen. Every text output
// of the CLI and the hooks, and every injected statement, goes through terminalSafe: sequences
// are removed, other control characters but newline and tab become U+FFFD so what was there
// stays visible.

// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-byte ESC sequences, and the C1
// forms of CSI and OSC (U+009B, U+009D).
const SEQUENCES =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[P^_][^\u001b]*(?:\u001b\\)?|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]|\u009d[^\u0007\u009c]*[\u0007\u009c]?/g;
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function terminalSafe(text: string): string {
  return text.replace(SEQUENCES, '').replace(CONTROLS, '\uFFFD');
}

/** Whether text holds what terminalSafe would change: for scans that flag it. */
export function hasTerminalControls(text: string): boolean {
  return new RegExp(SEQUENCES.source).test(text) || new RegExp(CONTROLS.source).test(text);
}

/**
 * One line: escape sequences removed, runs of whitespace and control characters (newlines,
 * tabs, NUL) become one space; cut to `max` characters, ending in `…` when something was cut.
 */
export function oneLine(text: string, max = Infinity): string {
  const s = text
    .replace(SEQUENCES, '')
    .replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, ' ')
    .trim();
  return s.length > max ? `${s.slice(0, Math.max(0, max - 1))}…` : s;
}

/** An error as one line: the first non-empty line of its message, at most `max` characters. */
export function errorLine(err: unknown, max = 300): string {
  const text = err instanceof Error ? err.message : String(err);
  return (text.split('\n').find((l) => l.trim()) ?? 'unknown error').trim().slice(0, max);
}

/** A word for sh, for commands svc writes or prints: bare when it can be, else quoted. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_/.:@%+=,~-]+$/.test(word)) return word;
  // Inside double quotes only $, backquote, backslash, " and ! are special; they are easier to read.
  return /[$`\\"!]/.test(word) ? `'${word.replace(/'/g, `'\\''`)}'` : `"${word}"`;
}

/** Rounds to `digits` decimals, for figures in reports. */
export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Levenshtein distance: edits that turn `a` into `b` (for did-you-mean suggestions). */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * Orders strings by code unit: for ids and ISO timestamps that is their natural order, and it
 * costs nothing, where `localeCompare` loads ICU's collator (about 5 ms on the first call).
 */
export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
