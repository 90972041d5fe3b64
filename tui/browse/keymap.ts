// The browser's keys, in one place: the help line and the `?` screen are built from these.

export interface KeyHelp {
  keys: string;
  label: string;
}

/** The help line of each state, most important first; it is cut to the terminal width. */
export const HELP_LINE = {
  engrams: [
    { keys: '⏎', label: 'open' },
    { keys: '/', label: 'search' },
    { keys: 'stda', label: 'filter' },
    { keys: 'x', label: 'forget' },
    { keys: 'p', label: 'pin' },
    { keys: 'P', label: 'promote' },
    { keys: '+/-', label: 'feedback' },
    { keys: 'Tab', label: 'view' },
  ],
  engramDetail: [
    { keys: '↑↓', label: 'scroll' },
    { keys: 'Esc', label: 'back' },
    { keys: 'x', label: 'forget' },
    { keys: 'p', label: 'pin' },
    { keys: 'P', label: 'promote' },
    { keys: '+/-', label: 'feedback' },
  ],
  search: [
    { keys: 'type', label: 'to search' },
    { keys: '↑↓', label: 'move' },
    { keys: '⏎', label: 'done' },
    { keys: 'Esc', label: 'clear' },
    { keys: 'Ctrl-U', label: 'erase' },
  ],
  episodes: [
    { keys: '↑↓', label: 'move' },
    { keys: '⏎', label: 'open' },
    { keys: '/', label: 'search' },
    { keys: 'R', label: 'reload' },
    { keys: 'Tab', label: 'view' },
  ],
  episodeDetail: [
    { keys: '↑↓', label: 'scroll' },
    { keys: 'Esc', label: 'back' },
  ],
  tensions: [
    { keys: '↑↓', label: 'move' },
    { keys: '⏎', label: 'open' },
    { keys: 'r', label: 'resolve' },
    { keys: 'a', label: 'status' },
    { keys: 'R', label: 'reload' },
    { keys: 'Tab', label: 'view' },
  ],
  tensionDetail: [
    { keys: '↑↓', label: 'scroll' },
    { keys: 'Esc', label: 'back' },
    { keys: 'r', label: 'resolve' },
  ],
  conflicts: [
    { keys: '↑↓', label: 'move' },
    { keys: '⏎', label: 'open' },
    { keys: 'c', label: 'keep current' },
    { keys: 'o', label: 'take other' },
    { keys: 'R', label: 'reload' },
    { keys: 'Tab', label: 'view' },
  ],
  conflictDetail: [
    { keys: '↑↓', label: 'scroll' },
    { keys: 'Esc', label: 'back' },
    { keys: 'c', label: 'keep current' },
    { keys: 'o', label: 'take other' },
  ],
  confirm: [
    { keys: 'y', label: 'yes' },
    { keys: 'n/Esc', label: 'no' },
  ],
  choose: [
    { keys: '1-9', label: 'winner' },
    { keys: 'Esc', label: 'cancel' },
  ],
  help: [{ keys: 'any key', label: 'back' }],
} satisfies Record<string, KeyHelp[]>;

/** Always at the end of the help line (except where noted). */
export const HELP_TAIL: KeyHelp[] = [
  { keys: '?', label: 'keys' },
  { keys: 'q', label: 'quit' },
];

/** The `?` screen. */
export const KEY_SCREEN: Array<[string, string]> = [
  ['Everywhere', ''],
  ['q, Ctrl-C', 'quit (Ctrl-C also while typing); the terminal is restored'],
  ['Tab, 1 2 3 4', 'views: engrams, episodes, tensions, sync conflicts'],
  ['↑ ↓, j k', 'move; PgUp PgDn, Ctrl-B Ctrl-F page; g G, Home End ends'],
  ['⏎, Esc', 'open the details; back'],
  ['R', 'reload from the store (catch up with other processes)'],
  ['Engrams', ''],
  ['/', 'search as you type (BM25); ⏎ keeps it, Esc clears it'],
  ['s t d a o', 'cycle scope, type, domain, status, store (S T D A back)'],
  ['c', 'clear filters and search'],
  ['x', 'forget (retire, history kept), asks y/n'],
  ['p, P', 'pin or unpin; promote a candidate to active'],
  ['+, -', 'feedback positive, negative'],
  ['row marks', '* pinned  c candidate  z dormant  x retired'],
  ['Episodes', ''],
  ['/', 'search episode summaries'],
  ['Tensions', ''],
  ['r', 'resolve: pick the winner (1-9), confirm y/n; the other retires'],
  ['a', 'unresolved only, or all records'],
  ['Conflicts', ''],
  ['c', "keep what the engram holds now, drop the other machine's version (y/n)"],
  ['o', "take the other machine's version (y/n); svc sync shares the choice"],
];
