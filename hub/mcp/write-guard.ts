import type { EngramDoc } from '../../engine/model/engram-schema.js';
import { SvcError } from '../../engine/errors.js';
import type { Principal } from '../contracts.js';

// What an MCP caller may change, checked at the engram write itself (the REST routes check before
// they call the engine; the MCP tools run the engine's operations directly). The same rules: a
// viewer changes nothing; a reader's use and verdicts (feedback, activation, recurrence,
// associations) may touch any engram it can read; any other change needs write access to the
// engram's scope, before and after; pinning needs the admin role.

/** Fields a reader's use and verdicts change: allowed on any readable engram. */
const BOOKKEEPING = new Set(['activation', 'feedback_signals', 'usage', 'recurrence_count', 'associations']);

export type WriteGuard = (before: EngramDoc | null, after: EngramDoc) => void;

const refuse = (message: string) => new SvcError('invalid', message);

export function mcpWriteGuard(p: Principal): WriteGuard {
  return (before, after) => {
    if (p.role === 'viewer') throw refuse(`${p.userName} is a viewer: viewers change nothing`);
    if (before && changedFields(before, after).every((f) => BOOKKEEPING.has(f))) return;
    if (before && before.pinned !== after.pinned && p.role !== 'admin') throw refuse('pinning an engram needs the admin role');
    for (const scope of new Set([before?.scope, after.scope].filter((x): x is string => x !== undefined))) {
      if (!p.writable.includes(scope)) throw refuse(`${p.userName} may not write scope "${scope}" (writable: ${p.writable.join(', ') || 'none'})`);
    }
  };
}

function changedFields(a: EngramDoc, b: EngramDoc): string[] {
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  return [...new Set([...Object.keys(ra), ...Object.keys(rb)])].filter((k) => JSON.stringify(ra[k]) !== JSON.stringify(rb[k]));
}
