import { useEffect } from 'react';
import type { BrowseData } from './data.js';
import type { BrowseEvent } from './event-reducer.js';
import { errorText, type TensionList } from './state.js';

/** Loads the tensions port, then its records, once the view has been opened. */
export function useTensionList(data: BrowseData | null, list: TensionList, dispatch: (e: BrowseEvent) => void): void {
  useEffect(() => {
    if (!data || !list.started) return;
    let alive = true;
    (async () => {
      const port = await data.tensions();
      if (!alive) return;
      dispatch({ type: 'tensionsPort', port });
      if (!port.available) return;
      const { tensions: rows, warnings } = await port.port.list({ all: list.all });
      if (alive) dispatch({ type: 'tensionRows', rows, warnings });
    })().catch((err) => alive && dispatch({ type: 'tensionsFailed', error: errorText(err) }));
    return () => {
      alive = false;
    };
  }, [data, list.started, list.all, list.tick]);
}
