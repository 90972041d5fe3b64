// The one line a person reads when hybrid search runs without vectors: that they are off, why
// (briefly), and how to turn them on. Recall's warning and `svc status` print it; JSON carries
// the whole reason (legs.vector_reason, search.vector.reason).

/** How vectors come on: fetch the model, or install a copy brought from another machine. */
export const TURN_VECTORS_ON = 'turn them on: svc models pull (offline: svc models import <folder>)';

/** "vectors off, BM25 only (<cause>): turn them on: ..." in at most ~190 characters. */
export function vectorsOffLine(cause?: string, max = 100): string {
  const fix = cause && switchedOff(cause) ? 'unset SVC_EMBED to turn them on' : TURN_VECTORS_ON;
  return `vectors off, BM25 only${cause ? ` (${clip(cause, max)})` : ''}: ${fix}`;
}

/** Whether the reason is the user's choice (SVC_EMBED=off), not a missing or broken model. */
export const switchedOff = (reason: string): boolean => reason.includes('SVC_EMBED=off');

/** One line of at most `max` characters, cut at a word boundary (a cut model name misleads). */
export function clip(text: string, max: number): string {
  const s = text.replace(/\s+/g, ' ').trim();
  if (s.length <= max) return s;
  const cut = s.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:(]+$/, '')}…`;
}
