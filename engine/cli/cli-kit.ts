import { packageVersion } from '../package-info.js';
import { parseArgs as nodeParseArgs } from 'node:util';
import { invalid } from '../errors.js';
import { editDistance, terminalSafe } from '../text.js';
import type { ReconcileMode } from '../store/store-reconcile.js';
import type { LocalBackend } from '../store/local-backend.js';
import { existingStoreRoot, resolveStoreRoot } from '../svc-home.js';
import { openStoreSpan } from '../store/open-store.js';
import { isTerminal, writeErr, writeOut } from './std-write.js';
import type { StoreSpan } from '../store/multi-store.js';

// What every command shares: flag parsing with the global flags, JSON-or-text output,
// reading stdin, and opening the store.

export const globalFlags = {
  json: { type: 'boolean' },
  path: { type: 'string' },
  fast: { type: 'boolean', default: false },
  quiet: { type: 'boolean', default: false },
} as const satisfies FlagSpecs;

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
  const json = flags.json ?? !isTerminal(1);
  chosenJsonMode = json;
  const quiet = flags.quiet ?? false;
  return {
    json,
    quiet,
    result(value, text) {
      writeOut(json ? JSON.stringify(value) + '\n' : terminalSafe(text()) + '\n');
    },
    note(text) {
      if (!quiet) writeErr(terminalSafe(text) + '\n');
    },
    warn(text) {
      if (!quiet) writeErr(`svc: warning: ${terminalSafe(text)}\n`);
    },
  };
}

/** A token that names a flag: --name, --name=value, --no-name, -x. Anything else is an argument. */
const FLAG_TOKEN = /^(--[A-Za-z][A-Za-z0-9-]*(=.*)?|-[A-Za-z])$/s;

/**
 * A command's flags, keyed by camelCase name (typed as kebab-case: `dryRun` is `--dry-run`).
 * Booleans also take `--no-<name>`; a flag given twice is an error unless `isMultiple`.
 */
export interface FlagSpec {
  readonly type: 'string' | 'boolean' | 'number';
  readonly default?: string | boolean | number;
  readonly isMultiple?: boolean;
}
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;
type Scalar<S> = S extends { type: 'string' } ? string : S extends { type: 'number' } ? number : boolean;
type FlagValue<S> = S extends { isMultiple: true }
  ? Scalar<S>[]
  : S extends { default: string | boolean | number }
    ? Scalar<S>
    : Scalar<S> | undefined;
export type ParsedFlags<F extends FlagSpecs> = { -readonly [K in keyof F]: FlagValue<F[K]> };
export interface ParsedArgs<F extends FlagSpecs> {
  /** The positional arguments, in order. */
  input: string[];
  flags: ParsedFlags<F & typeof globalFlags>;
}

/**
 * Parses a command's argv (node:util's parser, which costs nothing to load: this runs on every
 * call). Unknown flags, a flag without its value and a repeated flag are usage errors (exit 1),
 * named as the user typed them. An argument that starts with dashes but is no flag
 * (`svc learn "--- x"`, `--limit -5`) stays an argument or a value; `--` ends the flags. `--help`
 * prints the command's help and `--version` svc's version, then exit 0.
 */
export function parseArgs<F extends FlagSpecs>(argv: string[], help: string, flags: F): ParsedArgs<F> {
  const all: FlagSpecs = { ...globalFlags, ...flags };
  // Hide dash-led arguments from the flag parser, and put them back afterwards.
  const held: string[] = [];
  const end = argv.indexOf('--');
  const shielded = argv.map((a, i) =>
    (end === -1 || i < end) && a.startsWith('-') && a !== '--' && !FLAG_TOKEN.test(a) ? `\u0000${held.push(a) - 1}` : a,
  );
  const unshield = (a: string): string => (a.startsWith('\u0000') ? held[Number(a.slice(1))]! : a);
  // Each flag under its typed names (kebab-case, and camelCase as given), booleans negated too.
  const keyOf = new Map<string, { key: string; negated: boolean }>();
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' }, version: { type: 'boolean' } };
  for (const [key, spec] of Object.entries(all)) {
    for (const name of new Set([kebab(key), key])) {
      options[name] = { type: spec.type === 'boolean' ? 'boolean' : 'string' };
      keyOf.set(name, { key, negated: false });
      if (spec.type === 'boolean') {
        options[`no-${name}`] = { type: 'boolean' };
        keyOf.set(`no-${name}`, { key, negated: true });
      }
    }
  }
  const { tokens } = nodeParseArgs({ args: shielded, options, strict: false, allowPositionals: true, tokens: true });
  // --help (or --version) wins wherever it stands, over any mistake beside it: `--help --bogus` is help.
  let wants: string | undefined;
  for (const t of tokens) {
    if (t.kind !== 'option') continue;
    if (t.name === 'help' || t.name === 'version') wants ??= t.name;
    else if (!t.inlineValue && (t.value === '--help' || t.value === '--version')) wants ??= t.value.slice(2); // `--scope --help`
  }
  if (wants === 'help') exitWith(formatHelp(help + '\n' + GLOBAL_HELP));
  if (wants === 'version') exitWith(packageVersion() + '\n');
  const input: string[] = [];
  const values: Record<string, unknown> = {};
  for (const token of tokens) {
    if (token.kind === 'positional') input.push(unshield(token.value));
    if (token.kind !== 'option') continue;
    const named = keyOf.get(token.name);
    if (!named) {
      const near = closest(
        token.name,
        [...keyOf.keys(), 'help', 'version'].filter((k) => !/[A-Z]/.test(k)),
      );
      throw invalid(`unknown flag ${token.rawName}${near ? ` (did you mean --${near}?)` : ''} (see --help)`);
    }
    const spec = all[named.key]!;
    const value = flagValue(
      token.rawName,
      spec,
      named.negated,
      token.value === undefined ? undefined : unshield(token.value),
      token.inlineValue === true,
    );
    if (spec.isMultiple) values[named.key] = [...((values[named.key] as unknown[] | undefined) ?? []), value];
    else if (named.key in values) throw invalid(`${token.rawName} is given more than once (see --help)`);
    else values[named.key] = value;
  }
  for (const [key, spec] of Object.entries(all)) {
    if (key in values) continue;
    if (spec.isMultiple) values[key] = [];
    else if (spec.default !== undefined) values[key] = spec.default;
  }
  return { input, flags: values as ParsedFlags<F & typeof globalFlags> };
}

