import type { BrowseData } from './data.js';
import type { Action } from './state.js';
import type { TensionsState } from './tensions.js';

/** Runs an action on the store; resolves to the line that tells the user what happened. */
export function runAction(data: BrowseData, tensions: TensionsState | null, action: Action): Promise<string> {
  switch (action.kind) {
    case 'forget':
      return data.forget(action.id);
    case 'pin':
      return data.pin(action.id, action.pinned);
    case 'promote':
      return data.promote(action.id);
    case 'feedback':
      return data.feedback(action.id, action.signal);
    case 'resolve':
      if (!tensions?.available) return Promise.reject(new Error('tensions are unavailable'));
      return tensions.port.resolve(action.tension, action.winner);
    case 'resolveConflict':
      return data.resolveConflict(action.id, action.keep);
  }
}
