import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramBackend, EngramWriter } from '../backend.js';
import type { EngramDoc } from '../model/engram-schema.js';
import { idDay } from '../model/ids.js';
import { isStopWord } from '../search/stop-words.js';
import { createFileDurable, fsyncDir, TEMP_PREFIX, writeFileDurable } from '../store/durable-write.js';
import { conflict, invalid, notFound, SvcError } from '../errors.js';
import type { ChatClient } from '../llm/chat.js';
import type { OpContext } from './context.js';
import { forget } from './forget.js';

// Tensions: pairs of live engrams that contradict each other.
//
// A scan picks candidate pairs by lexical overlap (token Jaccard over content words, highest
// first), never pairs linked by `supersedes` (either direction) nor two copies of one statement,
// and asks an LLM judge, a batch of pairs per call, for strict JSON per pair:
// {contradiction, confidence 0..1, explanation}. Contradictions at or above the confidence
// threshold become tension records: YAML files `<store>/tensions/T-YYYY-MMDD-NNN.yaml`, written
// durably under the store's write lock, beside the engrams and under git like them
// (`tensions/.last-id` remembers the last id handed out).
//
// Lifecycle: open -> confirmed (a real conflict; both engrams get a `conflicts` relation)
//            open | confirmed -> dismissed (a false positive; the pair is not flagged again)
//            open | confirmed | dismissed -> resolved (the winner stays, the loser is retired by
//            forget, its history kept). Resolved is final. Purging a record forgets its pair:
//            later scans may flag it again.
//
// Temporal discount (off by default): confidence × 0.5^(days_apart / 90), where days_apart is
// the time between the two engrams' learned_at. Statements learned months apart are more often
// a preference that changed (which `supersedes` records) than a live contradiction; the discount
// halves the confidence for every 90 days between them, so at the default threshold 0.7 a
// judge's 0.95 survives about 40 days apart.

export const TENSION_STATUSES = ['open', 'confirmed', 'dismissed', 'resolved'] as const;
export type TensionStatus = (typeof TENSION_STATUSES)[number];
/** What `tensions` lists by default. */
export const UNRESOLVED_STATUSES: readonly TensionStatus[] = ['open', 'confirmed'];

export const DEFAULT_MIN_CONFIDENCE = 0.7;
export const DEFAULT_MAX_PAIRS = 50;
export const DEFAULT_BATCH_SIZE = 5;
export const DEFAULT_HALF_LIFE_DAYS = 90;
/** Pairs sharing less than this share of their content words are not candidates. */
export const MIN_OVERLAP = 0.2;

export const TENSION_ID = /^T-\d{4}-\d{4}-\d{3,}$/;
const DAY_MS = 86_400_000;

export interface TensionSide {
  id: string;
  statement: string;
  scope: string;
  learned_at?: string;
}

/** What a scan found about one pair, before (or without) a record. */
export interface TensionFinding {
  engrams: [TensionSide, TensionSide];
  /** The confidence compared with the threshold: the judge's, discounted when asked. */
  confidence: number;
  judge_confidence: number;
  explanation: string;
  /** Token Jaccard of the two statements' content words, 0..1. */
  overlap: number;
  days_apart: number;
  temporal_discount: boolean;
  model: string;
}

export interface TensionRecord extends TensionFinding {
  id: string;
  status: TensionStatus;
  detected_at: string;
  updated_at: string;
  confirmed_at?: string;
  dismissed_at?: string;
  resolved_at?: string;
  winner?: string;
  loser?: string;
  reason?: string;
}

/** Order-free key of a pair of engram ids. */
export const pairKey = (a: string, b: string): string => (a < b ? `${a}|${b}` : `${b}|${a}`);
const recordKey = (r: { engrams: [TensionSide, TensionSide] }): string => pairKey(r.engrams[0].id, r.engrams[1].id);

// ------------------------------------------------------------------------------ record store

/** Tension records of one store, read and written under the backend's write lock. */
export interface TensionStore {
  readonly backend: EngramBackend;
  /** Every readable record; unreadable files are named in `warnings`, never dropped silently. */
  list(): Promise<{ records: TensionRecord[]; warnings: string[] }>;
  get(id: string): Promise<TensionRecord | null>;
  /** Runs `fn` holding the store's write lock; engram writes through `tx.engrams` commit with it. */
  write<T>(fn: (tx: TensionTx) => Promise<T>): Promise<T>;
}

