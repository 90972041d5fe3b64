// How text enters the full-text index. Queries go through the same folding and splitting
// (fts-query.ts), so the two always agree. The FTS5 tokenizer is `porter unicode61
// remove_diacritics 2`: it lowercases, strips Latin diacritics, stems English and splits on
// anything that is not a letter, a number or private use (combining marks included). What it
// does not do is done here, before it:
//
// - NFKC: full-width Latin and digits, ligatures, circled numbers and half-width katakana become
//   the characters people type (ＡＢＣ -> ABC, ﬁ -> fi, ｶﾀｶﾅ -> カタカナ).
// - Greek accents (tonos, dialytika) are dropped, as remove_diacritics does for Latin only;
//   Russian ё reads as е, German ß as ss: each is how people commonly type the word.
// - Hyphenated compounds are also indexed joined ("de-stress" adds "destress", "e-mail" adds
//   "email"), appended at the end so phrases stay adjacent.
// - Scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai, Lao,
//   Khmer, Myanmar) would otherwise form one token per run ("我们使用数据库" is one token, so
//   "数据库" cannot find it). Each of their characters becomes its own token; queries match them
//   as phrases of characters (see fts-query.ts).
//
// Changing anything here changes what the index holds: the index must be rebuilt
// (INDEX_SCHEMA_VERSION in store/sqlite-index.ts).

/** The FTS5 tokenizer of every full-text table: the local index's and the hub's term reader must use the same. */
export const FTS5_TOKENIZE = "tokenize = 'porter unicode61 remove_diacritics 2'";

/** BM25 column weights, in the order of the FTS5 columns: statement, tags, domain, rationale. */
export const BM25_COLUMN_WEIGHTS = [4.0, 2.0, 2.0, 1.0] as const;

const GREEK = /[\u0370-\u03ff\u1f00-\u1fff]/u;
const GREEK_WITH_MARKS = /([\u0370-\u03ff\u1f00-\u1fff])[\u0300-\u036f]+/gu;
const NEEDS_FOLDING = /[^\x00-\x7f]/u;
const HYPHENS = /[-\u2010\u2011]/gu;

/** The patterns text is split into words with, here and in fts-query.ts. */
export interface TextPatterns {
  /** A word: letters, digits, marks, private use. */
  word: RegExp;
  /** Hyphen-joined words: "self-care", "COVID-19", "state-of-the-art". */
  compound: RegExp;
  /** A compound, else a word. */
  chunk: RegExp;
  /** A character the tokenizer keeps in a token. */
  tokenChar: RegExp;
  letterOrDigit: RegExp;
  /** What may stand between a sentence end and its first word: spaces, quotes, brackets. */
  lead: RegExp;
  lower: RegExp;
  upper: RegExp;
  /** A word that starts with a capital (or title-case) letter. */
  capitalized: RegExp;
}

// Unicode property classes take about a millisecond each to compile, in every process (svc learn,
// recall and the prompt hook each pay it). ASCII text, the common case, is split with their ASCII
// equivalents, which match exactly the same there: no ASCII character is a mark, private use, a
// Unicode hyphen or an initial or final quote. The Unicode set is built for the first text that
// needs it. fts-query.test.ts checks that the two agree on ASCII.
export const ASCII_PATTERNS: TextPatterns = {
  word: /[A-Za-z0-9]+/g,
  compound: /[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+/g,
  chunk: /[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+|[A-Za-z0-9]+/g,
  tokenChar: /[A-Za-z0-9]/,
  letterOrDigit: /[A-Za-z0-9]/,
  lead: /[\t\n\v\f\r "'`*_([{-]/,
  lower: /[a-z]/,
  upper: /[A-Z]/,
  capitalized: /^[A-Z]/,
};

let unicode: (TextPatterns & { unsegmented: RegExp; unsegmentedAll: RegExp }) | undefined;

export function unicodePatterns(): TextPatterns & { unsegmented: RegExp; unsegmentedAll: RegExp } {
  if (unicode) return unicode;
  const word = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
  const compound = /[\p{L}\p{N}\p{M}]+(?:[-\u2010\u2011][\p{L}\p{N}\p{M}]+)+/gu;
  // One letter or digit of a script written without spaces between words.
  const unsegmented =
    /(?=[\p{L}\p{N}])[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]/u;
  return (unicode = {
    word,
    compound,
    chunk: new RegExp(`${compound.source}|${word.source}`, 'gu'),
    tokenChar: /[\p{L}\p{N}\p{Co}]/u,
    letterOrDigit: /[\p{L}\p{N}]/u,
    lead: /[\s\p{Ps}\p{Pi}\p{Pf}"'`*_¿¡-]/u,
    lower: /\p{Ll}/u,
    upper: /\p{Lu}/u,
    capitalized: /^[\p{Lu}\p{Lt}]/u,
    unsegmented,
    unsegmentedAll: new RegExp(unsegmented.source, 'gu'),
  });
}

/** The patterns for this text: the ASCII ones when it is all ASCII (see above). */
export function textPatterns(text: string): TextPatterns {
  return NEEDS_FOLDING.test(text) ? unicodePatterns() : ASCII_PATTERNS;
}

/** Character folding shared by the index and the queries (see the top of this file). */
export function foldText(text: string): string {
  if (!NEEDS_FOLDING.test(text)) return text; // plain ASCII: nothing to fold (the common case)
  let t = text.normalize('NFKC');
  if (GREEK.test(t)) t = t.normalize('NFD').replace(GREEK_WITH_MARKS, '$1').normalize('NFC');
  return t.replace(/[ёЁ]/gu, (c) => (c === 'ё' ? 'е' : 'Е')).replace(/ß|ẞ/gu, 'ss');
}

/** True when the text holds characters of a script written without spaces. */
export function hasUnsegmented(text: string): boolean {
  return NEEDS_FOLDING.test(text) && unicodePatterns().unsegmented.test(text);
}

/** Puts every character of an unsegmented script in its own token. */
export function splitUnsegmented(text: string): string {
  return hasUnsegmented(text) ? text.replace(unicodePatterns().unsegmentedAll, ' $& ') : text;
}

/** The joined form of a hyphenated compound ("self-care" -> "selfcare"). */
export function joinCompound(compound: string): string {
  return compound.replace(HYPHENS, '');
}

export function ftsIndexText(text: string): string {
  if (text.length === 0) return text;
  let t = foldText(text);
  const joined: string[] = [];
  if (t.includes('-') || t.includes('\u2010') || t.includes('\u2011')) {
    for (const m of t.matchAll(textPatterns(t).compound)) if (!hasUnsegmented(m[0])) joined.push(joinCompound(m[0]));
  }
  if (joined.length > 0) t = `${t} ${joined.join(' ')}`;
  return splitUnsegmented(t);
}
