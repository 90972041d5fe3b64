import type { DocPostings, RankedDoc } from './bm25-rank.js';

// One word's postings held in memory, by a local process (store/rank-memory.ts) and by the hub
// (hub/data/postings-cache.ts, one per word and scope): document ordinals (a local row's rowid)
// and column-weighted counts in typed arrays, sorted by ordinal, with each document's length as
// it was when its posting was written (-1 when retired): 12 bytes a posting where a Map entry
// takes about 30, walked without hashing, and ranked without reading each document (a cache
// miss per posting, which at 100,000 engrams was 40% of ranking's time). Postings arrive in
// order when read from the index (push); a changed engram moves one (set, delete: a binary
// search and a shift).

export class SortedPostings implements DocPostings {
  private rowids: Int32Array;
  /** Sums of column weights (4, 2, 2, 1): small integers, exact in a float32. */
  private weights: Float32Array;
  /** The document's length (tokens) when live, -1 when retired or absent. */
  private lengths: Float32Array;
  size = 0;

  /**
   * `docs`: the documents by rowid, the array the owner keeps (never replaced). A document's
   * rowid is its ordinal, and a document whose length or state changes is a new document whose
   * postings are all written again (the owners replace a changed engram whole).
   */
  constructor(private readonly docs: ReadonlyArray<RankedDoc | undefined>) {
    this.rowids = new Int32Array(8);
    this.weights = new Float32Array(8);
    this.lengths = new Float32Array(8);
  }

  /** Adds a posting above every rowid held. */
  push(rowid: number, weight: number): void {
    this.reserve(this.size + 1);
    this.rowids[this.size] = rowid;
    this.weights[this.size] = weight;
    this.lengths[this.size] = this.lengthOf(rowid);
    this.size += 1;
  }

  /** Drops the spare capacity pushes left (read once, a word's postings rarely grow much). */
  fit(): this {
    if (this.rowids.length > this.size) {
      this.rowids = this.rowids.slice(0, this.size);
      this.weights = this.weights.slice(0, this.size);
      this.lengths = this.lengths.slice(0, this.size);
    }
    return this;
  }

  get(doc: RankedDoc): number | undefined {
    const i = this.find(doc.ord);
    return i < this.size && this.rowids[i] === doc.ord ? this.weights[i] : undefined;
  }

  forEach(fn: (weight: number, doc: RankedDoc) => void): void {
    for (let i = 0; i < this.size; i++) {
      const doc = this.docs[this.rowids[i]!];
      if (doc) fn(this.weights[i]!, doc);
    }
  }

  /** The postings of live documents, with their ordinal and length, read without reading the documents. */
  forEachLive(fn: (weight: number, doc: RankedDoc, ord: number, ntok: number) => void): void {
    for (let i = 0; i < this.size; i++) {
      const ntok = this.lengths[i]!;
      if (ntok < 0) continue;
      const rowid = this.rowids[i]!;
      fn(this.weights[i]!, this.docs[rowid]!, rowid, ntok);
    }
  }

  /** The postings whose rowid is marked 1 (an owner's rowid is its document's ordinal): unmarked ones read no document. */
  forEachMarked(marks: Uint8Array, fn: (weight: number, doc: RankedDoc) => void): void {
    for (let i = 0; i < this.size; i++) {
      const rowid = this.rowids[i]!;
      if (marks[rowid] !== 1) continue;
      const doc = this.docs[rowid];
      if (doc) fn(this.weights[i]!, doc);
    }
  }

  set(rowid: number, weight: number): void {
    const i = this.find(rowid);
    if (i < this.size && this.rowids[i] === rowid) {
      this.weights[i] = weight;
      this.lengths[i] = this.lengthOf(rowid);
      return;
    }
    this.reserve(this.size + 1);
    this.rowids.copyWithin(i + 1, i, this.size);
    this.weights.copyWithin(i + 1, i, this.size);
    this.lengths.copyWithin(i + 1, i, this.size);
    this.rowids[i] = rowid;
    this.weights[i] = weight;
    this.lengths[i] = this.lengthOf(rowid);
    this.size += 1;
  }

  delete(rowid: number): void {
    const i = this.find(rowid);
    if (i >= this.size || this.rowids[i] !== rowid) return;
    this.rowids.copyWithin(i, i + 1, this.size);
    this.weights.copyWithin(i, i + 1, this.size);
    this.lengths.copyWithin(i, i + 1, this.size);
    this.size -= 1;
  }

  private lengthOf(rowid: number): number {
    const doc = this.docs[rowid];
    return doc?.live ? doc.ntok : -1;
  }

  /** The first index whose rowid is not below `rowid`. */
  private find(rowid: number): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.rowids[mid]! < rowid) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private reserve(n: number): void {
    if (n <= this.rowids.length) return;
    const capacity = Math.max(n, this.rowids.length * 2);
    const rowids = new Int32Array(capacity);
    rowids.set(this.rowids.subarray(0, this.size));
    const weights = new Float32Array(capacity);
    weights.set(this.weights.subarray(0, this.size));
    const lengths = new Float32Array(capacity);
    lengths.set(this.lengths.subarray(0, this.size));
    this.rowids = rowids;
    this.weights = weights;
    this.lengths = lengths;
  }
}
