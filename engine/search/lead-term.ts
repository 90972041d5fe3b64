import { MAX_QUERY_PHRASES } from './fts-query.js';
import { foldText, textPatterns } from './fts-text.js';
import { isStopWord } from './stop-words.js';
import { singular } from './text-overlap.js';

// A statement is mostly about what it opens with: "Caroline: I went to a support group",
// "pnpm workspaces need a root package.json". BM25 counts words wherever they stand, and gives
// a word found in half the store (a person's name, in a conversation between two) an IDF of
// about 0: "What did Caroline research?" ranked Melanie's turns that mention research as high
// as Caroline's own. So recall doubles the relevance of a hit whose first content word is a
// query term, as a name counts twice in the query (fts-query.ts). LoCoMo dev files, BM25 only:
// MRR 0.520 -> 0.574, better on each file, each half of the sessions and each category; a
// factor of 1.5 to 3 gives about the same.

/** How much a statement that opens with a query term counts over one that does not. */
export const LEAD_TERM_FACTOR = 2;

/** Words of a text that are no stop words, lowercased and without a plural `s`: the first `max`. */
function contentWords(text: string, max: number): string[] {
  const folded = foldText(text);
  // The shared pattern, stepped by exec (matchAll would copy it on every call); lastIndex reset after.
  const word = textPatterns(folded).word;
  const out: string[] = [];
  try {
    for (let m = word.exec(folded); m && out.length < max; m = word.exec(folded)) {
      const w = m[0].toLowerCase();
      if (!isStopWord(w)) out.push(singular(w));
    }
  } finally {
    word.lastIndex = 0;
  }
  return out;
}

/** How far into a statement its lead word is looked for: a long statement is not folded whole. */
const LEAD_SPAN = 160;

/** The first word of a text that is no stop word, lowercased, without a plural `s`. */
export function leadWord(text: string): string | undefined {
  return contentWords(text.length > LEAD_SPAN ? text.slice(0, LEAD_SPAN) : text, 1)[0];
}

/** Whether a statement opens with one of the query's words (its lead word is one). */
export function leadTermMatcher(query: string): (statement: string) => boolean {
  const terms = new Set(contentWords(query, MAX_QUERY_PHRASES));
  return (statement) => {
    if (terms.size === 0) return false;
    const lead = leadWord(statement);
    return lead !== undefined && terms.has(lead);
  };
}
