// Turns free user text into a safe FTS5 query: words only (any script), each quoted so no
// user text is read as FTS5 syntax, joined with OR (recall) or AND (forget by text).

const WORD = /[\p{L}\p{N}_]+/gu;

export function queryTerms(text: string): string[] {
  const seen = new Set<string>();
  for (const m of text.toLowerCase().matchAll(WORD)) seen.add(m[0]);
  return [...seen];
}

export function ftsQuery(text: string, mode: 'any' | 'all'): string | null {
  const terms = queryTerms(text);
  if (terms.length === 0) return null;
  return terms.map((t) => `"${t}"`).join(mode === 'any' ? ' OR ' : ' AND ');
}
