import type { EngramStore } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import { conflict, notFound } from '../errors.js';
import type { OpContext } from './context.js';

/** Candidate to active, with activation reset so the engram is injected again. */
export async function promote(backend: EngramStore, id: string, ctx: OpContext): Promise<EngramDoc> {
  return backend.write(async (tx) => {
    const engram = await tx.get(id);
    if (!engram) throw notFound(`no engram ${id}`);
    if (engram.status === 'retired') throw conflict(`${id} is retired; retired engrams cannot be promoted`);
    if (engram.status !== 'candidate') throw conflict(`${id} is ${engram.status}, not a candidate`);
    engram.status = 'active';
    engram.activation = {
      retrieval_strength: 1,
      storage_strength: 1,
      frequency: 0,
      last_accessed: ctx.now().toISOString(),
    };
    await tx.put(engram, { action: 'promoted', at: ctx.now().toISOString(), session: ctx.sessionId ?? undefined });
    return engram;
  });
}
