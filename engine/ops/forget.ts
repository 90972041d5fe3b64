import type { EngramStore, SearchIndex } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import { looksLikeId } from '../model/ids.js';
import { notFound, SvcError } from '../errors.js';
import type { OpContext } from './context.js';

export type ForgetResult =
  | { action: 'retired'; engram: EngramDoc }
  | { action: 'already_retired'; engram: EngramDoc }
  | { action: 'ambiguous'; matches: EngramDoc[] };

export interface ForgetInput {
  target: string;
  /** Treat the target as text to search even when it looks like an id. */
  search?: boolean;
  reason?: string;
}

/**
 * Retires an engram (soft delete; the file and its history stay). An id is retired
 * directly; other text must match exactly one live engram on every word, else the
 * matches are returned for the caller to choose.
 */
export async function forget(backend: EngramStore & SearchIndex, input: ForgetInput, ctx: OpContext): Promise<ForgetResult> {
  let id = input.target.trim();
  if (input.search || !looksLikeId(id)) {
    const hits = await backend.searchText(id, 20, 'all');
    if (hits.length === 0) throw new SvcError('not_found', `no engram matches "${id}"`);
    if (hits.length > 1) return { action: 'ambiguous', matches: hits.map((h) => h.engram) };
    id = hits[0]!.engram.id;
  }
  return backend.write(async (tx) => {
    const engram = await tx.get(id);
    if (!engram) throw notFound(`no engram ${id}`);
    if (engram.status === 'retired') return { action: 'already_retired', engram };
    engram.status = 'retired';
    engram.reference_count = 0;
    engram.retirement = { at: ctx.now().toISOString(), ...(input.reason ? { reason: input.reason } : {}) };
    await tx.put(engram, {
      action: 'retired',
      at: ctx.now().toISOString(),
      session: ctx.sessionId ?? undefined,
      ...(input.reason ? { details: { reason: input.reason } } : {}),
    });
    return { action: 'retired', engram };
  });
}
