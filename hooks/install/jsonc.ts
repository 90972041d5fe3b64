import { applyEdits, modify, parse, printParseErrorCode, stripComments, type ParseError } from 'jsonc-parser';
import { invalid } from '../../engine/errors.js';
import { isObject, readTextOrNull, type JsonObject } from './config-files.js';

// Gemini CLI's JSON files allow comments (it strips them before JSON.parse, which still rejects a
// trailing comma). Read them as Gemini CLI does, and change them value by value, so the person's
// comments, order and layout stay wherever svc's values are not.

export interface JsoncFile {
  text: string;
  data: JsonObject;
}

/** A JSON-with-comments object file; a missing or blank one is `{}`. `invalid` naming the file otherwise. */
export function readJsoncObject(path: string): JsoncFile {
  const text = (readTextOrNull(path) ?? '').replace(/^\uFEFF/, '');
  if (stripComments(text).trim() === '') return { text, data: {} };
  const errors: ParseError[] = [];
  const data: unknown = parse(text, errors, { allowTrailingComma: false, disallowComments: false });
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

/** The text with each change applied in place (a blank text starts as `{}`), ending in a newline. */
export function withJsoncChanges(text: string, changes: readonly JsoncChange[]): string {
  let out = text.trim() === '' ? '{}' : text;
  for (const change of changes) {
    const edits = modify(out, change.path, change.value, { formattingOptions: { insertSpaces: true, tabSize: 2, eol: '\n' } });
    out = applyEdits(out, edits);
  }
  return out.endsWith('\n') ? out : `${out}\n`;
}