/** A flag's value, checked against its type: `--limit 5`, `--limit=5`, `--json`, `--no-json`, `--json=false`. */
function flagValue(typed: string, spec: FlagSpec, negated: boolean, value: string | undefined, inline: boolean): string | number | boolean {
  if (spec.type === 'boolean') {
    if (value === undefined) return !negated;
    if (inline && (value === 'true' || value === 'false')) return (value === 'true') !== negated;
    throw invalid(`${typed} takes no value (got "${value}")`);
  }
  // A string flag takes the next argument, unless that is another flag: then the value is missing.
  if (value === undefined || (!inline && FLAG_TOKEN.test(value))) throw invalid(`${typed} needs a value (see --help)`);
  if (spec.type === 'string') return value;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw invalid(`${typed} must be a number (got "${value}")`);
  return n;
}

/** Help text as commands write it (indented in a template literal), printed flush with two spaces. */
function formatHelp(text: string): string {
  const lines = text.replace(/^\n+|\s+$/g, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)![0].length));
  return '\n' + lines.map((l) => (l.trim() === '' ? '' : '  ' + l.slice(indent))).join('\n') + '\n\n';
}

/** Prints and ends the process at once: --help and --version do nothing else. */
function exitWith(text: string): never {
  writeOut(text);
  process.exit(0);
}

const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());

/** The candidate nearest to `word` (edit distance at most 2, or a prefix), if any. */
export function closest(word: string, candidates: string[]): string | undefined {
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = c.startsWith(word) && word.length >= 3 ? 1 : editDistance(word, c);
    if (d <= 2 && (!best || d < best.d)) best = { c, d };
  }
  return best?.c;
}

/**
 * Commands that may create the store they are pointed at: they add to it. Every other command
 * (list, recall, inject, status, forget...) needs what a store holds, so a --path or SVC_PATH that
 * does not exist is an error naming it (see existingStoreRoot).
 */
const CREATING_COMMANDS = new Set([
  'learn',
  'capture',
  'ingest',
  'session',
  'sync',
  'packs',
  'mcp',
  'import',
  'init',
  'init-remote',
  'stores',
  'migrate',
  'models',
]);

/**
 * The svc command this process runs (`svc --json list` runs list), or undefined when svc's
 * entry point is not what runs (a command called in-process): then the store is created as before.
 */
export function invokedCommand(argv: readonly string[] = process.argv): string | undefined {
  if (!/(^|[\\/])svc(\.js)?$/.test(argv[1] ?? '')) return undefined;
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--path') i++;
    else if (!/^--(no-)?(json|quiet|fast)$/.test(a) && !a.startsWith('--path=')) return a;
  }
  return undefined;
}

/** Opens the store the flags name (see openStoreSpan) and prints its warnings. */
export async function openStore(
  flags: { path?: string },
  reconcile: ReconcileMode,
  out: Output,
  opts: { span?: StoreSpan } = {},
): Promise<LocalBackend> {
  const command = invokedCommand();
  const root = command === undefined || CREATING_COMMANDS.has(command) ? resolveStoreRoot(flags.path) : existingStoreRoot(flags.path);
  const store = await openStoreSpan(root, reconcile, opts.span);
  for (const w of store.warnings.splice(0)) out.warn(w);
  return store;
}

/**
 * The positional text, or stdin when there is none and stdin is not a terminal; stdin must be
 * UTF-8 text. With `max`, text longer than `max` characters is refused, and stdin is read no
 * further than that could need: 100 MB piped into `svc learn` costs a few kilobytes, not 900 MB.
 */
export async function textArgument(input: string[], what: string, max?: number): Promise<string> {
  let text = input.join(' ');
  if (text.trim() === '' && !isTerminal(0)) {
    // A character is at most 4 bytes; the slack is room for surrounding blank lines.
    const byteCap = max === undefined ? Infinity : max * 4 + 4096;
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of process.stdin) {
      chunks.push(chunk as Buffer);
      bytes += (chunk as Buffer).length;
      if (bytes > byteCap) {
        process.stdin.destroy();
        throw tooLong(what, max!);
      }
    }
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
    } catch {
      throw invalid(`${what} on stdin is not UTF-8 text (binary data?)`);
    }
    if (text.includes('\u0000')) throw invalid(`${what} on stdin holds NUL characters (binary data?)`);
  }
  text = text.trim();
  if (text === '') throw invalid(`${what} is missing: pass it as an argument or on stdin`);
  if (max !== undefined && text.length > max) throw tooLong(what, max, text.length);
  return text;
}

const tooLong = (what: string, max: number, got?: number) =>
  invalid(`${what} is too long: at most ${max} characters (got ${got === undefined ? 'more' : got})`);

/** Counts and limits: whole numbers from 1 to a million (larger ones mean a typo, and overflow SQLite). */
export function positiveInt(value: number | undefined, flag: string, fallback: number, max = 1_000_000): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw invalid(`--${flag} must be a whole number from 1 to ${max} (got ${value})`);
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
