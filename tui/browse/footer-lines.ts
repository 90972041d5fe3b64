import { fitHelp, type FrameLine } from './frame-lines.js';
import { HELP_LINE, HELP_TAIL, type KeyHelp } from './keymap.js';
import type { BrowseState, Message } from './state.js';

/** What the screen above the footer contributes: its info line (the selection) and its keys. */
export interface ScreenFooter {
  info: Message | null;
  help: KeyHelp[];
  /** The `?` screen: its help line ends with q only. */
  keyScreen?: boolean;
}

type Asking = Pick<BrowseState, 'confirm' | 'choose' | 'message'>;

/** The info line: a question, else the last message, else what is selected. */
export function infoLine({ confirm, choose, message }: Asking, screen: ScreenFooter): FrameLine {
  if (confirm) return { text: `${confirm.prompt} [y/n]`, style: 'prompt' };
  if (choose) return { text: `Winner? ${choose.engrams.map((id, i) => `${i + 1}=${id}`).join('  ')}`, style: 'prompt' };
  if (message) return { text: message.text, style: message.error ? 'error' : 'bold' };
  if (screen.info) return { text: screen.info.text, style: screen.info.error ? 'error' : 'dim' };
  return { text: '' };
}

/** The keys on the help line, as many as fit the width. */
export function helpItems({ confirm, choose }: Asking, screen: ScreenFooter, width: number): KeyHelp[] {
  const items = confirm ? HELP_LINE.confirm : choose ? HELP_LINE.choose : screen.help;
  const tail = confirm || choose ? [] : screen.keyScreen ? HELP_TAIL.filter((k) => k.keys === 'q') : HELP_TAIL;
  return fitHelp(items, tail, width);
}
