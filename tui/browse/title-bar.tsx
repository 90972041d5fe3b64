import { Lines } from './frame.js';
import type { View } from './state.js';
import { titleLine } from './title-line.js';

export function TitleBar({ view, counts, width }: { view: View; counts: Record<string, number> | null; width: number }) {
  return <Lines lines={[titleLine(view, counts, width)]} width={width} />;
}
