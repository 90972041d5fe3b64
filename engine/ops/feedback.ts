import type { EngramStore } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import { invalid, notFound } from '../errors.js';
import type { OpContext } from './context.js';
import { round } from '../text.js';
import { linkCoAccessed } from './associations.js';

export const FEEDBACK_SIGNALS = ['positive', 'negative', 'neutral'] as const;
export type FeedbackSignal = (typeof FEEDBACK_SIGNALS)[number];

export interface FeedbackItem {
  id: string;
  signal: FeedbackSignal;
}

/** How far one signal moves retrieval strength (0..1), which ranking reads. */
const STEP = 0.1;

/** Checks a batch before anything is written: every item needs a string id and a known signal. */
export function parseFeedbackBatch(value: unknown): FeedbackItem[] {
  if (!Array.isArray(value)) throw invalid('--batch must be a JSON array of {"id", "signal"} objects');
  const errors: string[] = [];
  value.forEach((item, i) => {
    if (typeof item !== 'object' || item === null) return errors.push(`[${i}]: must be an object`);
    const { id, signal } = item as Record<string, unknown>;
    if (typeof id !== 'string' || id === '') errors.push(`[${i}].id: must be a non-empty string`);
    if (!FEEDBACK_SIGNALS.includes(signal as FeedbackSignal)) {
      errors.push(`[${i}].signal: must be one of ${FEEDBACK_SIGNALS.join(', ')} (got ${JSON.stringify(signal)})`);
    }
  });
  if (errors.length) throw invalid('--batch has invalid items', errors);
  return value as FeedbackItem[];
}

/** Records feedback; all items apply together or none do. */
export async function feedback(backend: EngramStore, items: FeedbackItem[], ctx: OpContext): Promise<EngramDoc[]> {
  for (const item of items) {
    if (!FEEDBACK_SIGNALS.includes(item.signal)) {
      throw invalid(`signal must be one of ${FEEDBACK_SIGNALS.join(', ')} (got "${item.signal}")`);
    }
  }
  return backend.write(async (tx) => {
    const touched = new Map<string, EngramDoc>();
    const given: Record<string, FeedbackSignal[]> = {};
    for (const { id, signal } of items) {
      (given[id] ??= []).push(signal);
      const engram = touched.get(id) ?? (await tx.get(id));
      if (!engram) throw notFound(`no engram ${id}`);
      const signals = { positive: 0, negative: 0, neutral: 0, ...engram.feedback_signals };
      signals[signal] += 1;
      engram.feedback_signals = signals;
      const activation = engram.activation ?? { retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: '' };
      const delta = signal === 'positive' ? STEP : signal === 'negative' ? -STEP : 0;
      engram.activation = {
        ...activation,
        retrieval_strength: round(clamp(activation.retrieval_strength + delta), 3),
        last_accessed: ctx.now().toISOString(),
      };
      touched.set(id, engram);
    }
    const at = ctx.now().toISOString();
    // Confirmed useful together: co-access links, which recall spreads activation along.
    linkCoAccessed(
      [...touched.values()].filter((e) => given[e.id]!.includes('positive')),
      at,
    );
    for (const engram of touched.values()) {
      const mine = given[engram.id]!;
      await tx.put(engram, {
        action: 'feedback',
        at,
        session: ctx.sessionId ?? undefined,
        details: { signal: mine[mine.length - 1], ...(mine.length > 1 ? { signals: mine } : {}) },
      });
    }
    return [...touched.values()];
  });
}

const clamp = (x: number): number => Math.min(1, Math.max(0, x));
