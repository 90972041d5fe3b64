import { useEffect, useRef } from 'react';
import type { BrowseData } from './data.js';
import type { BrowseEvent } from './event-reducer.js';
import { errorText, pageKey, type EngramList } from './state.js';
import { useSearchDebounce } from './use-search-debounce.js';

/**
 * Reads the page of engrams the list asks for (filters, search, limit), then the counts for
 * the title bar: the rows come first. A page read before the UI started is not read again.
 */
export function useEngramList(
  data: BrowseData | null,
  list: EngramList,
  dispatch: (e: BrowseEvent) => void,
  debounceMs: number,
  preloaded: boolean,
): void {
  const seq = useRef(0);
  const skipFirst = useRef(preloaded);
  useEffect(() => {
    if (!data) return;
    const n = ++seq.current;
    const counts = () =>
      data.counts().then(
        (c) => dispatch({ type: 'counts', counts: c }),
        () => undefined,
      );
    if (skipFirst.current) {
      skipFirst.current = false;
      void counts();
      return;
    }
    const pageFor = pageKey(list.filters, list.activeQuery);
    data
      .page(list.filters, list.activeQuery, list.limit)
      .then(
        (page) => n === seq.current && dispatch({ type: 'engramPage', page, pageFor }),
        (err) => n === seq.current && dispatch({ type: 'engramPageFailed', error: errorText(err) }),
      )
      .then(counts);
  }, [data, list.filters, list.activeQuery, list.limit, list.tick]);
  useSearchDebounce(list.query, list.activeQuery, debounceMs, (query) => dispatch({ type: 'searchSettled', view: 'engrams', query }));
}
