import { createRequire } from 'node:module';

// A reader and a writer for the YAML that svc itself writes (stringifyEngram: block mappings and
// sequences indented by two spaces, one scalar per line, `[]` and `{}` for empty collections).
// Rebuilding the index of a large store was mostly YAML parsing, and loading the `yaml` package
// took 15-20 ms of any command that read or wrote a YAML file, so the common case goes through
// these. parseYaml and stringifyYaml are the entry points for svc's files (engrams, sessions,
// tension records, sync conflict records, .svc.yaml, the store's registry).
//
// Both answer `undefined` for anything outside that subset, and the entry points then use the
// `yaml` package, so nothing reads or writes differently. The reader also skips whole-line comments and
// blank lines, as YAML does outside block scalars, so the config files people annotate (.svc.yaml,
// the store's registry) read here too. It steps aside for comments after a value, flow
// collections, block or multi-line scalars, anchors and tags, other indentation, and a plain
// scalar YAML would read as anything but a plain string, number, boolean or null. The writer
// writes only values it can write as plain scalars, and steps aside for any string that YAML
// would quote. engine/test/svc-yaml.test.ts checks both against the `yaml` package: the same
// values read, the same bytes written.

type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

/** Thrown inside the reader when the text leaves the subset; never escapes it. */
const OUTSIDE = Symbol('outside the subset');

