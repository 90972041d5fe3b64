import type { EngramStore, RecordLog } from '../backend.js';
import type { EngramEvent } from '../model/records.js';
import { notFound } from '../errors.js';
import type { InjectResult } from './inject.js';

export type FeedbackUse = 'positive' | 'negative' | 'neutral' | null;

export interface Receipt {
  at: string;
  task: string;
  session?: string;
  engram_ids: string[];
  /** The first feedback each engram got after this injection (in the same session when there is one). */
  used: Record<string, FeedbackUse>;
}

/** An engram's change events, oldest first. */
export async function history(backend: EngramStore & RecordLog, engramId: string): Promise<EngramEvent[]> {
  const events = await backend.listEvents({ engram_id: engramId });
  if (events.length === 0 && !(await backend.get(engramId))) throw notFound(`no engram ${engramId}`);
  return events;
}

/** Notes what an injection showed, so `receipts` can tell later whether it was used. */
export async function recordInjection(
  backend: EngramStore & RecordLog,
  result: InjectResult,
  opts: { session?: string; agent?: string; at: Date },
): Promise<void> {
  const ids = Object.values(result.blocks)
    .flat()
    .map((e) => e.id);
  if (ids.length === 0) return;
  await backend.appendEvents([
    {
      at: opts.at.toISOString(),
      action: 'injected',
      engram_ids: ids,
      ...(opts.session ? { session: opts.session } : {}),
      details: { task: result.task.slice(0, 500), tokens: result.tokens, ...(opts.agent ? { agent: opts.agent } : {}) },
    },
  ]);
}

/** What was injected, when, and whether each engram was then used (feedback), newest first. */
export async function receipts(
  backend: EngramStore & RecordLog,
  filter: { session?: string; engram_id?: string; limit?: number },
): Promise<Receipt[]> {
  const injected = await backend.listEvents({
    action: 'injected',
    session: filter.session,
    engram_id: filter.engram_id,
    limit: filter.limit ?? 20,
  });
  const feedback = await backend.listEvents({ action: 'feedback', session: filter.session });
  return injected.reverse().map((inj) => {
    const used: Record<string, FeedbackUse> = {};
    for (const id of inj.engram_ids ?? []) {
      const fb = feedback.find((f) => f.engram_id === id && f.at >= inj.at && (!inj.session || !f.session || f.session === inj.session));
      used[id] = (fb?.details?.signal as FeedbackUse | undefined) ?? null;
    }
    return {
      at: inj.at,
      task: String(inj.details?.task ?? ''),
      ...(inj.session ? { session: inj.session } : {}),
      engram_ids: inj.engram_ids ?? [],
      used,
    };
  });
}
