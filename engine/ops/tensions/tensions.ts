import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramStore } from '../../backend.js';
import type { EngramDoc } from '../../model/engram-types.js';
import { learnedAt } from '../../model/learned-at.js';
import { conflict, invalid, notFound, SvcError } from '../../errors.js';
import type { OpContext } from '../context.js';
import { forget } from '../forget.js';
import { round, byCodeUnit } from '../../text.js';
import {
  checkTensionId,
  pairKey,
  type TensionFinding,
  type TensionRecord,
  type TensionSide,
  type TensionStatus,
  type TensionStore,
  type TensionTx,
} from '../../store/tension-records.js';
import { candidatePairs } from './candidates.js';
import type { TensionJudge } from './judge.js';

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

/** What `tensions` lists by default. */
export const UNRESOLVED_STATUSES: readonly TensionStatus[] = ['open', 'confirmed'];

export const DEFAULT_MIN_CONFIDENCE = 0.7;
export const DEFAULT_MAX_PAIRS = 50;
export const DEFAULT_BATCH_SIZE = 5;
export const DEFAULT_HALF_LIFE_DAYS = 90;

const DAY_MS = 86_400_000;

const recordKey = (r: { engrams: [TensionSide, TensionSide] }): string => pairKey(r.engrams[0].id, r.engrams[1].id);

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
  below_threshold: Array<
    Pick<TensionFinding, 'confidence' | 'judge_confidence' | 'explanation' | 'days_apart'> & { engrams: [string, string] }
  >;
  /** Pairs the judge found compatible. */
  not_contradictions: number;
  /** Pairs whose judgement could not be read. */
  malformed: Array<{ engrams: [string, string]; error: string; raw?: string }>;
}

export function temporalFactor(daysApart: number, halfLifeDays = DEFAULT_HALF_LIFE_DAYS): number {
  return Math.pow(0.5, daysApart / halfLifeDays);
}

export function daysApart(a: EngramDoc, b: EngramDoc): number {
  const ta = Date.parse(learnedAt(a) ?? '');
  const tb = Date.parse(learnedAt(b) ?? '');
  if (Number.isNaN(ta) || Number.isNaN(tb)) return 0;
  return round(Math.abs(ta - tb) / DAY_MS, 1);
}

const side = (e: EngramDoc): TensionSide => ({
  id: e.id,
  statement: e.statement,
  scope: e.scope,
  ...(learnedAt(e) ? { learned_at: learnedAt(e) } : {}),
});

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
        result.below_threshold.push({
          engrams: ids,
          confidence,
          judge_confidence: j.confidence,
          explanation: j.explanation,
          days_apart: days,
        });
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
  return byCodeUnit(da ?? '', db ?? '') || Number(sa) - Number(sb);
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
export async function resolveTension(
  store: TensionStore,
  id: string,
  winner: string,
  ctx: OpContext,
  reason?: string,
): Promise<ResolveResult> {
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
  if (kept.status === 'retired')
    throw conflict(`the winner ${winner} is retired: it cannot win a tension (pick ${loser}, or learn the statement again)`);

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
  backend: EngramStore,
  r: TensionRecord,
): Promise<TensionRecord & { engrams: [TensionSide & { status: string }, TensionSide & { status: string }] }> {
  const sides = await Promise.all(r.engrams.map(async (s) => ({ ...s, status: (await backend.get(s.id))?.status ?? 'missing' })));
  return { ...r, engrams: sides as [TensionSide & { status: string }, TensionSide & { status: string }] };
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
    return {
      ...defaults,
      warning: `${path} is not valid YAML (${(err as Error).message.split('\n')[0]}): tension settings use their defaults`,
    };
  }
  const t = (data as { tensions?: Record<string, unknown> } | null)?.tensions;
  if (!t || typeof t !== 'object') return defaults;
  const out = { ...defaults };
  if (typeof t.temporal_discount === 'boolean') out.temporal_discount = t.temporal_discount;
  if (typeof t.half_life_days === 'number' && t.half_life_days > 0) out.half_life_days = t.half_life_days;
  return out;
}
