import meow, { type AnyFlags, type Result } from 'meow';
import { invalid } from '../errors.js';
import type { LocalStore, ReconcileMode } from '../store/local-store.js';
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
      process.stdout.write(json ? JSON.stringify(value) + '\n' : text() + '\n');
    },
    note(text) {
      if (!quiet) process.stderr.write(text + '\n');
    },
    warn(text) {
      if (!quiet) process.stderr.write(`svc: warning: ${text}\n`);
    },
  };
}

/** Parses a command's argv with meow; unknown flags are a usage error (exit 1), not meow's exit 2. */
export function parseArgs<F extends AnyFlags>(argv: string[], help: string, flags: F): Result<F & typeof globalFlags> {
  const all = { ...globalFlags, ...flags } as F & typeof globalFlags;
  const cli = meow(help + '\n' + GLOBAL_HELP, {
    importMeta: import.meta,
    argv,
    flags: all,
    allowUnknownFlags: true,
    booleanDefault: undefined,
    description: false,
  });
  const known = new Set<string>(['help', 'version']);
  for (const [name, spec] of Object.entries(all)) {
    known.add(name);
    known.add(name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()));
    for (const alias of (spec as { aliases?: string[] }).aliases ?? []) known.add(alias);
  }
  for (const raw of Object.keys(cli.unnormalizedFlags)) {
    if (!known.has(raw)) throw invalid(`unknown flag --${raw} (see --help)`);
  }
  return cli;
}

/** Opens the store the flags name (see openStoreSpan) and prints its warnings. */
export async function openStore(
  flags: { path?: string },
  reconcile: ReconcileMode,
  out: Output,
  opts: { span?: StoreSpan } = {},
): Promise<LocalStore> {
  const store = await openStoreSpan(resolveStoreRoot(flags.path), reconcile, opts.span);
  for (const w of store.warnings.splice(0)) out.warn(w);
  return store;
}

/** The positional text, or stdin when there is none and stdin is not a terminal. */
export async function textArgument(input: string[], what: string): Promise<string> {
  let text = input.join(' ');
  if (text.trim() === '' && !process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString('utf8');
  }
  text = text.trim();
  if (text === '') throw invalid(`${what} is missing: pass it as an argument or on stdin`);
  return text;
}

export function positiveInt(value: number | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw invalid(`--${flag} must be a positive whole number`);
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

export function splitList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
