import { useEffect } from 'react';
import type { BrowseData } from './data.js';
import type { BrowseEvent } from './event-reducer.js';
import { errorText, type ConflictList } from './state.js';

/** Reads the sync conflict records once the view has been opened, and again after each change. */
export function useConflictList(data: BrowseData | null, list: ConflictList, dispatch: (e: BrowseEvent) => void): void {
  useEffect(() => {
    if (!data || !list.started) return;
    let alive = true;
    data.conflicts().then(
      ({ rows, problems }) => alive && dispatch({ type: 'conflictRows', rows, problems }),
      (err) => alive && dispatch({ type: 'conflictsFailed', error: errorText(err) }),
    );
    return () => {
      alive = false;
    };
  }, [data, list.started, list.tick]);
}
