import { engramLineSource, recordLineSource, type DetailLine } from './fields.js';
import type { ConflictView } from './conflicts.js';
import type { DetailState } from './state.js';
import { truncate } from './text.js';

// What the detail view shows, line by line: an engram, an episode, or a tension with its
// engrams as they are now. Lines are produced on demand (see LazyLines).

const EPISODE_ORDER = ['id', 'at', 'agent', 'channel', 'session', 'summary', 'engram_ids'];

export function* detailLineSource(detail: DetailState, width: number): Generator<DetailLine> {
  const { target } = detail;
  if (target.kind === 'engram') {
    if (detail.doc === undefined) return yield { text: 'Loading…', kind: 'text' };
    if (detail.doc === null) return yield { text: `${target.id} is no longer in the store.`, kind: 'text' };
    return yield* engramLineSource(detail.doc as unknown as Record<string, unknown>, width);
  }
  if (target.kind === 'episode') return yield* recordLineSource(target.episode as unknown as Record<string, unknown>, width, EPISODE_ORDER);
  if (target.kind === 'conflict') return yield* conflictLines(target.conflict, width);
  const t = target.tension;
  yield* recordLineSource(t.record, width, ['id', 'status']);
  for (const [i, id] of t.engrams.entries()) {
    yield { text: '', kind: 'text' };
    yield { text: truncate(`── ${i + 1}: ${id}, as it is now ──`, width), kind: 'heading' };
    const e = detail.engrams[id];
    if (e === undefined) yield { text: 'Loading…', kind: 'text' };
    else if (e === null) yield { text: 'not in this store', kind: 'text' };
    else {
      const shown = {
        status: e.status,
        type: e.type,
        scope: e.scope,
        statement: e.statement,
        ...(e.rationale ? { rationale: e.rationale } : {}),
      };
      yield* recordLineSource(shown, width, ['status', 'type', 'scope', 'statement', 'rationale']);
    }
  }
}

/** Where the conflict came from, then each field: now (c keeps it) against the other machine's (o takes it). */
function* conflictLines(c: ConflictView, width: number): Generator<DetailLine> {
  yield* recordLineSource(
    { id: c.id, file: c.path, ...(c.engram ? { engram: c.engram } : {}), found: `by ${c.detectedOn} at ${c.detectedAt}` },
    width,
    ['id', 'file', 'engram', 'found'],
  );
  if (c.fields.length === 0) {
    yield { text: '', kind: 'text' };
    yield { text: "The other machine's version of the whole file is kept in the record: o puts it in place.", kind: 'text' };
    return;
  }
  for (const [label, side] of [
    ['now (c keeps it)', c.current],
    ["the other machine's (o takes it)", c.other],
  ] as const) {
    yield { text: '', kind: 'text' };
    yield { text: truncate(`── ${label} ──`, width), kind: 'heading' };
    yield* recordLineSource(Object.fromEntries(c.fields.map((f) => [f, side[f]])), width, c.fields);
  }
}
