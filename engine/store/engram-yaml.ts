import type { EngramDoc } from '../model/engram-types.js';
import { validateEngram } from '../model/validate-engram.js';
import { contentHash } from '../model/content-hash.js';
import { parseYaml, stringifyYaml } from './yaml-codec.js';

// One engram per YAML file. Reading validates against the model; anything that does not
// validate is reported with the reasons, never read as empty. Unknown keys are kept.
//
// A file cut short (a full disk, a crash of another program, `truncate`) can still be valid
// YAML and a valid engram: `statement: corru`. svc writes `content_hash` as the last key, so a
// file cut inside its statement has also lost every key after it: the store refuses a file
// that lost keys its indexed version had (`lostFields`). The hash itself is always computed
// again from the statement: a stale one (a statement edited by hand, an old store) or half of
// one (a file cut in its last line, statement intact) costs nothing.

export type ParsedEngram = { ok: true; engram: EngramDoc; keys: ReadonlySet<string> } | { ok: false; reason: string };

/** Keys svc writes into every engram file: a file that had them and lost them was cut short. */
const ALWAYS_WRITTEN = [
  'status',
  'type',
  'scope',
  'statement',
  'activation',
  'feedback_signals',
  'temporal',
  'reference_count',
  'sources',
  'recurrence_count',
  'engram_version',
  'pinned',
  'content_hash',
];

export function parseEngramYaml(text: string): ParsedEngram {
  if (text.trim() === '') return { ok: false, reason: 'file is empty' };
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (err) {
    return { ok: false, reason: `not valid YAML: ${(err as Error).message.split('\n')[0]}` };
  }
  // The keys the file holds, before validation fills in defaults.
  const keys = new Set(value !== null && typeof value === 'object' ? Object.keys(value) : []);
  const result = validateEngram(value);
  if (!result.ok) return { ok: false, reason: result.errors.join('; ') };
  const e = result.engram;
  e.content_hash = contentHash(e.statement);
  return { ok: true, engram: e, keys };
}

/** Keys svc writes that the previous version of a file had and this one lacks. */
export function lostFields(previous: EngramDoc, keys: ReadonlySet<string>): string[] {
  return ALWAYS_WRITTEN.filter((k) => previous[k] !== undefined && !keys.has(k));
}

export function stringifyEngram(engram: EngramDoc): string {
  // content_hash last: a file cut short loses it (see above). lineWidth 0: never fold long
  // statements, so diffs stay one line per field.
  const { content_hash, ...rest } = engram;
  const ordered = content_hash === undefined ? rest : { ...rest, content_hash };
  return stringifyYaml(ordered);
}
