// How text enters the full-text index. Queries go through the same transform (fts-query.ts),
// so the two always agree.

/** BM25 column weights, in the order of the FTS5 columns: statement, tags, domain, rationale. */
export const BM25_COLUMN_WEIGHTS = [4.0, 2.0, 2.0, 1.0] as const;

export function ftsIndexText(text: string): string {
  return text;
}
