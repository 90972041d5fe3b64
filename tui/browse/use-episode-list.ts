import { useEffect, useRef } from 'react';
import type { BrowseData } from './data.js';
import type { BrowseEvent } from './event-reducer.js';
import { errorText, type EpisodeList } from './state.js';
import { useSearchDebounce } from './use-search-debounce.js';

/** Reads the episode timeline (newest first, searchable) once the view has been opened. */
export function useEpisodeList(data: BrowseData | null, list: EpisodeList, dispatch: (e: BrowseEvent) => void, debounceMs: number): void {
  const seq = useRef(0);
  useEffect(() => {
    if (!data || !list.started) return;
    const n = ++seq.current;
    const pageFor = list.activeQuery;
    data.episodes(pageFor, list.limit).then(
      (page) => n === seq.current && dispatch({ type: 'episodePage', page, pageFor }),
      (err) => n === seq.current && dispatch({ type: 'episodePageFailed', error: errorText(err) }),
    );
  }, [data, list.started, list.activeQuery, list.limit, list.tick]);
  useSearchDebounce(list.query, list.activeQuery, debounceMs, (query) => dispatch({ type: 'searchSettled', view: 'episodes', query }));
}
