import type { EngramStore } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import { conflict, notFound } from '../errors.js';
import { systemContext, type OpContext } from './context.js';

/**
 * Pins (always a candidate for injection, no relevance gate) or unpins an engram of this
 * store. Pinning a dormant engram wakes it: the user asked for it to be loaded.
 */
export async function pin(backend: EngramStore, id: string, pinned: boolean, ctx: OpContext = systemContext): Promise<EngramDoc> {
  return backend.write(async (tx) => {
    const engram = await tx.get(id);
    if (!engram) throw notFound(`no engram ${id}`);
    if (engram.status === 'retired' && pinned) throw conflict(`${id} is retired; retired engrams cannot be pinned`);
    engram.pinned = pinned;
    if (pinned && engram.status === 'dormant') engram.status = 'active';
    await tx.put(engram, { action: pinned ? 'pinned' : 'unpinned', at: ctx.now().toISOString(), session: ctx.sessionId ?? undefined });
    return engram;
  });
}
