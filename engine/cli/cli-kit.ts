import meow, { type AnyFlags, type Result } from 'meow';
import { invalid } from '../errors.js';
import { editDistance, terminalSafe } from '../text.js';
import type { ReconcileMode } from '../store/local-store.js';
import type { LocalBackend } from '../store/local-backend.js';
import { resolveStoreRoot } from '../store/store-root.js';
import { openStoreSpan } from '../store/open-store.js';
import type { StoreSpan } from '../store/multi-store.js';

// What every command shares: flag parsing (meow) with the global flags, JSON-or-text output,
// reading stdin, and opening the store.

export const globalFlags = {
  json: { type: 'boolean' },
  path: { type: 'string' },
  fast: { type: 'boolean', default: false },
  quiet: { type: 'boolean', default: false },
} as const satisfies AnyFlags;

export const GLOBAL_HELP = `
  Global flags
    --json          machine-readable output (the default when stdout is not a terminal)
    --path <dir>    store folder (default $SVC_PATH, else ~/.svc)
    --fast          BM25-only search, no embeddings
    --quiet         only essential output
    --help, --version`;

export interface Output {
  json: boolean;
  quiet: boolean;
  /** Prints data: the JSON value in JSON mode, else the text. */
  result(value: unknown, text: () => string): void;
  /** A note on stderr; suppressed by --quiet. */
  note(text: string): void;
  /** A warning on stderr; shown unless --quiet (in JSON mode too, as plain text). */
  warn(text: string): void;
}

/** The output mode a command settled on, so an error it throws is reported the same way. */
export let chosenJsonMode: boolean | undefined;

export function makeOutput(flags: { json?: boolean; quiet?: boolean }): Output {
  const json = flags.json ?? !process.stdout.isTTY;
  chosenJsonMode = json;
  const quiet = flags.quiet ?? false;
  return {
    json,
    quiet,
    result(value, text) {
      process.stdout.write(json ? JSON.stringify(value) + '\n' : terminalSafe(text()) + '\n');
    },
    note(text) {
      if (!quiet) process.stderr.write(terminalSafe(text) + '\n');
    },
    warn(text) {
      if (!quiet) process.stderr.write(`svc: warning: ${terminalSafe(text)}\n`);
    },
  };
}

/** A token that names a flag: --name, --name=value, --no-name, -x. Anything else is an argument. */
const FLAG_TOKEN = /^(--[A-Za-z][A-Za-z0-9-]*(=.*)?|-[A-Za-z])$/s;

/**
 * Parses a command's argv with meow; unknown flags are a usage error (exit 1), named as the user
 * typed them. An argument that starts with dashes but is no flag (`svc learn "--- x"`) stays an
 * argument; `--` ends the flags (what follows is arguments, whatever it looks like).
 */
export function parseArgs<F extends AnyFlags>(argv: string[], help: string, flags: F): Result<F & typeof globalFlags> {
  const all = { ...globalFlags, ...flags } as F & typeof globalFlags;
  // Hide dash-led arguments from the flag parser, and put them back afterwards.
  const held: string[] = [];
  const end = argv.indexOf('--');
  const shielded = argv.map((a, i) => ((end === -1 || i < end) && a.startsWith('-') && a !== '--' && !FLAG_TOKEN.test(a) ? `\u0000${held.push(a) - 1}` : a));
  const cli = meow(help + '\n' + GLOBAL_HELP, {
    importMeta: import.meta,
    argv: shielded,
    flags: all,
    allowUnknownFlags: true,
    booleanDefault: undefined,
    description: false,
  });
  cli.input = cli.input.map((a) => (a.startsWith('\u0000') ? held[Number(a.slice(1))]! : a));
  const known = new Set<string>(['help', 'version']);
  for (const [name, spec] of Object.entries(all)) {
    known.add(name);
    known.add(kebab(name));
    for (const alias of (spec as { aliases?: string[] }).aliases ?? []) known.add(alias);
  }
  for (const raw of Object.keys(cli.unnormalizedFlags)) {
    if (known.has(raw) || known.has(kebab(raw))) continue;
    const typed = argv.find((a) => new RegExp(`^--?(no-)?${escapeRe(kebab(raw))}(=|$)`).test(a) || new RegExp(`^--?(no-)?${escapeRe(raw)}(=|$)`).test(a));
    const name = typed ? typed.split('=')[0]! : `--${kebab(raw)}`;
    const near = closest(kebab(raw), [...known].filter((k) => !/[A-Z]/.test(k)));
    throw invalid(`unknown flag ${name}${near ? ` (did you mean --${near}?)` : ''} (see --help)`);
  }
  return cli;
}

const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The candidate nearest to `word` (edit distance at most 2, or a prefix), if any. */
export function closest(word: string, candidates: string[]): string | undefined {
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = c.startsWith(word) && word.length >= 3 ? 1 : editDistance(word, c);
    if (d <= 2 && (!best || d < best.d)) best = { c, d };
  }
  return best?.c;
}


/** Opens the store the flags name (see openStoreSpan) and prints its warnings. */
export async function openStore(
  flags: { path?: string },
  reconcile: ReconcileMode,
  out: Output,
  opts: { span?: StoreSpan } = {},
): Promise<LocalBackend> {
  const store = await openStoreSpan(resolveStoreRoot(flags.path), reconcile, opts.span);
  for (const w of store.warnings.splice(0)) out.warn(w);
  return store;
}

/** The positional text, or stdin when there is none and stdin is not a terminal; stdin must be UTF-8 text. */
export async function textArgument(input: string[], what: string): Promise<string> {
  let text = input.join(' ');
  if (text.trim() === '' && !process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
    } catch {
      throw invalid(`${what} on stdin is not UTF-8 text (binary data?)`);
    }
    if (text.includes('\u0000')) throw invalid(`${what} on stdin holds NUL characters (binary data?)`);
  }
  text = text.trim();
  if (text === '') throw invalid(`${what} is missing: pass it as an argument or on stdin`);
  return text;
}

/** Counts and limits: whole numbers from 1 to a million (larger ones mean a typo, and overflow SQLite). */
export function positiveInt(value: number | undefined, flag: string, fallback: number, max = 1_000_000): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) throw invalid(`--${flag} must be a whole number from 1 to ${max} (got ${value})`);
  return value;
}

export function parseJsonFlag(value: string | undefined, flag: string): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch (err) {
    throw invalid(`--${flag} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * A comma-separated list, as in CSV: `a,"b,c"` is two items, `a` and `b,c` (a doubled quote
 * inside quotes is a quote). Items holding line breaks or other control characters are refused.
 */
export function splitList(value: string | undefined, flag = 'tags'): string[] | undefined {
  if (value === undefined) return undefined;
  const items: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (quoted) {
      if (ch === '"' && value[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"' && cur.trim() === '') {
      quoted = true;
      cur = '';
    } else if (ch === ',') {
      items.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (quoted) throw invalid(`--${flag}: a quote is not closed in "${value}"`);
  items.push(cur);
  const out = items.map((s) => s.trim()).filter(Boolean);
  const bad = out.find((s) => /[\u0000-\u001f\u007f-\u009f]/.test(s));
  if (bad !== undefined) throw invalid(`--${flag}: an item holds a line break or another control character (${JSON.stringify(bad)})`);
  return out;
}
