import { existsSync, readFileSync } from 'node:fs';
import { invalid } from '../../engine/errors.js';

// Edits of `.svc.yaml` that keep what is already there: other keys, their order and comments.

/** `null` removes the key; `undefined` leaves it alone. */
export type YamlUpdates = Record<string, string | string[] | null | undefined>;

/** The new text of the `.svc.yaml` at `path` with `updates` applied. Throws `invalid` if it is not a YAML mapping. */
export async function svcYamlWith(path: string, updates: YamlUpdates): Promise<string> {
  const { parseDocument, isMap } = await import('yaml');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    throw invalid(
      `${path} is not valid YAML (${doc.errors[0]!.message.split('\n')[0]}); fix it by hand and run again: nothing was changed`,
    );
  }
  if (doc.contents === null || doc.contents === undefined) doc.contents = doc.createNode({}) as unknown as typeof doc.contents;
  if (!isMap(doc.contents)) throw invalid(`${path} must hold a YAML mapping; fix it by hand and run again: nothing was changed`);
  for (const [key, value] of Object.entries(updates)) {
    if (value === undefined) continue;
    if (value === null) doc.delete(key);
    else doc.set(key, Array.isArray(value) ? doc.createNode(value) : value);
  }
  return doc.toString();
}
