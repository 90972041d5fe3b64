import { helpItems, infoLine, type ScreenFooter } from './footer-lines.js';
import { HelpLine, Lines } from './frame.js';
import type { BrowseState } from './state.js';

/** The info line, then the help line. */
export function Footer({
  state,
  screen,
  width,
}: {
  state: Pick<BrowseState, 'confirm' | 'choose' | 'message'>;
  screen: ScreenFooter;
  width: number;
}) {
  return (
    <>
      <Lines lines={[infoLine(state, screen)]} width={width} />
      <HelpLine items={helpItems(state, screen, width)} />
    </>
  );
}
