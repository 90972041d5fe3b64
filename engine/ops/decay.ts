import type { EngramStore } from '../backend.js';
import { decayedRetrieval, DORMANT_BELOW } from '../model/activation.js';
import type { OpContext } from './context.js';

export interface DecayReport {
  processed: number;
  decayed: number;
  skipped: number;
  transitions: Array<{ id: string; from: 'active'; to: 'dormant'; retrieval_strength: number }>;
}

/**
 * Applies ACT-R power-law decay to every local engram: retrieval strength falls with the
 * days since last use (or since the previous decay, so running it twice does not decay
 * twice), and an active engram whose strength drops below 0.2 turns dormant. Pinned and
 * retired engrams, those used in the last day, and the `contextScope` (the project being
 * worked on) are skipped.
 */
export async function batchDecay(backend: EngramStore, opts: { contextScope?: string }, ctx: OpContext): Promise<DecayReport> {
  const now = ctx.now();
  const report: DecayReport = { processed: 0, decayed: 0, skipped: 0, transitions: [] };
  const all = await backend.list({ includeRetired: true });
  await backend.write(async (tx) => {
    for (const e of all) {
      report.processed += 1;
      if (e.status === 'retired' || e.pinned || (opts.contextScope !== undefined && e.scope === opts.contextScope)) {
        report.skipped += 1;
        continue;
      }
      const current = await tx.get(e.id);
      if (!current) continue;
      const rs = current.activation?.retrieval_strength ?? 0.7;
      const next = decayedRetrieval(current, now.getTime());
      if (next >= rs) {
        report.skipped += 1;
        continue;
      }
      current.activation = {
        retrieval_strength: next,
        storage_strength: current.activation?.storage_strength ?? 1,
        frequency: current.activation?.frequency ?? 0,
        last_accessed: current.activation?.last_accessed ?? '',
      };
      current.decayed_at = now.toISOString();
      current.consolidated = true;
      if (current.status === 'active' && next < DORMANT_BELOW) {
        current.status = 'dormant';
        report.transitions.push({ id: current.id, from: 'active', to: 'dormant', retrieval_strength: next });
      }
      report.decayed += 1;
      await tx.put(current, { action: 'decayed', at: now.toISOString(), details: { from: rs, to: next } });
    }
  });
  return report;
}
