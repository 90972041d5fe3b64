import { useEffect, useMemo, useState } from 'react';
import type { BrowseData } from './data.js';
import { detailLineSource } from './detail-lines.js';
import type { BrowseEvent } from './event-reducer.js';
import { LazyLines } from './lazy-lines.js';
import { errorText, type DetailState } from './state.js';

/** Milliseconds of layout per slice, between which keys are handled. */
const SLICE_MS = 8;
/** While a long text is laid out, the line count on screen is updated this often. */
const PROGRESS_MS = 250;

/**
 * The detail view's data and lines: reads the engram (or a tension's engrams), and returns
 * its lines, laid out lazily. The rest of a long text is laid out in slices in the background
 * (for the line count and for G), so a key (q) never waits for it.
 */
export function useDetail(
  data: BrowseData | null,
  detail: DetailState | null,
  width: number,
  dispatch: (e: BrowseEvent) => void,
): LazyLines | null {
  const target = detail?.target;
  const tick = detail?.tick;
  useEffect(() => {
    if (!data || target?.kind !== 'engram') return;
    let alive = true;
    data.get(target.id).then(
      (doc) => alive && dispatch({ type: 'detailDoc', id: target.id, doc }),
      (err) => alive && dispatch({ type: 'message', message: { text: errorText(err), error: true } }),
    );
    return () => {
      alive = false;
    };
  }, [data, target, tick]);
  useEffect(() => {
    if (!data || target?.kind !== 'tension') return;
    let alive = true;
    Promise.all(target.tension.engrams.map(async (id) => [id, await data.get(id)] as const)).then(
      (pairs) => alive && dispatch({ type: 'tensionEngrams', tension: target.tension.id, engrams: Object.fromEntries(pairs) }),
      () => undefined,
    );
    return () => {
      alive = false;
    };
  }, [data, target, tick]);

  const doc = detail?.doc;
  const engrams = detail?.engrams;
  const lines = useMemo(() => (detail ? new LazyLines(detailLineSource(detail, width)) : null), [target, doc, engrams, width]);
  const [, setProgress] = useState(0);
  useEffect(() => {
    if (!lines || lines.complete) return;
    let timer: NodeJS.Immediate;
    let shown = lines.count;
    let shownAt = performance.now();
    const slice = () => {
      const more = lines.layFor(SLICE_MS);
      if (lines.count !== shown && (!more || performance.now() - shownAt >= PROGRESS_MS)) {
        shown = lines.count;
        shownAt = performance.now();
        setProgress((n) => n + 1);
      }
      if (more) timer = setImmediate(slice);
    };
    timer = setImmediate(slice);
    return () => clearImmediate(timer);
  }, [lines]);
  return lines;
}
