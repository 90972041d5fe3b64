import { isStopWord } from './stop-words.js';
import { foldText, hasUnsegmented, joinCompound, textPatterns, type TextPatterns } from './fts-text.js';

// Turns free user text into a safe FTS5 query. Every term is a double-quoted string holding only
// letters, digits and marks (any script) and spaces, so no user text is ever read as FTS5 syntax
// (quotes, `*`, `:`, `^`, parentheses, NEAR/AND/OR/NOT all end up as plain words or nothing).
//
// - `any` (recall): terms joined with OR; FTS5's bm25() sums the per-term scores, so documents
//   that match more and rarer terms come first. Stop words and question words ("what", "did",
//   "the") are dropped unless nothing else is left; each term appears once, except names
//   (capitalized words inside a sentence), which count twice: they are the most specific words a
//   question has. A hyphenated compound also asks for its joined form ("self-care" -> "selfcare").
// - `all` (forget by text): the same terms joined with AND; a compound must appear as a phrase or
//   joined.
// - Scripts written without spaces are indexed one character per token (fts-text.ts). A run of
//   them in the query becomes the phrase of its characters (`all`), or its overlapping character
//   bigrams plus that phrase (`any`), so "数据库" finds "我们使用数据库" and a longer question still
//   finds the documents sharing most of its words.
//
// Queries are folded like the indexed text (NFKC, Greek accents, ё, ß): see fts-text.ts.

const SENTENCE_END = /[.!?…:;。！？]/u;

/** Upper bound on the phrases of one query: a pasted page must not become a 500-term OR. */
export const MAX_QUERY_PHRASES = 64;
/** Weight of a name (a capitalized word that does not start a sentence). */
const NAME_WEIGHT = 2;

interface Unit {
  /** `any`: each alternative is one OR'ed phrase; `all`: the alternatives form one OR group. */
  alts: string[];
  weight: number;
  stop: boolean;
}

function isSentenceStart(text: string, index: number, p: TextPatterns): boolean {
  let i = index - 1;
  while (i >= 0 && p.lead.test(text[i]!)) i -= 1;
  return i < 0 || SENTENCE_END.test(text[i]!);
}

const isAcronym = (w: string, p: TextPatterns): boolean => w.length >= 2 && p.upper.test(w) && w === w.toUpperCase();

/** Bigrams of a run of unsegmented characters, plus the whole run when longer than two. */
function unsegmentedAlts(chars: string[], mode: 'any' | 'all'): string[] {
  if (mode === 'all' || chars.length <= 2) return [chars.join(' ')];
  const alts = new Set<string>([chars.join(' ')]);
  for (let i = 0; i + 1 < chars.length; i++) alts.add(`${chars[i]} ${chars[i + 1]}`);
  return [...alts];
}

/** The units of one word (a word may mix scripts: "SQLite数据库"). */
function wordUnits(word: string, name: boolean, stop: boolean, mode: 'any' | 'all', p: TextPatterns): Unit[] {
  if (!p.tokenChar.test(word)) return [];
  if (!hasUnsegmented(word)) return [{ alts: [word.toLowerCase()], weight: name ? NAME_WEIGHT : 1, stop }];
  const units: Unit[] = [];
  let run: string[] = [];
  let other = '';
  const flush = (): void => {
    if (run.length > 0) units.push({ alts: unsegmentedAlts(run, mode), weight: 1, stop: false });
    if (p.tokenChar.test(other)) units.push({ alts: [other.toLowerCase()], weight: 1, stop: false });
    run = [];
    other = '';
  };
  for (const ch of word) {
    if (hasUnsegmented(ch)) {
      if (other) flush();
      run.push(ch);
    } else if (run.length > 0 && !p.letterOrDigit.test(ch)) {
      // a combining mark inside a Thai or Khmer run: the tokenizer drops it, so does the query
    } else {
      if (run.length > 0) flush();
      other += ch;
    }
  }
  flush();
  return units;
}

function queryUnits(text: string, mode: 'any' | 'all'): Unit[] {
  const units = allUnits(text, mode);
  const content = units.filter((u) => !u.stop);
  return content.length > 0 ? content : units;
}

/**
 * Whether the text has a word that is no stop word. Recall still searches a query of stop words
 * only (a user may look up "will"); injection does not: a prompt's stop words match anything.
 */
export function hasContentTerms(text: string): boolean {
  return allUnits(text, 'any').some((u) => !u.stop);
}

function allUnits(text: string, mode: 'any' | 'all'): Unit[] {
  const folded = foldText(text);
  const p = textPatterns(folded);
  const shouting = !p.lower.test(folded);
  const units: Unit[] = [];
  for (const m of folded.matchAll(p.chunk)) {
    const chunk = m[0];
    const words = [...chunk.matchAll(p.word)];
    const compound = words.length > 1 && !hasUnsegmented(chunk);
    if (compound && mode === 'all') {
      const parts = words.map((w) => w[0].toLowerCase()).filter((w) => p.tokenChar.test(w));
      const alts = [...new Set([parts.join(' '), joinCompound(chunk).toLowerCase()])];
      units.push({ alts, weight: 1, stop: parts.every(isStopWord) });
      continue;
    }
    for (const w of words) {
      const word = w[0];
      const initial = isSentenceStart(folded, m.index + w.index, p);
      const inside = !shouting && !initial && word !== 'I';
      const name = inside && p.capitalized.test(word);
      // "Will", "US", "IT": a capitalized or all-capital stop word is a name or an acronym.
      const stop = isStopWord(word.toLowerCase()) && !(name || (!shouting && isAcronym(word, p)));
      units.push(...wordUnits(word, name, stop, mode, p));
    }
    if (compound) units.push({ alts: [joinCompound(chunk).toLowerCase()], weight: 1, stop: false });
  }
  return units;
}

/** A phrase as an FTS5 string. */
export const quote = (phrase: string): string => `"${phrase.replace(/"/g, '""')}"`;

/** The phrases of an `any` query with their weights, in order of appearance, deduplicated. */
export function weightedPhrases(text: string): Map<string, number> {
  const phrases = new Map<string, number>();
  for (const u of queryUnits(text, 'any')) {
    for (const a of u.alts) {
      if (!phrases.has(a) && phrases.size >= MAX_QUERY_PHRASES) continue;
      phrases.set(a, Math.max(phrases.get(a) ?? 0, u.weight));
    }
  }
  return phrases;
}

/** The distinct phrases a recall query searches for (lowercased, stop words dropped). */
export function queryTerms(text: string): string[] {
  return [...weightedPhrases(text).keys()];
}

export function ftsQuery(text: string, mode: 'any' | 'all'): string | null {
  if (mode === 'all') {
    const groups = new Map<string, string>();
    for (const u of queryUnits(text, 'all')) {
      if (groups.size >= MAX_QUERY_PHRASES) break;
      const key = u.alts.join('\u0000');
      if (!groups.has(key)) groups.set(key, u.alts.length === 1 ? quote(u.alts[0]!) : `(${u.alts.map(quote).join(' OR ')})`);
    }
    return groups.size === 0 ? null : [...groups.values()].join(' AND ');
  }
  return anyQuery(weightedPhrases(text));
}

/** The `any` query of weighted phrases (weightedPhrases, or some of them). */
export function anyQuery(phrases: Map<string, number>): string | null {
  const parts: string[] = [];
  for (const [phrase, weight] of phrases) {
    // FTS5 scores every phrase of the query on its own: a phrase given twice counts twice.
    for (let i = 0; i < weight; i++) parts.push(quote(phrase));
  }
  return parts.length === 0 ? null : parts.join(' OR ');
}
