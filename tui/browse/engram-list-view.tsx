import { engramListLines } from './engram-list-lines.js';
import { Lines } from './frame.js';
import type { EngramList } from './state.js';

export function EngramListView({ list, searching, width, rows }: { list: EngramList; searching: boolean; width: number; rows: number }) {
  return <Lines lines={engramListLines(list, searching, width, rows)} width={width} count={rows + 2} />;
}