export interface TensionTx {
  engrams: EngramWriter;
  list(): TensionRecord[];
  get(id: string): TensionRecord | null;
  /** Allocates the next id of the day and writes the record. */
  create(finding: TensionFinding, now: Date): TensionRecord;
  update(record: TensionRecord): void;
  remove(id: string): void;
}

const RECORD_EXT = '.yaml';
/** The last id handed out, so a purged record's id is not handed out again. */
const LAST_ID_FILE = '.last-id';

/** Records as YAML files in `<root>/tensions/`, one per record. */
export class LocalTensionStore implements TensionStore {
  readonly dir: string;

  constructor(
    readonly backend: EngramBackend,
    root: string,
  ) {
    this.dir = join(root, 'tensions');
  }

  async list(): Promise<{ records: TensionRecord[]; warnings: string[] }> {
    const { parse } = await import('yaml');
    return this.readAll(parse);
  }

  async get(id: string): Promise<TensionRecord | null> {
    checkTensionId(id);
    const { parse } = await import('yaml');
    const path = join(this.dir, id + RECORD_EXT);
    if (!existsSync(path)) return null;
    const r = readRecord(path, id, parse);
    if ('error' in r) throw new SvcError('storage', r.error);
    return r.record;
  }

  async write<T>(fn: (tx: TensionTx) => Promise<T>): Promise<T> {
    const { parse, stringify } = await import('yaml');
    const text = (r: TensionRecord): string => stringify(r, { lineWidth: 0 });
    return this.backend.write(async (engrams) => {
      mkdirSync(this.dir, { recursive: true });
      let cache: TensionRecord[] | undefined;
      const all = (): TensionRecord[] => (cache ??= this.readAll(parse).records);
      const tx: TensionTx = {
        engrams,
        list: () => [...all()],
        get: (id) => all().find((r) => r.id === id) ?? null,
        create: (finding, now) => {
          const day = idDay(now);
          const stem = `T-${day}-`;
          // The next number after every record of the day and the last id handed out (its record
          // may have been purged since: an id is never reused).
          const seqOf = (name: string): number => (name.startsWith(stem) ? Number(name.slice(stem.length).replace(RECORD_EXT, '')) || 0 : 0);
          let seq = seqOf(this.lastId());
          for (const f of readdirSync(this.dir)) if (f.endsWith(RECORD_EXT)) seq = Math.max(seq, seqOf(f));
          const at = now.toISOString();
          for (;;) {
            seq += 1;
            const id = `${stem}${String(seq).padStart(3, '0')}`;
            const record: TensionRecord = { id, status: 'open', ...finding, detected_at: at, updated_at: at };
            // Exclusive create: an id is never taken twice, even by a writer that ignored the lock.
            if (createFileDurable(join(this.dir, id + RECORD_EXT), text(record))) {
              writeFileDurable(join(this.dir, LAST_ID_FILE), `${id}\n`);
              all().push(record);
              return record;
            }
          }
        },
        update: (record) => {
          checkTensionId(record.id);
          writeFileDurable(join(this.dir, record.id + RECORD_EXT), text(record));
          const list = all();
          const i = list.findIndex((r) => r.id === record.id);
          if (i >= 0) list[i] = record;
          else list.push(record);
        },
        remove: (id) => {
          checkTensionId(id);
          const path = join(this.dir, id + RECORD_EXT);
          if (existsSync(path)) {
            unlinkSync(path);
            fsyncDir(this.dir);
          }
          cache = all().filter((r) => r.id !== id);
        },
      };
      return fn(tx);
    });
  }

  private lastId(): string {
    try {
      return readFileSync(join(this.dir, LAST_ID_FILE), 'utf8').trim();
    } catch {
      return '';
    }
  }

  private readAll(parse: (text: string) => unknown): { records: TensionRecord[]; warnings: string[] } {
    if (!existsSync(this.dir)) return { records: [], warnings: [] };
    const records: TensionRecord[] = [];
    const warnings: string[] = [];
    for (const f of readdirSync(this.dir).sort()) {
      if (!f.endsWith(RECORD_EXT) || f.startsWith(TEMP_PREFIX) || f.startsWith('.')) continue;
      const r = readRecord(join(this.dir, f), f.slice(0, -RECORD_EXT.length), parse);
      if ('error' in r) warnings.push(r.error);
      else records.push(r.record);
    }
    return { records, warnings };
  }
}

