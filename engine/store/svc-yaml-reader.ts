// A reader for the YAML that svc itself writes (stringifyEngram: block mappings and sequences
// indented by two spaces, one scalar per line, `[]` and `{}` for empty collections), about 20x
// faster than the general parser. Rebuilding the index of a large store was mostly YAML parsing.
//
// It answers `undefined` for anything outside that subset: comments, flow collections, block
// or multi-line scalars, anchors and tags, other indentation, a plain scalar YAML would read as
// anything but a plain string, number, boolean or null. The caller then parses with the `yaml`
// package, so a file edited by hand reads exactly as before. What it does answer equals what
// `yaml` answers (the core schema); engine/test/svc-yaml-reader.test.ts checks that on
// generated and hand-written documents.

type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

/** Thrown inside the reader when the text leaves the subset; never escapes it. */
const OUTSIDE = Symbol('outside the subset');

const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** The core schema's numbers: only the plain decimal forms are read here, the rest go to `yaml`. */
const CORE_NUMBER = /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;
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

export function readSvcYaml(text: string): unknown {
  if (text.includes('\r') || text.includes('\t') || !text.endsWith('\n') || CONTROL.test(text)) return undefined;
  const lines = text.split('\n');
  lines.pop();
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
  if (s === '' || OTHER_WORDS.has(s)) throw OUTSIDE;
  if (CORE_NUMBER.test(s)) {
    const n = Number(s);
    if (!DECIMAL.test(s) || Object.is(n, -0)) throw OUTSIDE;
    return n;
  }
  if (PLAIN_START.test(s) || PLAIN_INSIDE.test(s)) throw OUTSIDE;
  return s;
}
