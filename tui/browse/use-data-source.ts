import { useEffect, useRef, useState } from 'react';
import type { BrowseData } from './data.js';
import type { BrowseEvent } from './event-reducer.js';
import { errorText } from './state.js';

export interface DataSource {
  data: BrowseData | null;
  /** Why the store could not be opened. */
  error: string | null;
}

/** Opens the store once (unless it is open already), reports its warnings, closes it on unmount (quit). */
export function useDataSource(
  open: () => Promise<BrowseData>,
  opened: BrowseData | undefined,
  dispatch: (e: BrowseEvent) => void,
): DataSource {
  const [data, setData] = useState<BrowseData | null>(opened ?? null);
  const [error, setError] = useState<string | null>(null);
  const current = useRef(data);
  useEffect(() => {
    let alive = true;
    const ready = (d: BrowseData) => {
      current.current = d;
      setData(d);
      if (d.warnings.length) dispatch({ type: 'message', message: { text: d.warnings.join('; '), error: true } });
    };
    if (opened) ready(opened);
    else {
      open().then(
        (d) => (alive ? ready(d) : d.close()),
        (err) => alive && setError(errorText(err)),
      );
    }
    return () => {
      alive = false;
      current.current?.close();
    };
  }, []);
  return { data, error };
}