function readRecord(path: string, id: string, parse: (text: string) => unknown): { record: TensionRecord } | { error: string } {
  let value: unknown;
  try {
    value = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { error: `tension record ${path} is unreadable: ${(err as Error).message.split('\n')[0]} (skipped)` };
  }
  const r = value as Partial<TensionRecord> | null;
  const sideOk = (s: unknown): boolean =>
    typeof s === 'object' && s !== null && typeof (s as TensionSide).id === 'string' && typeof (s as TensionSide).statement === 'string';
  if (
    !r ||
    typeof r !== 'object' ||
    r.id !== id ||
    !TENSION_STATUSES.includes(r.status as TensionStatus) ||
    !Array.isArray(r.engrams) ||
    r.engrams.length !== 2 ||
    !r.engrams.every(sideOk)
  ) {
    return { error: `tension record ${path} is not a valid record (needs id ${id}, a status and two engrams; skipped)` };
  }
  return { record: r as TensionRecord };
}

export function checkTensionId(id: string): void {
  if (!TENSION_ID.test(id)) throw invalid(`not a tension id: "${id}" (expected T-YYYY-MMDD-NNN, e.g. T-2026-0101-001)`);
}

// ------------------------------------------------------------------------------ candidates

/** Content words of a statement: folded, without stop words, light plural stemming. */
export function contentTokens(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (isStopWord(raw)) continue;
    if (raw.length < 2 && !/\p{N}/u.test(raw) && !/[^\p{Script=Latin}]/u.test(raw)) continue;
    out.add(raw.length > 3 && raw.endsWith('s') && !/(?:ss|us|is)$/.test(raw) ? raw.slice(0, -1) : raw);
  }
  return out;
}

export function jaccard(a: Set<string>, b: Set<string>): number {
  return overlapOf(a, b).jaccard;
}

function overlapOf(a: Set<string>, b: Set<string>): { shared: number; jaccard: number } {
  if (a.size === 0 || b.size === 0) return { shared: 0, jaccard: 0 };
  let shared = 0;
  for (const t of a) if (b.has(t)) shared += 1;
  return { shared, jaccard: shared / (a.size + b.size - shared) };
}

export interface CandidatePair {
  a: EngramDoc;
  b: EngramDoc;
  overlap: number;
  key: string;
}

/** True when either engram supersedes the other (as recorded on either side). */
export function linkedBySupersedes(a: EngramDoc, b: EngramDoc): boolean {
  const has = (e: EngramDoc, field: 'supersedes' | 'superseded_by', id: string): boolean => (e.relations?.[field] ?? []).includes(id);
  return has(a, 'supersedes', b.id) || has(b, 'supersedes', a.id) || has(a, 'superseded_by', b.id) || has(b, 'superseded_by', a.id);
}

/**
 * Pairs of engrams sharing content words, highest overlap first (then most shared words, then
 * ids), at or above `minOverlap`. Never a pair linked by supersedes, nor two engrams with the same
 * content hash (one statement learned at two scopes).
 */
export function candidatePairs(engrams: EngramDoc[], minOverlap = MIN_OVERLAP): CandidatePair[] {
  const tokens = engrams.map((e) => contentTokens(e.statement));
  // Inverted index; words found in very many engrams say nothing about a pair and are not used
  // to find pairs (they still count in the overlap).
  const maxDf = Math.max(25, Math.ceil(Math.sqrt(engrams.length) * 4));
  const postings = new Map<string, number[]>();
  tokens.forEach((set, i) => {
    for (const t of set) {
      const list = postings.get(t);
      if (list) list.push(i);
      else postings.set(t, [i]);
    }
  });
  const seen = new Set<number>();
  const pairs: Array<CandidatePair & { shared: number }> = [];
  const n = engrams.length;
  for (const list of postings.values()) {
    if (list.length < 2 || list.length > maxDf) continue;
    for (let x = 0; x < list.length; x++) {
      for (let y = x + 1; y < list.length; y++) {
        const i = list[x]!;
        const j = list[y]!;
        const code = i * n + j;
        if (seen.has(code)) continue;
        seen.add(code);
        const a = engrams[i]!;
        const b = engrams[j]!;
        if (a.id === b.id) continue;
        const { shared, jaccard: overlap } = overlapOf(tokens[i]!, tokens[j]!);
        if (overlap < minOverlap) continue;
        if (a.content_hash && a.content_hash === b.content_hash) continue;
        if (linkedBySupersedes(a, b)) continue;
        const [first, second] = a.id < b.id ? [a, b] : [b, a];
        pairs.push({ a: first, b: second, overlap: round(overlap, 4), key: pairKey(a.id, b.id), shared });
      }
    }
  }
  pairs.sort((p, q) => q.overlap - p.overlap || q.shared - p.shared || p.key.localeCompare(q.key));
  return pairs.map(({ shared: _shared, ...p }) => p);
}

