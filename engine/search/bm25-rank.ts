import type { ParsedQuery } from './fts-tokens.js';

// SQLite FTS5's bm25() computed over postings: by the hub, from the database or from memory
// (hub/data/postings-cache.ts), and by a local process that keeps them in memory
// (store/rank-memory.ts). Hot at scale: a common term of a 100,000-engram organization has tens of
// thousands of postings. So scores accumulate in a typed array indexed by each document's
// ordinal (reused between queries); document frequencies are sums of group sizes (postings come
// grouped by scope, only the groups the caller may read); and top-k pruning (MaxScore) skips the
// long lists: terms are taken rarest first, and once the most the remaining terms could add is
// below the k-th best score so far, no document outside those already scored can reach the top;
// the remaining terms count only for the documents whose score so far, plus that most, still
// reaches the k-th best.

const K1 = 1.2;
const B = 0.75;

/** One engram as ranking sees it. Retired engrams are kept (BM25 counts them in N and in document frequency). */
export interface RankedDoc {
  id: string;
  /** Index into the score array: unique among the documents of one ranking, small and dense. */
  ord: number;
  /** The group (scope) its postings are in. */
  group: number;
  /** Tokens in the full-text columns: BM25's document length. */
  ntok: number;
  live: boolean;
  /** Insertion order: ties rank as FTS5's rowid order does. */
  seq: number;
}

/** A term's postings in one group: document -> column-weighted count. A Map is one. */
export interface DocPostings {
  readonly size: number;
  get(doc: RankedDoc): number | undefined;
  forEach(fn: (freq: number, doc: RankedDoc) => void): void;
  /** forEach over the documents whose ordinal is marked 1 only, for postings that can tell without reading the document. */
  forEachMarked?(marks: Uint8Array, fn: (freq: number, doc: RankedDoc) => void): void;
  /** forEach over live documents, with their ordinal and length, for postings that hold them (so no document is read). */
  forEachLive?(fn: (freq: number, doc: RankedDoc, ord: number, ntok: number) => void): void;
}

/** A term's postings the caller may read, by group. */
export type GroupedPostings = ReadonlyMap<number, DocPostings>;

export interface RankInput {
  lists: ReadonlyMap<string, GroupedPostings>;
  /** Rows and tokens of the collection the caller may read (BM25's N and average length). */
  rows: number;
  tokens: number;
  /** One more than the largest ordinal. */
  size: number;
}

let scratch = new Float64Array(1024);
/** Candidates by ordinal (1), while one phrase's postings are walked for them; all 0 between uses. */
let marks = new Uint8Array(1024);

interface Phrase {
  ord: number;
  postings: GroupedPostings[];
  /** Documents holding it (retired ones included). */
  df: number;
  idf: number;
  /** For multi-token phrases: the documents holding every token, and their counts. */
  hits?: Array<[RankedDoc, number]>;
}

/** The count of a phrase in a document: the least of its tokens' counts, 0 when one is missing. */
function freqOf(p: Phrase, doc: RankedDoc): number {
  let freq = Infinity;
  for (const t of p.postings) {
    const w = t.get(doc.group)?.get(doc);
    if (w === undefined) return 0;
    freq = Math.min(freq, w);
  }
  return freq;
}

/**
 * FTS5's bm25(). Per phrase: freq = the column-weighted count in the row (a phrase of several
 * tokens, as CJK text gives, counts where all its tokens occur, with the least frequent one's
 * count: adjacency is not checked, FTS5 checks it); idf = ln((N - n + 0.5) / (n + 0.5)), 1e-6
 * when not positive; score = sum of idf * freq * (k1 + 1) / (freq + k1 * (1 - b + b * D /
 * avgdl)) in phrase order, D the row's tokens. Retired rows count in N and n but are never
 * returned. Equal scores keep insertion order, as FTS5's rowid order does.
 */
