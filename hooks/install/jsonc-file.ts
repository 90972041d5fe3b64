import { applyEdits, modify, parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { invalid } from '../../engine/errors.js';
import { isObject, readTextOrNull, type JsonObject } from './config-files.js';

// Hosts whose config is JSON with comments (VS Code's mcp.json, opencode.json): read as data, and
// edited in place, one key at a time, so the person's comments, order and other keys stay.

/** A JSON-with-comments file as data; `invalid` naming the file when it does not parse. */
export function readJsonc(path: string): { text: string; data: JsonObject } {
  const text = readTextOrNull(path) ?? '';
  if (text.trim() === '') return { text, data: {} };
  const errors: ParseError[] = [];
  const data: unknown = parse(text, errors, { allowTrailingComma: true });
  if (errors.length > 0) {
    const first = errors[0]!;
    throw invalid(
      `${path} is not valid JSON (${printParseErrorCode(first.error)} at offset ${first.offset}); fix it by hand and run again: nothing was changed`,
    );
  }
  if (!isObject(data)) throw invalid(`${path} must hold a JSON object; fix it by hand and run again: nothing was changed`);
  return { text, data };
}

/**
 * The file's text with `parent.key` set to `value`, every other byte kept where it can be; `invalid`
 * when `parent` is there but not an object. `empty` is the text a missing or blank file starts from.
 */
export function withJsoncKey(path: string, parent: string, key: string, value: unknown, empty = '{}'): string {
  const { text, data } = readJsonc(path);
  if (data[parent] !== undefined && !isObject(data[parent])) {
    throw invalid(`${path}: "${parent}" must be an object; fix it by hand and run again: nothing was changed`);
  }
  const base = text.trim() === '' ? empty : text;
  const edits = modify(base, [parent, key], value, { formattingOptions: { insertSpaces: true, tabSize: 2, eol: '\n' } });
  const out = applyEdits(base, edits);
  return out.endsWith('\n') ? out : `${out}\n`;
}
