import { useEffect } from 'react';

/** Search as you type, debounced: `settle` runs once typing pauses for `ms`. */
export function useSearchDebounce(query: string, activeQuery: string, ms: number, settle: (query: string) => void): void {
  useEffect(() => {
    if (query === activeQuery) return;
    const timer = setTimeout(() => settle(query), ms);
    return () => clearTimeout(timer);
  }, [query, activeQuery, ms]);
}
