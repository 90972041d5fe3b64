import { useCallback, useRef, useState } from 'react';
import type { Key } from 'ink';
import { reduceEvent, type BrowseEvent } from './event-reducer.js';
import { reduceKey, splitInput } from './key-reducer.js';
import type { BrowseState, Effect, Layout, Step } from './state.js';

export interface BrowseStore {
  state: BrowseState;
  onKey: (input: string, key: Key) => void;
  dispatch: (event: BrowseEvent) => void;
}

/**
 * The browser's state, stepped by the reducers. Keys can arrive faster than React renders, so
 * each step starts from the newest state (held in a ref), never from a render's snapshot, and
 * no keystroke is lost. `layout` and `run` are read when a step happens.
 */
export function useBrowseState(
  initial: () => BrowseState,
  layout: { readonly current: Layout },
  run: { readonly current: (effect: Effect) => void },
): BrowseStore {
  const [state, setState] = useState(initial);
  const latest = useRef(state);
  const apply = useCallback((step: Step) => {
    latest.current = step.state;
    setState(step.state);
    for (const effect of step.effects) run.current(effect);
  }, []);
  const onKey = useCallback((input: string, key: Key) => {
    for (const [ch, k] of splitInput(input, key)) apply(reduceKey(latest.current, ch, k, layout.current));
  }, []);
  const dispatch = useCallback((event: BrowseEvent) => apply(reduceEvent(latest.current, event, layout.current)), []);
  return { state, onKey, dispatch };
}
