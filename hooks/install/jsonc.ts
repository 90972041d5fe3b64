import { existsSync, readFileSync } from 'node:fs';
import { invalid } from '../../engine/errors.js';
import { isObject, type JsonObject } from './config-files.js';

// JSON with comments, as some hosts allow in their settings (Gemini CLI reads its settings.json
// through a comment stripper): read it as data, and change top-level keys by replacing only
// their value's text, so the person's comments and layout elsewhere in the file stay as written.

/** The text with every `//` and `/* *\/` comment outside strings blanked (same length, newlines kept). */
export function blankComments(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      const stop = end < 0 ? text.length : end;
      out += ' '.repeat(stop - i);
      i = stop;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

/** Index just past the string starting at `start` (a `"`). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return Math.min(i + 1, text.length);
}

export interface JsoncFile {
  exists: boolean;
  text: string;
  data: JsonObject;
  /** Whether the file holds comments (then edits go through `withTopLevelKeys`). */
  hasComments: boolean;
}

/** Parses a JSON-with-comments object file; a missing or blank file is `{}`. Throws `invalid` naming the file. */
export function readJsoncObject(path: string): JsoncFile {
  if (!existsSync(path)) return { exists: false, text: '', data: {}, hasComments: false };
  const text = readFileSync(path, 'utf8').replace(/^\uFEFF/, '');
  const bare = blankComments(text);
  if (bare.trim() === '') return { exists: true, text, data: {}, hasComments: bare !== text };
  let data: unknown;
  try {
    data = JSON.parse(bare);
  } catch (err) {
    throw invalid(`${path} is not valid JSON (${(err as Error).message}); fix it by hand and run again: nothing was changed`);
  }
  if (!isObject(data)) throw invalid(`${path} must hold a JSON object; fix it by hand and run again: nothing was changed`);
  return { exists: true, text, data, hasComments: bare !== text };
}

interface Member {
  /** Where the value's text starts and ends. */
  start: number;
  end: number;
  /** The key's line indentation. */
  indent: string;
}

/** The top-level members of the object in `bare` (comments blanked) by key, where it opens and where its last value ends (-1: none). */
function topLevel(bare: string): { members: Map<string, Member>; open: number; lastEnd: number } {
  const members = new Map<string, Member>();
  const open = bare.indexOf('{');
  let i = open + 1;
  let lastEnd = -1;
  const skipSpace = () => {
    while (i < bare.length && /\s|,/.test(bare[i]!)) i += 1;
  };
  for (;;) {
    skipSpace();
    if (i >= bare.length || bare[i] === '}') break;
    const keyStart = i;
    i = stringEnd(bare, i);
    const key = JSON.parse(bare.slice(keyStart, i)) as string;
    i = bare.indexOf(':', i) + 1;
    while (/\s/.test(bare[i]!)) i += 1;
    const start = i;
    i = valueEnd(bare, i);
    const lineStart = bare.lastIndexOf('\n', keyStart) + 1;
    const indent = /^[ \t]*/.exec(bare.slice(lineStart, keyStart))![0];
    members.set(key, { start, end: i, indent });
    lastEnd = i;
  }
  return { members, open, lastEnd };
}

/** Index just past the JSON value starting at `start`. */
function valueEnd(bare: string, start: number): number {
  const c = bare[start];
  if (c === '"') return stringEnd(bare, start);
  if (c !== '{' && c !== '[') {
    let i = start;
    while (i < bare.length && !/[\s,}\]]/.test(bare[i]!)) i += 1;
    return i;
  }
  let depth = 0;
  let i = start;
  while (i < bare.length) {
    const ch = bare[i]!;
    if (ch === '"') {
      i = stringEnd(bare, i);
      continue;
    }
    if (ch === '{' || ch === '[') depth += 1;
    if (ch === '}' || ch === ']') depth -= 1;
    i += 1;
    if (depth === 0) break;
  }
  return i;
}

/**
 * The file's text with each key of `values` set at the top level: a present key's value text is
 * replaced, a new key is added after the last member. Comments outside the replaced values stay.
 */
export function withTopLevelKeys(text: string, values: JsonObject): string {
  let out = text;
  for (const [key, value] of Object.entries(values)) {
    const bare = blankComments(out);
    const { members, open, lastEnd } = topLevel(bare);
    const member = members.get(key);
    if (member) {
      const json = JSON.stringify(value, null, 2).replace(/\n/g, `\n${member.indent}`);
      out = out.slice(0, member.start) + json + out.slice(member.end);
    } else {
      const indent = members.size > 0 ? [...members.values()][0]!.indent : '  ';
      const json = JSON.stringify(value, null, 2).replace(/\n/g, `\n${indent}`);
      // After the last member (its comments stay after the new one), or first in an empty object.
      const at = lastEnd >= 0 ? lastEnd : open + 1;
      out = `${out.slice(0, at)}${lastEnd >= 0 ? ',' : ''}\n${indent}${JSON.stringify(key)}: ${json}${out.slice(at)}`;
    }
  }
  return out;
}
