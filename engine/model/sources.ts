import type { EngramDoc } from './engram-types.js';
import { byCodeUnit } from '../text.js';

// `sources` records each write of an engram. It stays bounded: the first write and the newest
// ones are kept, the rest counted in `sources_omitted` (a statement learned daily for years
// stays small). Learn appends through here, and a sync merge of two machines' lists bounds its
// union the same way.

export const MAX_SOURCES = 20;

export type EngramSource = NonNullable<EngramDoc['sources']>[number];

/** Keeps the first source and the newest, counting what it drops. */
export function boundSources(e: EngramDoc): void {
  const sources = e.sources;
  if (!sources || sources.length <= MAX_SOURCES) return;
  const [first, ...rest] = sources;
  rest.sort((a, b) => byCodeUnit(a.stored_at, b.stored_at));
  const drop = sources.length - MAX_SOURCES;
  e.sources = [first!, ...rest.slice(drop)];
  e.sources_omitted = (e.sources_omitted ?? 0) + drop;
}

export function appendSource(e: EngramDoc, source: EngramSource): void {
  e.sources = [...(e.sources ?? []), source];
  boundSources(e);
}