const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** A line YAML ignores outside a block scalar (tabs never reach here). */
const COMMENT_OR_BLANK = /^ *(?:#.*)?$/;
/** Whether the text may hold such a line (a cheap test first: svc's own files hold none). */
const MAY_SKIP = /#|^\n|\n\n| \n/;
/** The core schema's numbers: only the plain decimal forms are read here, the rest go to `yaml`. */
const CORE_NUMBER =
  /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;
const DECIMAL = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$/;
/** Words the core schema reads as null or a boolean in a spelling other than the ones written here. */
const OTHER_WORDS = new Set(['~', 'Null', 'NULL', 'True', 'TRUE', 'False', 'FALSE']);
/** A plain scalar may not start with an indicator, and may not hold ": ", " #" or a control character. */
const PLAIN_START = /^[-?:,[\]{}#&*!|>'"%@`\s]/;
const PLAIN_INSIDE = /: |:$| #|[\u0000-\u001f\u007f\u0085\u2028\u2029\ufeff]|\s$/;
/** Characters YAML treats specially or refuses (besides tab and CR, refused above). */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufeff]/;
/** Keys the core schema reads as something other than their text. */
const NOT_TEXT_KEYS = new Set(['null', 'Null', 'NULL', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE']);
/** The escapes JSON and YAML double-quoted strings share, with the same meaning. */
const JSON_ESCAPES = /\\(?:[^"\\/bfnrtu]|u(?![0-9a-fA-F]{4}))/;

/** The `yaml` package, loaded only for what this reader and writer step aside from. */
let yamlPackage: typeof import('yaml') | undefined;
const fullYaml = (): typeof import('yaml') => (yamlPackage ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

/** YAML text as the `yaml` package reads it (duplicate keys refused); throws on text that is not YAML. */
export function parseYaml(text: string): unknown {
  return readSvcYaml(text) ?? fullYaml().parse(text, { uniqueKeys: true });
}

/** A mapping as YAML text, as the `yaml` package writes it with long strings never folded (one line per field in diffs). */
export function stringifyYaml(value: Record<string, unknown>): string {
  return writeSvcYaml(value) ?? fullYaml().stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

export function readSvcYaml(text: string): unknown {
  if (text.includes('\r') || text.includes('\t') || !text.endsWith('\n') || CONTROL.test(text)) return undefined;
  const all = text.split('\n');
  all.pop();
  // Dropping them changes nothing the subset holds: a block scalar, where they would be text, is outside it.
  const lines = MAY_SKIP.test(text) ? all.filter((line) => !COMMENT_OR_BLANK.test(line)) : all;
  // Only comments: YAML reads null, which no caller of this reader wants to tell from an error.
  if (lines.length === 0) return undefined;
  try {
    const r = new Reader(lines);
    const value = r.mapping(0);
    return r.at === lines.length ? value : undefined;
  } catch (err) {
    if (err === OUTSIDE) return undefined;
    throw err;
  }
}

class Reader {
  at = 0;
  constructor(private readonly lines: string[]) {}

  private indentOf(line: string): number {
    let n = 0;
    while (line.charCodeAt(n) === 32) n++;
    return n;
  }

  /** A block mapping whose keys sit at `indent`; `first` is a pair already cut from a `- ` line. */
  mapping(indent: number, first?: string): { [key: string]: Value } {
    const out: { [key: string]: Value } = {};
    let pending = first;
    while (pending !== undefined || this.at < this.lines.length) {
      let body: string;
      if (pending !== undefined) {
        body = pending;
        pending = undefined;
      } else {
        const line = this.lines[this.at]!;
        const n = this.indentOf(line);
        if (n < indent) break;
        if (n > indent) throw OUTSIDE;
        body = line.slice(n);
      }
      this.at++;
      const colon = body.indexOf(':');
      if (colon <= 0) throw OUTSIDE;
      const key = body.slice(0, colon);
      if (!KEY.test(key) || NOT_TEXT_KEYS.has(key) || key === '__proto__' || Object.hasOwn(out, key)) throw OUTSIDE;
      const rest = body.slice(colon + 1);
      if (rest === '') out[key] = this.nested(indent);
      else if (rest.charCodeAt(0) === 32) out[key] = scalar(rest.slice(1));
      else throw OUTSIDE;
    }
    return out;
  }

  /** The block under a `key:` line at `indent`: a sequence or mapping two spaces deeper. */
  private nested(indent: number): Value {
    const line = this.lines[this.at];
    if (line === undefined || this.indentOf(line) !== indent + 2) throw OUTSIDE;
    return line.startsWith('- ', indent + 2) ? this.sequence(indent + 2) : this.mapping(indent + 2);
  }

  private sequence(indent: number): Value[] {
    const out: Value[] = [];
    while (this.at < this.lines.length) {
      const line = this.lines[this.at]!;
      const n = this.indentOf(line);
      if (n < indent) break;
      if (n > indent || !line.startsWith('- ', n)) throw OUTSIDE;
      const item = line.slice(n + 2);
      const colon = item.indexOf(':');
      // `- key: value`: a mapping whose further keys sit two spaces deeper.
      if (colon > 0 && KEY.test(item.slice(0, colon)) && (item.length === colon + 1 || item.charCodeAt(colon + 1) === 32)) {
        out.push(this.mapping(indent + 2, item));
        // mapping() counted the `- ` line as one of its own.
        continue;
      }
      this.at++;
      out.push(scalar(item));
    }
    return out;
  }
}

/** Whether `s` can stand as a plain scalar and read back as this very string. */
function plainText(s: string): boolean {
  if (s === '' || s === '[]' || s === '{}' || s === 'null' || s === 'true' || s === 'false' || OTHER_WORDS.has(s)) return false;
  return !CORE_NUMBER.test(s) && !PLAIN_START.test(s) && !PLAIN_INSIDE.test(s);
}

function scalar(s: string): Value {
  const c = s.charCodeAt(0);
  if (c === 34 /* " */) {
    if (s.length < 2 || !s.endsWith('"') || JSON_ESCAPES.test(s)) throw OUTSIDE;
    let value: unknown;
    try {
      value = JSON.parse(s);
    } catch {
      throw OUTSIDE;
    }
    return value as string;
  }
  if (c === 39 /* ' */) {
    if (s.length < 2 || !s.endsWith("'")) throw OUTSIDE;
    const inner = s.slice(1, -1);
    if (inner.replaceAll("''", '').includes("'") || /[\u0000-\u001f]/.test(inner)) throw OUTSIDE;
    return inner.replaceAll("''", "'");
  }
  if (s === '[]') return [];
  if (s === '{}') return {};
  if (s === 'null') return null;
  if (s === 'true') return true;
  if (s === 'false') return false;
  if (CORE_NUMBER.test(s)) {
    const n = Number(s);
    if (!DECIMAL.test(s) || Object.is(n, -0)) throw OUTSIDE;
    return n;
  }
  if (!plainText(s)) throw OUTSIDE;
  return s;
}

// ---------------------------------------------------------------- writing

/** Strings left to yaml: line breaks, control characters, lone surrogates, a document marker first. */
const UNWRITABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\ufeff\ud800-\udfff]|^(?:---|\.\.\.)/u;
/** What yaml will not write plain (its own test): it quotes a one-line string that matches. */
const YAML_QUOTES = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/;

/** The YAML `yaml.stringify(value, { lineWidth: 0 })` writes for this mapping, or undefined when it is outside the subset. */
export function writeSvcYaml(value: Record<string, unknown>): string | undefined {
  const out: string[] = [];
  try {
    writePairs(value, 0, out);
  } catch (err) {
    if (err === OUTSIDE) return undefined;
    throw err;
  }
  return out.join('');
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

/** A mapping's pairs at column `col`; the first one after `lead` (a sequence item's `- `) when given. */
function writePairs(obj: Record<string, unknown>, col: number, out: string[], lead?: string): void {
  const pad = ' '.repeat(col);
  let first = true;
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v === undefined) continue;
    if (!KEY.test(key) || NOT_TEXT_KEYS.has(key)) throw OUTSIDE;
    const start = first && lead !== undefined ? lead : pad;
    first = false;
    if (Array.isArray(v) && v.length > 0) {
      out.push(`${start}${key}:\n`);
      writeItems(v, col + 2, out);
    } else if (isPlainObject(v) && Object.keys(v).some((k) => v[k] !== undefined)) {
      out.push(`${start}${key}:\n`);
      writePairs(v, col + 2, out);
    } else {
      out.push(`${start}${key}: ${writeScalar(v)}\n`);
    }
  }
  // An item whose keys are all undefined is `{}` in yaml: not written here.
  if (first && lead !== undefined) throw OUTSIDE;
}

function writeItems(items: unknown[], col: number, out: string[]): void {
  const lead = `${' '.repeat(col)}- `;
  for (const item of items) {
    if (isPlainObject(item) && Object.keys(item).length > 0) writePairs(item, col + 2, out, lead);
    else if (Array.isArray(item) && item.length > 0) throw OUTSIDE;
    else out.push(`${lead}${writeScalar(item)}\n`);
  }
}

function writeScalar(v: unknown): string {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (Array.isArray(v)) return '[]';
  if (isPlainObject(v)) return '{}';
  if (typeof v === 'number') {
    const text = String(v);
    if (!DECIMAL.test(text.replace('e+', 'e')) || Object.is(v, -0)) throw OUTSIDE;
    return text;
  }
  if (typeof v === 'string') {
    if (UNWRITABLE.test(v)) throw OUTSIDE;
    if (plainText(v)) return v;
    // Quoted as yaml quotes a one-line string it cannot write plain: in single quotes when it
    // holds a double quote and no single one, else as JSON (its escapes mean the same in YAML).
    if (v === '' || YAML_QUOTES.test(v) || CORE_NUMBER.test(v) || OTHER_WORDS.has(v) || v === 'null' || v === 'true' || v === 'false') {
      return v.includes('"') && !v.includes("'") ? `'${v}'` : JSON.stringify(v);
    }
  }
  throw OUTSIDE;
}