// ------------------------------------------------------------------------------ the judge

export type PairJudgement =
  | { ok: true; contradiction: boolean; confidence: number; explanation: string }
  | { ok: false; error: string; raw?: string };

/** Judges pairs; one call judges one batch. */
export interface TensionJudge {
  readonly model: string;
  judge(pairs: Array<{ a: EngramDoc; b: EngramDoc }>): Promise<PairJudgement[]>;
}

export const JUDGE_SYSTEM_PROMPT = `You check an AI agent's long-term memory for contradictions. You get numbered pairs of stored statements (A and B).
Two statements contradict when an agent cannot follow both in the same situation: one requires what the other forbids, or they state incompatible facts (e.g. "Use tabs for indentation" vs "Indent with spaces").
They do not contradict when they are about different things, when one is a compatible refinement or special case of the other, or when they merely differ in wording or detail.
Answer with strict JSON only: no prose, no markdown, no code fences. The shape:
{"judgements": [{"pair": 1, "contradiction": true, "confidence": 0.9, "explanation": "one short sentence"}]}
Give exactly one judgement per pair, using the pair's number. confidence is a number from 0 to 1: how sure you are of your answer about contradiction.`;

export function judgePrompt(pairs: Array<{ a: EngramDoc; b: EngramDoc }>): string {
  const blocks = pairs.map(
    ({ a, b }, i) => `Pair ${i + 1}\nA (${a.id}, scope ${a.scope}): ${oneLine(a.statement)}\nB (${b.id}, scope ${b.scope}): ${oneLine(b.statement)}`,
  );
  return `Judge these ${pairs.length} pair${pairs.length === 1 ? '' : 's'}:\n\n${blocks.join('\n\n')}\n\nAnswer with the JSON object only.`;
}

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The judge backed by an OpenAI-compatible chat API. */
export function llmJudge(client: ChatClient): TensionJudge {
  return {
    model: client.model,
    async judge(pairs) {
      const res = await client.complete({
        messages: [
          { role: 'system', content: JUDGE_SYSTEM_PROMPT },
          { role: 'user', content: judgePrompt(pairs) },
        ],
        temperature: 0,
      });
      return parseJudgements(res.content, pairs.length);
    },
  };
}

/**
 * Reads the judge's answer for `count` pairs. Tolerates code fences, prose around the JSON, a bare
 * array, other list keys, string booleans and numbers, and percentages; anything it cannot read
 * becomes an error for the pairs concerned, never an exception.
 */
export function parseJudgements(content: string, count: number): PairJudgement[] {
  const raw = content.length > 500 ? `${content.slice(0, 500)}...` : content;
  const fail = (error: string): PairJudgement[] => Array.from({ length: count }, () => ({ ok: false as const, error, raw }));
  const value = extractJson(content);
  if (value === undefined) return fail('the judge did not answer with JSON');
  let items: unknown[] | undefined;
  if (Array.isArray(value)) items = value;
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const list = ['judgements', 'judgments', 'results', 'pairs', 'items', 'answers'].map((k) => o[k]).find(Array.isArray);
    if (list) items = list as unknown[];
    else if ('contradiction' in o) items = [o];
  }
  if (!items) return fail('the judge answered JSON without a list of judgements');

  const out: Array<PairJudgement | undefined> = Array.from({ length: count }, () => undefined);
  items.forEach((item, position) => {
    if (!item || typeof item !== 'object') return;
    const o = item as Record<string, unknown>;
    const index = pairIndex(o.pair ?? o.index ?? o.id ?? o.pair_id) ?? (items!.length === count ? position + 1 : undefined);
    if (index === undefined || index < 1 || index > count || out[index - 1]) return;
    out[index - 1] = readJudgement(o, raw);
  });
  return out.map((j) => j ?? { ok: false, error: 'the judge gave no judgement for this pair', raw });
}