export function rankBm25(parsed: ParsedQuery, input: RankInput, limit: number): Array<{ id: string; score: number }> {
  if (limit <= 0) return [];
  const { rows: n } = input;
  const avgdl = n === 0 ? 1 : input.tokens / n;
  const part = (idf: number, freq: number, ntok: number) => (idf * (freq * (K1 + 1))) / (freq + K1 * (1 - B + (B * ntok) / avgdl));
  const phrases: Phrase[] = [];
  parsed.phrases.forEach((tokens, ord) => {
    const postings = tokens.map((t) => input.lists.get(t));
    if (postings.some((l) => !l)) return;
    const p: Phrase = { ord, postings: postings as GroupedPostings[], df: 0, idf: 0 };
    let df = 0;
    if (tokens.length === 1) {
      for (const g of p.postings[0]!.values()) df += g.size;
    } else {
      p.hits = [];
      for (const g of p.postings[0]!.values()) {
        g.forEach((_, doc) => {
          const freq = freqOf(p, doc);
          if (freq > 0) p.hits!.push([doc, freq]);
        });
      }
      df = p.hits.length;
    }
    p.df = df;
    const raw = Math.log((n - df + 0.5) / (df + 0.5));
    p.idf = raw <= 0 ? 1e-6 : raw;
    phrases.push(p);
  });

  if (scratch.length < input.size) {
    scratch = new Float64Array(Math.max(input.size, scratch.length * 2));
    marks = new Uint8Array(scratch.length);
  }
  const score = scratch;
  const touched: RankedDoc[] = [];
  try {
    // Rarest first; what each phrase can add at most is idf * (k1 + 1). "All" mode needs every
    // match of every phrase (its groups filter afterwards): no pruning there.
    const order = parsed.groups ? phrases : [...phrases].sort((a, b) => b.idf - a.idf);
    const rest: number[] = [];
    for (let i = order.length - 1, sum = 0; i >= 0; i--) rest[i] = sum += order[i]!.idf * (K1 + 1);
    // Once pruned, the documents that can still reach the top: those whose score so far plus the
    // most the remaining phrases add is not below the k-th best (scores only grow, so neither does it).
    let candidates: RankedDoc[] | null = null;
    order.forEach((p, i) => {
      if (!parsed.groups && touched.length >= limit) {
        const bar = kthBest(candidates ?? touched, score, limit) * (1 - 1e-9);
        if (candidates || rest[i]! < bar) candidates = (candidates ?? touched).filter((d) => score[d.ord]! + rest[i]! >= bar);
      }
      if (candidates) {
        // A lookup is a binary search: when the candidates would cost more lookups than the
        // phrase has postings, its postings are walked instead, adding to the candidates marked.
        if (candidates.length * Math.log2(p.df + 1) <= p.df) {
          for (const doc of candidates) {
            const freq = freqOf(p, doc);
            if (freq > 0) score[doc.ord] += part(p.idf, freq, doc.ntok);
          }
          return;
        }
        for (const doc of candidates) marks[doc.ord] = 1;
        const addTo = (freq: number, doc: RankedDoc) => void (score[doc.ord] += part(p.idf, freq, doc.ntok));
        const addMarked = (freq: number, doc: RankedDoc) => {
          if (marks[doc.ord] === 1) addTo(freq, doc);
        };
        if (p.hits) for (const [doc, freq] of p.hits) addMarked(freq, doc);
        else
          for (const g of p.postings[0]!.values()) {
            if (g.forEachMarked) g.forEachMarked(marks, addTo);
            else g.forEach(addMarked);
          }
        for (const doc of candidates) marks[doc.ord] = 0;
        return;
      }
      // Live documents only (retired ones count in N and df, never in scores).
      const add = (freq: number, doc: RankedDoc, ord: number, ntok: number) => {
        // Every part is positive: a zero score means not touched yet.
        if (score[ord] === 0) touched.push(doc);
        score[ord] += part(p.idf, freq, ntok);
      };
      const addIfLive = (freq: number, doc: RankedDoc) => {
        if (doc.live) add(freq, doc, doc.ord, doc.ntok);
      };
      if (p.hits) for (const [doc, freq] of p.hits) addIfLive(freq, doc);
      else
        for (const g of p.postings[0]!.values()) {
          if (g.forEachLive) g.forEachLive(add);
          else g.forEach(addIfLive);
        }
    });
    const groups = parsed.groups;
    const keep = groups
      ? (d: RankedDoc) => groups.every((g) => g.some((o) => freqOf(phrases.find((p) => p.ord === o) ?? NO_PHRASE, d) > 0))
      : null;
    // The answers' scores summed in phrase order, as FTS5 sums them.
    const exact = (doc: RankedDoc) =>
      phrases.reduce((sum, p) => {
        const freq = freqOf(p, doc);
        return freq > 0 ? sum + part(p.idf, freq, doc.ntok) : sum;
      }, 0);
    return topK(candidates ?? touched, score, keep, limit)
      .map((doc) => ({ doc, score: exact(doc) }))
      .sort((a, b) => Math.round(b.score * 1e9) - Math.round(a.score * 1e9) || a.doc.seq - b.doc.seq)
      .map((r) => ({ id: r.doc.id, score: r.score }));
  } finally {
    for (const d of touched) score[d.ord] = 0;
  }
}

const NO_PHRASE: Phrase = { ord: -1, postings: [new Map()], df: 0, idf: 0 };

/** The k-th largest score among these documents. */
function kthBest(docs: RankedDoc[], score: Float64Array, k: number): number {
  const best: number[] = [];
  for (const d of docs) {
    const s = score[d.ord]!;
    if (best.length === k && s <= best[k - 1]!) continue;
    let i = best.length === k ? k - 1 : best.length;
    while (i > 0 && s > best[i - 1]!) {
      best[i] = best[i - 1]!;
      i--;
    }
    best[i] = s;
  }
  return best[k - 1] ?? 0;
}

/** The best `limit` by score rounded as FTS5's order sees it, ties by insertion order: a bounded insertion sort. */
function topK(docs: RankedDoc[], score: Float64Array, keep: ((d: RankedDoc) => boolean) | null, limit: number): RankedDoc[] {
  const top: Array<{ doc: RankedDoc; key: number }> = [];
  const before = (a: { doc: RankedDoc; key: number }, b: { doc: RankedDoc; key: number }) =>
    a.key > b.key || (a.key === b.key && a.doc.seq < b.doc.seq);
  for (const doc of docs) {
    if (keep && !keep(doc)) continue;
    const entry = { doc, key: Math.round(score[doc.ord]! * 1e9) };
    if (top.length === limit && !before(entry, top[limit - 1]!)) continue;
    let i = top.length === limit ? limit - 1 : top.length;
    while (i > 0 && before(entry, top[i - 1]!)) {
      top[i] = top[i - 1]!;
      i--;
    }
    top[i] = entry;
  }
  return top.map((r) => r.doc);
}
