import { applyEdits, modify, parse, printParseErrorCode, stripComments, type ParseError } from 'jsonc-parser';
import { invalid } from '../../engine/errors.js';
import { isObject, readTextOrNull, type JsonObject } from './config-files.js';

// Hosts whose config is JSON with comments (VS Code's mcp.json, opencode.json, Gemini CLI's
// settings.json): read as data the way the host reads it, and edited in place, value by value, so
// the person's comments, order, layout and other keys stay wherever svc's values are not.

export interface JsoncFile {
  text: string;
  data: JsonObject;
}

/**
 * A JSON-with-comments object file; a missing, blank or comments-only one is `{}`. `invalid`
 * naming the file otherwise. `trailingCommas: false` refuses them, as Gemini CLI does.
 */
export function readJsonc(path: string, opts: { trailingCommas?: boolean } = {}): JsoncFile {
  const text = (readTextOrNull(path) ?? '').replace(/^\uFEFF/, '');
  if (stripComments(text).trim() === '') return { text, data: {} };
  const errors: ParseError[] = [];
  const data: unknown = parse(text, errors, { allowTrailingComma: opts.trailingCommas !== false, disallowComments: false });
  if (errors.length > 0) {
    const first = errors[0]!;
    throw invalid(
      `${path} is not valid JSON (${printParseErrorCode(first.error)} at offset ${first.offset}); fix it by hand and run again: nothing was changed`,
    );
  }
  if (!isObject(data)) throw invalid(`${path} must hold a JSON object; fix it by hand and run again: nothing was changed`);
  return { text, data };
}

/** A change at a path of the file's object; `undefined` removes the key. */
export interface JsoncChange {
  path: string[];
  value: unknown;
}

/** The text with each change applied in place (a blank text starts as `empty`), ending in a newline. */
export function withJsoncChanges(text: string, changes: readonly JsoncChange[], empty = '{}'): string {
  let out = text.trim() === '' ? empty : text;
  for (const change of changes) {
    const edits = modify(out, change.path, change.value, { formattingOptions: { insertSpaces: true, tabSize: 2, eol: '\n' } });
    out = applyEdits(out, edits);
  }
  return out.endsWith('\n') ? out : `${out}\n`;
}

/**
 * The file's text with `parent.key` set to `value`; `invalid` when `parent` is there but not an
 * object. `empty` is the text a missing or blank file starts from.
 */
export function withJsoncKey(path: string, parent: string, key: string, value: unknown, empty = '{}'): string {
  const { text, data } = readJsonc(path);
  if (data[parent] !== undefined && !isObject(data[parent])) {
    throw invalid(`${path}: "${parent}" must be an object; fix it by hand and run again: nothing was changed`);
  }
  return withJsoncChanges(text, [{ path: [parent, key], value }], empty);
}
