import { parse, stringify } from 'yaml';
import type { EngramDoc } from '../model/engram-schema.js';
import { validateEngram } from '../model/validate-engram.js';

// One engram per YAML file. Reading validates against the model; anything that does not
// validate is reported with the reasons, never read as empty. Unknown keys are kept.

export type ParsedEngram = { ok: true; engram: EngramDoc } | { ok: false; reason: string };

export function parseEngramYaml(text: string): ParsedEngram {
  if (text.trim() === '') return { ok: false, reason: 'file is empty' };
  let value: unknown;
  try {
    value = parse(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    return { ok: false, reason: `not valid YAML: ${(err as Error).message.split('\n')[0]}` };
  }
  const result = validateEngram(value);
  if (!result.ok) return { ok: false, reason: result.errors.join('; ') };
  return { ok: true, engram: result.engram };
}

export function stringifyEngram(engram: EngramDoc): string {
  // lineWidth 0: never fold long statements, so diffs stay one line per field.
  return stringify(engram, { lineWidth: 0, aliasDuplicateObjects: false });
}