function readJudgement(o: Record<string, unknown>, raw: string): PairJudgement {
  const c = o.contradiction ?? o.contradicts ?? o.is_contradiction;
  const contradiction = c === true || c === 'true' || c === 'yes' ? true : c === false || c === 'false' || c === 'no' ? false : undefined;
  if (contradiction === undefined) return { ok: false, error: 'the judgement has no boolean "contradiction"', raw };
  let confidence = typeof o.confidence === 'string' ? Number(o.confidence.replace(/%$/, '')) : o.confidence;
  if (typeof confidence !== 'number' || !Number.isFinite(confidence)) return { ok: false, error: 'the judgement has no numeric "confidence"', raw };
  if (confidence > 1 && confidence <= 100) confidence /= 100;
  if (confidence < 0 || confidence > 1) return { ok: false, error: `the judgement's confidence ${confidence} is outside 0..1`, raw };
  const e = o.explanation ?? o.reason ?? o.rationale;
  return { ok: true, contradiction, confidence, explanation: typeof e === 'string' ? oneLine(e) : '' };
}

function pairIndex(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string') {
    const m = /(\d+)/.exec(v);
    if (m) return Number(m[1]);
  }
  return undefined;
}

function extractJson(content: string): unknown {
  const text = content.replace(/```(?:json)?/gi, '').trim();
  try {
    return JSON.parse(text);
  } catch {
    /* look for the JSON inside */
  }
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = text.indexOf(open);
    const end = text.lastIndexOf(close);
    if (start >= 0 && end > start) {
      try {
        return JSON.parse(text.slice(start, end + 1));
      } catch {
        /* try the other shape */
      }
    }
  }
  return undefined;
}

// ------------------------------------------------------------------------------ scan

export interface ScanOptions {
  judge: TensionJudge;
  scope?: string;
  domain?: string;
  minConfidence?: number;
  maxPairs?: number;
  batchSize?: number;
  /** false: a dry run: nothing is written and recorded pairs are judged again. */
  persist?: boolean;
  temporalDiscount?: boolean;
  halfLifeDays?: number;
  /** Called after each judged batch. */
  onProgress?: (judged: number, total: number) => void;
}

export interface ScanResult {
  model: string;
  persisted: boolean;
  min_confidence: number;
  temporal_discount: boolean;
  half_life_days?: number;
  /** Live engrams in the scanned scope/domain. */
  engrams: number;
  /** Pairs with enough overlap (supersedes-linked and identical pairs excluded). */
  candidates: number;
  /** Candidates skipped because a record already names the pair (persisted scans only). */
  suppressed: number;
  judged: number;
  /** LLM calls made. */
  calls: number;
  /** Contradictions at or above the threshold; `id` is null in a dry run (or when another writer recorded the pair first). */
  flagged: Array<TensionFinding & { id: string | null }>;
  /** Contradictions the judge saw, below the threshold. */
  below_threshold: Array<Pick<TensionFinding, 'confidence' | 'judge_confidence' | 'explanation' | 'days_apart'> & { engrams: [string, string] }>;
  /** Pairs the judge found compatible. */
  not_contradictions: number;
  /** Pairs whose judgement could not be read. */
  malformed: Array<{ engrams: [string, string]; error: string; raw?: string }>;
}

export function temporalFactor(daysApart: number, halfLifeDays = DEFAULT_HALF_LIFE_DAYS): number {
  return Math.pow(0.5, daysApart / halfLifeDays);
}

function learnedAt(e: EngramDoc): string | undefined {
  return e.temporal?.learned_at || e.sources?.[0]?.stored_at || undefined;
}

export function daysApart(a: EngramDoc, b: EngramDoc): number {
  const ta = Date.parse(learnedAt(a) ?? '');
  const tb = Date.parse(learnedAt(b) ?? '');
  if (Number.isNaN(ta) || Number.isNaN(tb)) return 0;
  return round(Math.abs(ta - tb) / DAY_MS, 1);
}

const side = (e: EngramDoc): TensionSide => ({ id: e.id, statement: e.statement, scope: e.scope, ...(learnedAt(e) ? { learned_at: learnedAt(e) } : {}) });

export async function scanTensions(store: TensionStore, opts: ScanOptions, ctx: OpContext): Promise<ScanResult> {
  const minConfidence = opts.minConfidence ?? DEFAULT_MIN_CONFIDENCE;
  const maxPairs = opts.maxPairs ?? DEFAULT_MAX_PAIRS;
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  const persist = opts.persist !== false;
  const discount = opts.temporalDiscount === true;
  const halfLife = opts.halfLifeDays ?? DEFAULT_HALF_LIFE_DAYS;
  if (!(minConfidence >= 0 && minConfidence <= 1)) throw invalid(`min confidence must be between 0 and 1 (got ${minConfidence})`);
  if (!Number.isInteger(maxPairs) || maxPairs < 1) throw invalid(`max pairs must be a positive whole number (got ${maxPairs})`);
  if (!Number.isInteger(batchSize) || batchSize < 1) throw invalid(`batch size must be a positive whole number (got ${batchSize})`);
  if (!(halfLife > 0)) throw invalid(`the half-life must be a positive number of days (got ${halfLife})`);

  const engrams = await store.backend.list({ scope: opts.scope, domain: opts.domain });
  const all = candidatePairs(engrams);
  const recorded = persist ? new Set((await store.list()).records.map(recordKey)) : new Set<string>();
  const open = all.filter((p) => !recorded.has(p.key));
  const pairs = open.slice(0, maxPairs);

  const result: ScanResult = {
    model: opts.judge.model,
    persisted: persist,
    min_confidence: minConfidence,
    temporal_discount: discount,
    ...(discount ? { half_life_days: halfLife } : {}),
    engrams: engrams.length,
    candidates: all.length,
    suppressed: all.length - open.length,
    judged: 0,
    calls: 0,
    flagged: [],
    below_threshold: [],
    not_contradictions: 0,
    malformed: [],
  };

  for (let start = 0; start < pairs.length; start += batchSize) {
    const batch = pairs.slice(start, start + batchSize);
    result.calls += 1;
    const judgements = await opts.judge.judge(batch);
    const found: TensionFinding[] = [];
    batch.forEach((pair, i) => {
      const j = judgements[i] ?? { ok: false as const, error: 'the judge gave no judgement for this pair' };
      const ids: [string, string] = [pair.a.id, pair.b.id];
      if (!j.ok) {
        result.malformed.push({ engrams: ids, error: j.error, ...(j.raw !== undefined ? { raw: j.raw } : {}) });
        return;
      }
      if (!j.contradiction) {
        result.not_contradictions += 1;
        return;
      }
      const days = daysApart(pair.a, pair.b);
      const confidence = round(discount ? j.confidence * temporalFactor(days, halfLife) : j.confidence, 4);
      if (confidence < minConfidence) {
        result.below_threshold.push({ engrams: ids, confidence, judge_confidence: j.confidence, explanation: j.explanation, days_apart: days });
        return;
      }
      found.push({
        engrams: [side(pair.a), side(pair.b)],
        confidence,
        judge_confidence: j.confidence,
        explanation: j.explanation,
        overlap: pair.overlap,
        days_apart: days,
        temporal_discount: discount,
        model: opts.judge.model,
      });
    });
    result.judged += batch.length;

    if (found.length && persist) {
      // Each batch is recorded as it is judged: an interrupted scan keeps what it paid for.
      const ids = await store.write(async (tx) => {
        const known = new Set(tx.list().map(recordKey));
        return found.map((f) => {
          const key = recordKey(f);
          if (known.has(key)) return null; // another scan recorded it meanwhile
          known.add(key);
          return tx.create(f, ctx.now()).id;
        });
      });
      found.forEach((f, i) => result.flagged.push({ id: ids[i] ?? null, ...f }));
    } else {
      for (const f of found) result.flagged.push({ id: null, ...f });
    }
    opts.onProgress?.(result.judged, pairs.length);
  }
  result.flagged.sort((x, y) => y.confidence - x.confidence);
  return result;
}

// ------------------------------------------------------------------------------ list and lifecycle

export type TensionListStatus = 'unresolved' | 'all' | TensionStatus;

export interface TensionListResult {
  records: TensionRecord[];
  warnings: string[];
}

/** Records, newest first: unresolved (open and confirmed) by default. */
export async function listTensions(store: TensionStore, status: TensionListStatus = 'unresolved'): Promise<TensionListResult> {
  const { records, warnings } = await store.list();
  const keep = (r: TensionRecord): boolean =>
    status === 'all' ? true : status === 'unresolved' ? UNRESOLVED_STATUSES.includes(r.status) : r.status === status;
  return { records: records.filter(keep).sort((a, b) => compareIds(b.id, a.id)), warnings };
}

function compareIds(a: string, b: string): number {
  const [, da, sa] = /^T-(\d{4}-\d{4})-(\d+)$/.exec(a) ?? [];
  const [, db, sb] = /^T-(\d{4}-\d{4})-(\d+)$/.exec(b) ?? [];
  return (da ?? '').localeCompare(db ?? '') || Number(sa) - Number(sb);
}

async function mustGet(tx: TensionTx, id: string): Promise<TensionRecord> {
  checkTensionId(id);
  const r = tx.get(id);
  if (!r) throw notFound(`no tension ${id}`);
  return r;
}

/** Adds or removes each engram of the pair from the other's `conflicts` relation. */
async function linkConflicts(tx: TensionTx, r: TensionRecord, link: boolean): Promise<void> {
  const [a, b] = r.engrams.map((s) => s.id) as [string, string];
  for (const [self, other] of [
    [a, b],
    [b, a],
  ] as const) {
    const e = await tx.engrams.get(self);
    if (!e) continue;
    const current = e.relations?.conflicts ?? [];
    const next = link ? [...new Set([...current, other])] : current.filter((x) => x !== other);
    if (next.length === current.length && next.every((x, i) => x === current[i])) continue;
    e.relations = { ...e.relations, conflicts: next };
    await tx.engrams.put(e);
  }
}

export interface TensionChange {
  record: TensionRecord;
  /** False when the record already had that status (nothing was written). */
  changed: boolean;
}

/** confirm: a real conflict (both engrams get a `conflicts` relation to each other). */
export async function confirmTension(store: TensionStore, id: string, ctx: OpContext, reason?: string): Promise<TensionChange> {
  return store.write(async (tx) => {
    const r = await mustGet(tx, id);
    if (r.status === 'resolved') throw conflict(`tension ${id} is already resolved (winner ${r.winner})`);
    if (r.status === 'confirmed') return { record: r, changed: false };
    const at = ctx.now().toISOString();
    const next: TensionRecord = { ...r, status: 'confirmed', confirmed_at: at, updated_at: at, ...(reason ? { reason } : {}) };
    delete next.dismissed_at;
    await linkConflicts(tx, next, true);
    tx.update(next);
    return { record: next, changed: true };
  });
}

/** dismiss: a false positive; the pair is not flagged by later scans while the record exists. */
export async function dismissTension(store: TensionStore, id: string, ctx: OpContext, reason?: string): Promise<TensionChange> {
  return store.write(async (tx) => {
    const r = await mustGet(tx, id);
    if (r.status === 'resolved') throw conflict(`tension ${id} is already resolved (winner ${r.winner})`);
    if (r.status === 'dismissed') return { record: r, changed: false };
    const at = ctx.now().toISOString();
    const next: TensionRecord = { ...r, status: 'dismissed', dismissed_at: at, updated_at: at, ...(reason ? { reason } : {}) };
    if (r.status === 'confirmed') await linkConflicts(tx, next, false);
    tx.update(next);
    return { record: next, changed: true };
  });
}

export interface ResolveResult extends TensionChange {
  winner: string;
  loser: string;
  /** What forget did to the loser. */
  loser_action: 'retired' | 'already_retired';
}

/** resolve: keeps `winner` and retires the other engram with the engine's forget (history kept). */
export async function resolveTension(store: TensionStore, id: string, winner: string, ctx: OpContext, reason?: string): Promise<ResolveResult> {
  checkTensionId(id);
  const before = await store.get(id);
  if (!before) throw notFound(`no tension ${id}`);
  const ids = before.engrams.map((s) => s.id);
  if (!ids.includes(winner)) throw invalid(`--winner must be one of the tension's engrams: ${ids.join(' or ')} (got ${winner})`);
  const loser = ids.find((x) => x !== winner)!;
  if (before.status === 'resolved') {
    if (before.winner === winner) return { record: before, changed: false, winner, loser, loser_action: 'already_retired' };
    throw conflict(`tension ${id} is already resolved in favour of ${before.winner}`);
  }
  const kept = await store.backend.get(winner);
  if (!kept) throw notFound(`no engram ${winner}`);
  if (kept.status === 'retired') throw conflict(`the winner ${winner} is retired: it cannot win a tension (pick ${loser}, or learn the statement again)`);

  // forget takes the write lock itself: retire first, then record the outcome.
  const why = reason ?? `tension ${id} resolved in favour of ${winner}`;
  const forgotten = await forget(store.backend, { target: loser, reason: why }, ctx);
  if (forgotten.action === 'ambiguous') throw new SvcError('storage', `could not retire ${loser}`);
  return store.write(async (tx) => {
    const r = await mustGet(tx, id);
    const at = ctx.now().toISOString();
    const next: TensionRecord = { ...r, status: 'resolved', resolved_at: at, updated_at: at, winner, loser, reason: why };
    tx.update(next);
    return { record: next, changed: true, winner, loser, loser_action: forgotten.action };
  });
}

export type PurgeStatus = 'dismissed' | 'resolved' | 'closed';

/** Deletes closed records (dismissed, resolved or both), optionally only those closed more than `olderThanDays` ago. */
export async function purgeTensions(
  store: TensionStore,
  opts: { status?: PurgeStatus; olderThanDays?: number },
  ctx: OpContext,
): Promise<{ purged: string[] }> {
  const status = opts.status ?? 'closed';
  const wanted: TensionStatus[] = status === 'closed' ? ['dismissed', 'resolved'] : [status];
  const cutoff = opts.olderThanDays === undefined ? Infinity : ctx.now().getTime() - opts.olderThanDays * DAY_MS;
  return store.write(async (tx) => {
    const purged: string[] = [];
    for (const r of tx.list()) {
      if (!wanted.includes(r.status)) continue;
      const closedAt = Date.parse((r.status === 'resolved' ? r.resolved_at : r.dismissed_at) ?? r.updated_at);
      if (cutoff !== Infinity && !(closedAt <= cutoff)) continue;
      tx.remove(r.id);
      purged.push(r.id);
    }
    return { purged: purged.sort(compareIds) };
  });
}

/** The record's engrams with their status now (an engram may have been retired since). */
export async function withCurrentStatus(
  backend: EngramBackend,
  r: TensionRecord,
): Promise<TensionRecord & { engrams: [TensionSide & { status: string }, TensionSide & { status: string }] }> {
  const sides = await Promise.all(r.engrams.map(async (s) => ({ ...s, status: (await backend.get(s.id))?.status ?? 'missing' })));
  return { ...r, engrams: sides as [TensionSide & { status: string }, TensionSide & { status: string }] };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/**
 * The store's tension settings, from `config.yaml` beside the engrams:
 *   tensions:
 *     temporal_discount: true     # default false
 *     half_life_days: 90          # default 90
 */
export async function tensionConfig(root: string): Promise<{ temporal_discount: boolean; half_life_days: number; warning?: string }> {
  const defaults = { temporal_discount: false, half_life_days: DEFAULT_HALF_LIFE_DAYS };
  const path = join(root, 'config.yaml');
  if (!existsSync(path)) return defaults;
  const { parse } = await import('yaml');
  let data: unknown;
  try {
    data = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { ...defaults, warning: `${path} is not valid YAML (${(err as Error).message.split('\n')[0]}): tension settings use their defaults` };
  }
  const t = (data as { tensions?: Record<string, unknown> } | null)?.tensions;
  if (!t || typeof t !== 'object') return defaults;
  const out = { ...defaults };
  if (typeof t.temporal_discount === 'boolean') out.temporal_discount = t.temporal_discount;
  if (typeof t.half_life_days === 'number' && t.half_life_days > 0) out.half_life_days = t.half_life_days;
  return out;
}
