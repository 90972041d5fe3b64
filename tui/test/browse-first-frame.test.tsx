import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { render } from 'ink-testing-library';
import { App } from '../browse/app.js';
import { DEFAULT_FILTERS, LocalBrowseData, type BrowseData } from '../browse/data.js';
import { firstFrame, type Opened } from '../browse/first-frame.js';
import { FIRST_PAGE } from '../browse/state.js';
import { terminalSafe as stripAnsi } from '../../engine/text.js';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { systemContext } from '../../engine/ops/context.js';

// The first screen is painted as plain text before Ink loads; the App then starts from the
// same state. Its first frame must be that screen, line for line, or the hand-over shows.

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function openedStore(): Promise<Opened & { pages: () => number }> {
  const root = join(mkdtempSync(join(tmpdir(), 'svc-browse-first-')), 'store');
  const store = await LocalStore.open(root);
  try {
    for (let i = 0; i < 30; i++)
      await learn(store, { statement: `Rule ${i}: keep the build green, wide 数据 text`, domain: 'ci' }, systemContext);
  } finally {
    store.close();
  }
  const local = await LocalBrowseData.open(root);
  let pages = 0;
  const data: BrowseData = Object.assign(Object.create(local) as BrowseData, {
    page: (...args: Parameters<BrowseData['page']>) => {
      pages++;
      return local.page(...args);
    },
  });
  const opened = { data, firstPage: await local.page(DEFAULT_FILTERS, '', FIRST_PAGE), counts: await local.counts() };
  return { ...opened, pages: () => pages };
}

/** A frame's lines as seen: no styles, no trailing spaces. */
const seen = (frame: string) =>
  stripAnsi(frame)
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => l.trimEnd());

describe('the first screen before Ink', () => {
  for (const [columns, rows] of [
    [80, 24],
    [100, 30],
    [40, 12],
  ] as const) {
    it(`is the App's first frame at ${columns}×${rows}, and the App does not read the page again`, async () => {
      const opened = await openedStore();
      const plain = firstFrame(opened, columns, rows);
      expect(plain.split('\n')).toHaveLength(rows); // rows - 1 lines, each ending in a newline
      const r = render(<App open={async () => opened.data} opened={opened} columns={columns} rows={rows} />);
      cleanups.push(() => {
        r.unmount();
        r.cleanup();
      });
      expect(seen(r.frames[0]!)).toEqual(seen(plain));
      if (columns >= 80) expect(seen(plain)[0]).toMatch(/30 live · 30 total/);
      expect(seen(plain).join('\n')).toMatch(/^1\/30  ENG-/m);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(opened.pages()).toBe(0);
    });
  }
});
