import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { render } from 'ink-testing-library';
import { App } from '../browse/app.js';
import { LocalBrowseData, type BrowseData } from '../browse/data.js';
import { engramLines } from '../browse/fields.js';
import { displayWidth, truncate, wrap } from '../browse/text.js';
import { terminalSafe as stripAnsi } from '../../engine/text.js';
import { NO_TENSIONS_MODULE } from '../browse/tensions.js';
import { dismissTension } from '../../engine/ops/tensions/tensions.js';
import { LocalTensionStore, type TensionSide } from '../../engine/store/tension-records.js';
import { LocalStore } from '../../engine/store/local-store.js';
import { CONFLICTS_DIR, conflictRecordPath, conflictRecordText, type ConflictRecord } from '../../engine/store/sync-conflicts.js';
import { addStore } from '../../engine/store/store-admin.js';
import { learn, type LearnInput } from '../../engine/ops/learn.js';
import { capture } from '../../engine/ops/episodes.js';
import { systemContext } from '../../engine/ops/context.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';

// The browser rendered by ink-testing-library in an 80×24 setting, on real temp stores seeded
// through the engine. Keys go in through stdin as a terminal would send them.

const COLS = 80;
const ROWS = 24;
const KEY = {
  up: '\u001B[A',
  down: '\u001B[B',
  pageDown: '\u001B[6~',
  enter: '\r',
  esc: '\u001B',
  backspace: '\u007F',
  tab: '\t',
  ctrlC: '\u0003',
};

const FILLERS = 40;
const LONG = `Always ${'document the rollback plan for every schema migration and keep it next to the change '.repeat(4)}end.`;
const CJK = '数据库迁移必须在周五之前完成并且需要两位工程师审核每一个变更请记住这一点以免出现生产事故';

const SEED: LearnInput[] = [
  ...Array.from({ length: FILLERS }, (_, i) => ({
    statement: `Filler note ${String(i).padStart(2, '0')} about widget assembly`,
    domain: 'misc.widgets',
    scope: 'global',
  })),
  { statement: 'Use pgbouncer to pool Postgres connections', domain: 'db.postgres', type: 'procedural', scope: 'project:svc' },
  { statement: 'Never run Postgres migrations on a Friday', domain: 'db.postgres', type: 'behavioral', scope: 'global' },
  { statement: 'Terraform state lives in a versioned S3 bucket', domain: 'infra.terraform', type: 'architectural', scope: 'global' },
  { statement: 'A tenant is one paying organization', domain: 'glossary', type: 'terminological', scope: 'user:alex' },
  { statement: LONG, domain: 'db.postgres', scope: 'global', rationale: 'an outage in March' },
  { statement: CJK, domain: 'db.postgres', scope: 'global' },
];

interface Seeded {
  root: string;
  ids: Map<string, string>;
  candidateId: string;
  richId: string;
}

async function seedStore(): Promise<Seeded> {
  const root = join(mkdtempSync(join(tmpdir(), 'svc-browse-')), 'store');
  const store = await LocalStore.open(root);
  const ids = new Map<string, string>();
  try {
    for (const input of SEED) ids.set(input.statement, (await learn(store, input, systemContext)).engram.id);
    const cand = await learn(
      store,
      { statement: 'Prefer structured logs over printf debugging', status: 'candidate', domain: 'observability' },
      systemContext,
    );
    // An engram with nested fields, and fields the schema does not know.
    const rich = await learn(
      store,
      {
        statement: 'Pin GitHub Actions to commit hashes',
        type: 'procedural',
        domain: 'ci.pipelines',
        tags: ['ci', 'security'],
        rationale: 'tags can be moved by whoever controls the action repository',
        source: 'review of PR #42',
        knowledge_anchors: [{ path: '.github/workflows/ci.yml', relevance: 'primary', snippet: 'uses: actions/checkout@abc123' }],
        dual_coding: { example: 'actions/checkout@8f4b7f8', analogy: 'a lockfile for CI' },
      },
      systemContext,
    );
    await store.write(async (tx) => {
      const doc = (await tx.get(rich.engram.id))!;
      await tx.put({ ...doc, x_review: { reviewer: 'sam', verdict: 'keep', notes: ['checked twice'] }, x_flag: true } as EngramDoc);
    });
    await capture(store, { summary: 'Migrated the billing database to Postgres 16', agent: 'claude' }, systemContext);
    await capture(store, { summary: 'Rotated the staging credentials', agent: 'cli' }, systemContext);
    return { root, ids, candidateId: cand.engram.id, richId: rich.engram.id };
  } finally {
    store.close();
  }
}

async function readEngram(root: string, id: string): Promise<EngramDoc> {
  const store = await LocalStore.open(root);
  try {
    return (await store.get(id))!;
  } finally {
    store.close();
  }
}

// ------------------------------------------------------------------ harness

type Rendered = ReturnType<typeof render>;
const mounted: Rendered[] = [];

function mount(open: () => Promise<BrowseData>): Rendered & { frame(): string } {
  const r = render(<App open={open} columns={COLS} rows={ROWS} debounceMs={15} />);
  mounted.push(r);
  return Object.assign(r, { frame: () => stripAnsi(r.lastFrame() ?? '') });
}

/** Every frame ever written fits the terminal: at most 80 columns and 24 rows. */
function assertFits(r: Rendered): void {
  expect(r.frames.length).toBeGreaterThan(0);
  for (const raw of r.frames) {
    const lines = stripAnsi(raw).replace(/\n$/, '').split('\n');
    expect(lines.length, raw).toBeLessThanOrEqual(ROWS);
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(COLS);
  }
}

afterEach(() => {
  for (const r of mounted.splice(0)) {
    assertFits(r);
    r.unmount();
    r.cleanup();
  }
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(r: { frame(): string }, pred: (frame: string) => boolean, what: string, timeout = 5000): Promise<string> {
  const end = Date.now() + timeout;
  for (;;) {
    const f = r.frame();
    if (pred(f)) return f;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last frame:\n${f}`);
    await sleep(10);
  }
}

const has = (text: string) => (f: string) => f.includes(text);
/** The info line says row `n` of 48 is selected. */
const at = (n: number) => (f: string) => new RegExp(`^${n}/48 `, 'm').test(f);

/** Sends keys one by one, like typing. */
async function press(r: Rendered, ...keys: string[]): Promise<void> {
  for (const k of keys) {
    r.stdin.write(k);
    await sleep(5);
  }
}

/** The list rows of a frame (the lines between the search line and the info line). */
function listLines(frame: string): string[] {
  const lines = frame.split('\n');
  return lines.slice(3, lines.length - 2);
}

/** The id on the info line (the selected row). */
function selectedId(frame: string): string | undefined {
  const lines = frame.split('\n');
  return /((?:ENG|ABS|META)-[A-Z0-9-]+)/.exec(lines[lines.length - 2] ?? '')?.[1];
}

// ------------------------------------------------------------------ tests

let seeded: Seeded;
beforeAll(async () => {
  seeded = await seedStore();
});

const openSeeded = () => LocalBrowseData.open(seeded.root);

describe('text helpers', () => {
  it('truncates and wraps by display width, wide characters counting two', () => {
    expect(displayWidth('数据')).toBe(4);
    expect(displayWidth(truncate(CJK, 21))).toBeLessThanOrEqual(21);
    expect(truncate('abcdef', 4)).toBe('abc…');
    for (const line of wrap(LONG, 30)) expect(displayWidth(line)).toBeLessThanOrEqual(30);
    expect(wrap(LONG, 30).join(' ')).toBe(LONG);
  });
});

describe('svc browse (ink, 80×24)', () => {
  it('renders the list windowed: one screen of rows out of many, the newest first', async () => {
    const r = mount(openSeeded);
    const f = await waitFor(r, (x) => selectedId(x) !== undefined, 'the list');
    const rows = listLines(f).filter((l) => l.trim() !== '');
    // 24 rows: frame of 23 lines = title, filters, search, 18 list rows, info, help.
    expect(f.split('\n').length).toBe(ROWS - 1);
    expect(rows.length).toBe(ROWS - 1 - 5);
    expect(f).toContain('Pin GitHub Actions'); // newest live engram
    expect(f).not.toContain('Filler note 00'); // far below the window
    expect(f).toMatch(/48 engrams/);
    expect(f).toMatch(/\? keys\s+q quit/); // the help line
    // Long and wide statements are cut, never wrapped.
    expect(f).toContain('…');
    // Scrolling moves the window: row 30 comes into view, the first rows leave it.
    await press(r, ...Array<string>(30).fill('j'));
    const g = await waitFor(r, at(31), 'the 31st row selected');
    expect(g).not.toContain('Pin GitHub Actions');
    expect(listLines(g).filter((l) => l.trim() !== '').length).toBe(ROWS - 1 - 5);
  });

  it('moves the selection with arrows and j/k, and pages', async () => {
    const r = mount(openSeeded);
    const first = selectedId(await waitFor(r, (x) => selectedId(x) !== undefined, 'the list'))!;
    await press(r, 'j');
    const second = selectedId(await waitFor(r, at(2), 'row 2'))!;
    expect(second).not.toBe(first);
    await press(r, KEY.down);
    await waitFor(r, at(3), 'row 3 (down arrow)');
    await press(r, 'k');
    expect(selectedId(await waitFor(r, at(2), 'row 2 (k)'))).toBe(second);
    await press(r, KEY.up);
    expect(selectedId(await waitFor(r, at(1), 'row 1 (up arrow)'))).toBe(first);
    await press(r, KEY.pageDown);
    await waitFor(r, at(19), 'a page down');
    await press(r, 'G');
    await waitFor(r, at(48), 'the last row');
    await press(r, 'g');
    await waitFor(r, at(1), 'the first row');
  });

  it('reads the list a page at a time from a 10,000-engram store, never all rows up front', async () => {
    const TOTAL = 10_000;
    const limits: number[] = [];
    const unused = async (): Promise<never> => {
      throw new Error('not used here');
    };
    const fake: BrowseData = {
      root: '/fake/store',
      stores: ['all', 'primary'],
      warnings: [],
      counts: async () => ({ active: TOTAL }),
      page: async (_f, _text, limit) => {
        limits.push(limit);
        const n = Math.min(limit, TOTAL);
        const rows = Array.from({ length: n }, (_, i) => ({
          id: `ENG-TEST-2026-0101-${String(TOTAL - i).padStart(5, '0')}`,
          statement: `synthetic engram number ${TOTAL - i} ${'with a long tail '.repeat(5)}`,
          type: 'behavioral',
          scope: 'global',
          status: 'active',
          pinned: false,
        }));
        return { rows, complete: n < limit, total: TOTAL, limit };
      },
      facets: async () => ({ scopes: ['global'], domains: [] }),
      get: unused,
      forget: unused,
      promote: unused,
      pin: unused,
      feedback: unused,
      episodes: unused,
      tensions: unused,
      conflicts: unused,
      resolveConflict: unused,
      refresh: async () => undefined,
      close: () => undefined,
    };
    const r = mount(async () => fake);
    let f = await waitFor(r, has('10,000 engrams'), 'the first page');
    expect(limits).toEqual([100]);
    expect(listLines(f).filter((l) => l.includes('synthetic engram'))).toHaveLength(ROWS - 1 - 5);
    // Scrolling near the end of what is loaded reads a bigger page, not everything.
    await press(r, KEY.pageDown, KEY.pageDown, KEY.pageDown, KEY.pageDown);
    await waitFor(r, (x) => /^73\/10,000 /m.test(x), 'row 73');
    await waitFor(r, () => limits.includes(200), 'the second page');
    expect(Math.max(...limits)).toBeLessThan(TOTAL);
    // G asks for the rest once and lands on the last row.
    await press(r, 'G');
    f = await waitFor(r, (x) => /^10,000\/10,000 /m.test(x), 'the last row');
    expect(f).toContain('synthetic engram number 1 ');
  });

  it('handles keys that arrive together (typed while busy, or pasted) one by one', async () => {
    const r = mount(openSeeded);
    await waitFor(r, has('48 engrams'), 'the list');
    r.stdin.write('jjj');
    await waitFor(r, at(4), 'three rows down');
    r.stdin.write('/terraform\r');
    const f = await waitFor(r, (x) => /\/ terraform\s+1 found/.test(x), 'the search typed in one go, then Enter');
    expect(f).not.toContain('terraform▏'); // Enter left the search prompt
    expect(f).toContain('Terraform state lives');
  });

  it('narrows the list as you type a search, and Esc clears it', async () => {
    const r = mount(openSeeded);
    await waitFor(r, has('48 engrams'), 'the list');
    await press(r, '/');
    await waitFor(r, has('/ ▏'), 'the search prompt');
    await press(r, ...'postgres'.split(''));
    // Statement or domain (BM25 indexes both): two statements, two more in domain db.postgres.
    const f = await waitFor(r, (x) => /\/ postgres▏\s+4 found/.test(x), 'the Postgres hits');
    const rows = listLines(f).filter((l) => l.trim() !== '');
    expect(rows).toHaveLength(4);
    expect(rows.every((l) => /postgres/i.test(l))).toBe(true);
    // Narrowing further as the query grows.
    await press(r, ' ', ...'friday'.split(''));
    await waitFor(r, (x) => x.includes('/ postgres friday▏') && (listLines(x)[0] ?? '').includes('Friday'), 'Friday first');
    await press(r, KEY.backspace, KEY.backspace, KEY.backspace, KEY.backspace, KEY.backspace, KEY.backspace, KEY.backspace);
    await press(r, ...'zzzqqq'.split(''));
    await waitFor(r, has('No engram matches "postgreszzzqqq"'), 'no match');
    await press(r, KEY.esc);
    await waitFor(r, has('48 engrams'), 'the whole list again');
  });

  it('cycles filters: type, scope, domain, status; c clears them', async () => {
    const r = mount(openSeeded);
    await waitFor(r, has('48 engrams'), 'the list');
    await press(r, 't');
    await waitFor(r, has('type:behavioral'), 'type filter');
    await waitFor(
      r,
      (x) =>
        listLines(x)
          .filter((l) => l.trim())
          .every((l) => / beh /.test(l)),
      'only behavioral rows',
    );
    await press(r, 't', 't', 't');
    await waitFor(r, (x) => x.includes('type:architectural') && /\b1 engram\b/.test(x) && x.includes('Terraform state'), 'architectural');
    await press(r, 'T');
    await waitFor(r, has('type:procedural'), 'type filter backwards');
    await press(r, 'c');
    await waitFor(r, (x) => x.includes('type:all') && x.includes('48 engrams'), 'cleared');
    // Scopes are read from the store: global, project:svc, user:alex (sorted).
    await press(r, 's');
    await waitFor(r, has('scope:global'), 'scope global');
    await press(r, 's');
    await waitFor(r, (x) => x.includes('scope:project:svc') && /\b1 engram\b/.test(x) && x.includes('pgbouncer'), 'scope project:svc');
    await press(r, 'c', 'd');
    // Domains include their parents: ci, ci.pipelines, db, db.postgres, ...
    await waitFor(r, has('domain:ci'), 'domain ci');
    await press(r, 'd', 'd');
    await waitFor(r, (x) => x.includes('domain:db ') && /4 engrams/.test(x), 'domain db and its children');
    await press(r, 'c', 'a');
    await waitFor(r, (x) => x.includes('status:active') && /47 engrams/.test(x), 'status active');
    await press(r, 'a');
    await waitFor(r, (x) => x.includes('status:candidate') && /\b1 engram\b/.test(x) && x.includes('structured logs'), 'status candidate');
    await press(r, 'o');
    await waitFor(r, has('One store only: add others with svc stores add'), 'store filter');
  });

  it('spans registered stores and filters by store', async () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-browse-multi-'));
    const team = join(root, 'team');
    const primary = await LocalStore.open(join(root, 'primary'));
    try {
      await learn(primary, { statement: 'Primary store rule about linting' }, systemContext);
    } finally {
      primary.close();
    }
    await addStore(join(root, 'primary'), { path: team, scope: 'project:team', shared: true });
    const other = await LocalStore.open(team);
    try {
      await learn(other, { statement: 'Team store rule about deploys', scope: 'project:team' }, systemContext);
      await learn(other, { statement: 'Team store rule about reviews', scope: 'project:team' }, systemContext);
    } finally {
      other.close();
    }
    const r = mount(() => LocalBrowseData.open(join(root, 'primary')));
    await waitFor(r, (x) => x.includes('store:all') && /\b3 engrams\b/.test(x), 'all stores');
    await press(r, 'o');
    await waitFor(r, (x) => x.includes('store:primary') && /\b1 engram\b/.test(x) && x.includes('linting'), 'primary only');
    await press(r, 'o');
    await waitFor(r, (x) => x.includes('store:project:team') && /\b2 engrams\b/.test(x) && x.includes('deploys'), 'team store');
    await press(r, '/', ...'linting');
    await waitFor(r, (x) => x.includes('store:project:team') && !x.includes('Primary store rule'), 'search within the team store');
    assertFits(r);
  });

  it('shows every field in the detail view, nested and unknown ones too', async () => {
    const r = mount(openSeeded);
    await waitFor(r, has('Pin GitHub Actions'), 'the list');
    // The rich engram is the newest: selected first.
    await press(r, KEY.enter);
    await waitFor(r, (x) => x.includes(`Engram ${seeded.richId}`) && x.includes('statement: Pin GitHub'), 'the detail view');
    const doc = await readEngram(seeded.root, seeded.richId);
    const total = engramLines(doc as Record<string, unknown>, COLS).length;
    expect(total).toBeGreaterThan(ROWS); // it scrolls
    // Scroll through it all, collecting what was on screen.
    const seen = new Set<string>();
    for (let i = 0; i < total; i++) {
      for (const line of r.frame().split('\n')) seen.add(line.trim());
      await press(r, 'j');
    }
    await waitFor(r, has(`of ${total}`), 'the position indicator');
    for (const line of r.frame().split('\n')) seen.add(line.trim());
    const text = [...seen].join('\n');
    for (const key of Object.keys(doc)) expect(text, `field ${key}`).toMatch(new RegExp(`(^|\\n|- )${key}:`));
    for (const nested of [
      'retrieval_strength:',
      'last_accessed:',
      'learned_at:',
      'stored_at:',
      'path: .github/workflows/ci.yml',
      'analogy: a lockfile for CI',
      'reviewer: sam',
      'notes: checked twice',
    ]) {
      expect(text).toContain(nested);
    }
    expect(text).toContain('fields not in the engram schema');
    expect(text).toContain('tags: ci, security');
    await press(r, KEY.esc);
    await waitFor(r, has('48 engrams'), 'back to the list');
  });

  it('forget asks for confirmation: n cancels, y retires the engram in the store', async () => {
    const seeded = await seedStore(); // this test changes the store
    const r = mount(() => LocalBrowseData.open(seeded.root));
    await waitFor(r, has('48 engrams'), 'the list');
    await press(r, '/', ...'terraform'.split(''), KEY.enter);
    await waitFor(r, (x) => /1 found/.test(x) && x.includes('Terraform'), 'the terraform engram');
    const id = seeded.ids.get('Terraform state lives in a versioned S3 bucket')!;
    await press(r, 'x');
    await waitFor(r, has(`Forget ${id}?`), 'the confirmation');
    await press(r, 'n');
    await waitFor(r, has('Cancelled'), 'cancelled');
    expect((await readEngram(seeded.root, id)).status).toBe('active');
    await press(r, 'x');
    await waitFor(r, has(`Forget ${id}?`), 'the confirmation again');
    await press(r, 'y');
    await waitFor(r, has(`Retired ${id}`), 'retired');
    expect((await readEngram(seeded.root, id)).status).toBe('retired');
    // A retired engram leaves the live list and the search.
    await waitFor(r, has('No engram matches "terraform"'), 'gone from the search');
  });

  it('promote, pin and feedback act on the selected engram', async () => {
    const seeded = await seedStore(); // this test changes the store
    const r = mount(() => LocalBrowseData.open(seeded.root));
    await waitFor(r, has('48 engrams'), 'the list');
    // The candidate: filter by status.
    await press(r, 'a', 'a');
    await waitFor(r, (x) => x.includes('status:candidate') && /\b1 engram\b/.test(x) && x.includes('structured logs'), 'the candidate');
    await press(r, 'P');
    await waitFor(r, has(`Promoted ${seeded.candidateId}`), 'promoted');
    expect((await readEngram(seeded.root, seeded.candidateId)).status).toBe('active');
    await waitFor(r, has('No engrams'), 'no candidates left');
    await press(r, 'c');
    await waitFor(r, (x) => x.includes('status:live') && selectedId(x) !== undefined, 'the list again');
    const id = selectedId(r.frame())!;
    await press(r, 'p');
    await waitFor(r, has(`Pinned ${id}`), 'pinned');
    expect((await readEngram(seeded.root, id)).pinned).toBe(true);
    await waitFor(r, (x) => /^› \*/.test(x.split('\n')[3]!), 'the pin mark on the row');
    await press(r, '+');
    await waitFor(r, has(`Positive feedback on ${id}`), 'positive feedback');
    await press(r, '-');
    await waitFor(r, has(`Negative feedback on ${id}`), 'negative feedback');
    const doc = await readEngram(seeded.root, id);
    expect(doc.feedback_signals).toMatchObject({ positive: 1, negative: 1 });
    // In the detail view too: unpin.
    await press(r, KEY.enter);
    await waitFor(r, has(`Engram ${id}`), 'detail');
    await press(r, 'G'); // pinned is near the end
    await waitFor(r, has('pinned: true'), 'pinned field');
    await press(r, 'p');
    await waitFor(r, has(`Unpinned ${id}`), 'unpinned');
    await waitFor(r, has('pinned: false'), 'detail reloaded');
    expect((await readEngram(seeded.root, id)).pinned).toBe(false);
    // Promoting an active engram is refused with the engine's reason.
    await press(r, 'P');
    await waitFor(r, has('not a candidate'), 'promote refused');
  });

  it('shows the episodes timeline, searchable, with details', async () => {
    const r = mount(openSeeded);
    await waitFor(r, has('48 engrams'), 'the list');
    await press(r, '2');
    let f = await waitFor(r, has('Rotated the staging credentials'), 'episodes');
    expect(f).toContain('[2 Episodes]');
    expect(f).toContain('Migrated the billing database');
    // Newest first.
    expect(f.indexOf('Rotated')).toBeLessThan(f.indexOf('Migrated'));
    await press(r, '/', ...'billing'.split(''));
    f = await waitFor(r, (x) => x.includes('/ billing▏') && x.includes('1 found'), 'episode search');
    expect(f).not.toContain('Rotated the staging');
    await press(r, KEY.enter, KEY.enter);
    f = await waitFor(r, has('Episode EP-'), 'episode detail');
    expect(f).toContain('agent: claude');
    expect(f).toContain('summary: Migrated the billing database to Postgres 16');
    await press(r, KEY.esc, KEY.tab);
    await waitFor(r, has('[3 Tensions]'), 'tab to tensions');
    await press(r, KEY.tab);
    await waitFor(r, (x) => x.includes('[4 Conflicts]') && x.includes('No sync conflicts'), 'tab to sync conflicts');
    await press(r, KEY.tab);
    await waitFor(r, has('[1 Engrams]'), 'tab back to engrams');
  });

  it('tensions view lists the records of engine/ops/tensions and resolves one with a chosen winner after y', async () => {
    const seeded = await seedStore(); // this test changes the store
    const a = seeded.ids.get('Never run Postgres migrations on a Friday')!;
    const b = seeded.ids.get('Use pgbouncer to pool Postgres connections')!;
    const c = seeded.ids.get('Terraform state lives in a versioned S3 bucket')!;
    // Two records written by the engine's tension store, as a scan would.
    const store = await LocalStore.open(seeded.root);
    const tensions = new LocalTensionStore(store, seeded.root);
    const side = async (id: string) => {
      const e = (await store.get(id))!;
      return { id, statement: e.statement, scope: e.scope };
    };
    const finding = async (x: string, y: string, explanation: string) => ({
      engrams: [await side(x), await side(y)] as [TensionSide, TensionSide],
      confidence: 0.82,
      judge_confidence: 0.82,
      explanation,
      overlap: 0.3,
      days_apart: 0,
      temporal_discount: false,
      model: 'test-judge',
    });
    const [t1, t2] = await tensions.write(async (tx) => [
      tx.create(await finding(a, b, 'both claim the migration window'), new Date()),
      tx.create(await finding(b, c, 'false alarm'), new Date()),
    ]);
    await dismissTension(tensions, t2!.id, systemContext);
    store.close();

    const r = mount(() => LocalBrowseData.open(seeded.root));
    await waitFor(r, (x) => selectedId(x) !== undefined, 'the list');
    await press(r, '3');
    let f = await waitFor(r, has(t1!.id), 'the open tension');
    expect(f).toContain(`${a} vs ${b}`);
    expect(f).not.toContain(t2!.id); // dismissed: not unresolved
    await press(r, 'a');
    await waitFor(r, (x) => x.includes(t2!.id) && x.includes('dismissed'), 'all records');
    await press(r, 'a');
    await waitFor(r, (x) => x.includes(t1!.id) && !x.includes(t2!.id), 'unresolved again');
    await press(r, KEY.enter);
    f = await waitFor(r, (x) => x.includes(`Tension ${t1!.id}`) && x.includes('statement: Use pgbouncer'), 'tension detail');
    expect(f).toContain('confidence: 0.82');
    expect(f).toContain('explanation: both claim the migration window');
    await press(r, 'r');
    await waitFor(r, has('Winner? 1='), 'the winner prompt');
    await press(r, KEY.esc);
    await waitFor(r, has('Cancelled'), 'cancelled');
    await press(r, 'r', '2');
    await waitFor(r, has(`Resolve: keep ${b}, retire ${a}? [y/n]`), 'the confirmation');
    await press(r, 'n');
    await waitFor(r, has('Cancelled'), 'cancelled');
    expect((await readEngram(seeded.root, a)).status).toBe('active');
    await press(r, 'r', '2', 'y');
    await waitFor(r, has(`Resolved: kept ${b}, retired ${a}`), 'resolved');
    expect((await readEngram(seeded.root, a)).status).toBe('retired');
    expect((await readEngram(seeded.root, b)).status).toBe('active');
    const check = await LocalStore.open(seeded.root);
    try {
      expect((await new LocalTensionStore(check, seeded.root).get(t1!.id))?.status).toBe('resolved');
    } finally {
      check.close();
    }
    await waitFor(r, has('No unresolved tensions'), 'back to the list: nothing left unresolved');
  });

  it('conflicts view shows both versions of a sync conflict and resolves it either way after y', async () => {
    const seeded = await seedStore(); // this test changes the store
    const a = seeded.ids.get('Never run Postgres migrations on a Friday')!;
    const b = seeded.ids.get('Use pgbouncer to pool Postgres connections')!;
    // Records as a sync's merge writes them (engine/store/sync-conflicts.ts): the other machine's value waits.
    const record = (id: string, field: string, kept: string, other: string, at: string): void => {
      const r: ConflictRecord = {
        kind: 'edited-on-both',
        path: `engrams/${id}.yaml`,
        engram_id: id,
        fields: [field],
        kept: { [field]: kept },
        other: { [field]: other },
        other_version: `id: ${id}\n`,
        detected_at: at,
        detected_on: 'KQ7M',
        other_commit: '0'.repeat(40),
      };
      const rel = conflictRecordPath(r);
      mkdirSync(join(seeded.root, CONFLICTS_DIR), { recursive: true });
      writeFileSync(join(seeded.root, rel), conflictRecordText(r));
    };
    record(
      a,
      'statement',
      'Never run Postgres migrations on a Friday',
      'Never run Postgres migrations on Fridays or before holidays',
      '2026-11-20T10:00:00.000Z',
    );
    record(b, 'rationale', '(none)', 'pool exhaustion during the launch', '2026-11-21T10:00:00.000Z');

    const r = mount(() => LocalBrowseData.open(seeded.root));
    await waitFor(r, (x) => selectedId(x) !== undefined, 'the list');
    await press(r, '4');
    let f = await waitFor(r, (x) => x.includes(`${a} (statement)`) && x.includes(`${b} (rationale)`), 'both conflicts');
    expect(f).toContain('Sync conflicts · 2');
    await press(r, KEY.enter);
    f = await waitFor(r, (x) => x.includes('Sync conflict') && x.includes('or before holidays'), 'the conflict detail');
    expect(f).toContain('── now (c keeps it) ──');
    expect(f).toContain('statement: Never run Postgres migrations on a Friday');
    expect(f).toContain("── the other machine's (o takes it) ──");
    await press(r, 'o');
    await waitFor(r, has("Take the other machine's version"), 'the confirmation');
    await press(r, 'n');
    await waitFor(r, has('Cancelled'), 'cancelled');
    expect((await readEngram(seeded.root, a)).statement).toBe('Never run Postgres migrations on a Friday');
    await press(r, 'o', 'y');
    await waitFor(r, has("took the other machine's version"), 'resolved with the other version');
    expect((await readEngram(seeded.root, a)).statement).toBe('Never run Postgres migrations on Fridays or before holidays');
    // Back on the list, which now holds the other record only; c keeps the current rationale.
    f = await waitFor(r, (x) => x.includes('Sync conflicts · 1') && !x.includes(`${a} (statement)`), 'one left');
    await press(r, 'c', 'y');
    await waitFor(r, has('No sync conflicts'), 'none left');
    expect((await readEngram(seeded.root, b)).rationale).toBeUndefined();
    expect(readdirSync(join(seeded.root, CONFLICTS_DIR))).toEqual([]);
  });

  it('tensions view with no records, and with a port that is unavailable', async () => {
    const r = mount(openSeeded);
    await waitFor(r, has('48 engrams'), 'the list');
    await press(r, '3');
    await waitFor(r, has('No unresolved tensions'), 'no tensions');
    await press(r, 'r');
    await waitFor(r, has('No tension selected'), 'resolve without a selection');
    const open = async (): Promise<BrowseData> => {
      const data = await LocalBrowseData.open(seeded.root);
      return Object.assign(Object.create(data) as BrowseData, {
        tensions: async () => ({ available: false as const, reason: NO_TENSIONS_MODULE }),
      });
    };
    const r2 = mount(open);
    await waitFor(r2, has('48 engrams'), 'the list');
    await press(r2, KEY.tab, KEY.tab);
    await waitFor(r2, has('Tensions unavailable: no tensions module'), 'the unavailable message');
  });

  it('q quits and closes the store; Ctrl-C quits while typing a search', async () => {
    for (const keys of [['q'], ['/', 'a', 'q', KEY.ctrlC]]) {
      let closed = false;
      const open = async (): Promise<BrowseData> => {
        const data = await LocalBrowseData.open(seeded.root);
        return Object.assign(Object.create(data) as BrowseData, {
          close: () => {
            closed = true;
            data.close();
          },
        });
      };
      const r = mount(open);
      await waitFor(r, (x) => selectedId(x) !== undefined, 'the list');
      await press(r, ...keys);
      const end = Date.now() + 3000;
      while (!closed && Date.now() < end) await sleep(10);
      expect(closed, `keys ${JSON.stringify(keys)}`).toBe(true);
    }
  });

  it('opens a 1 MB engram at once, scrolls it, and q quits while it is laid out', async () => {
    const root = join(mkdtempSync(join(tmpdir(), 'svc-browse-long-')), 'store');
    // About 1 MB: short words, and every 25th a 50-100 KB blob without spaces.
    const words: string[] = ['Start', 'of', 'the', 'long', 'engram.'];
    for (let i = 0, n = 0; n < 1_000_000; i++) {
      const word = `w${i}`.padEnd(
        i % 25 === 24 ? 50_000 + ((i * 7919) % 50_000) : 5 + ((i * 7919) % 300),
        String.fromCharCode(97 + (i % 26)),
      );
      words.push(word);
      n += word.length + 1;
    }
    const statement = [...words, 'End', 'of', 'the', 'long', 'engram.'].join(' ');
    // learn refuses statements this long; a hand-edited file or an older store still has them.
    const store = await LocalStore.open(root);
    let id: string;
    try {
      id = (await learn(store, { statement: 'Start of the long engram.', domain: 'blobs' }, systemContext)).engram.id;
      await store.write(async (tx) => tx.put({ ...(await tx.get(id))!, statement }));
    } finally {
      store.close();
    }
    let closed = false;
    const r = mount(async () => {
      const data = await LocalBrowseData.open(root);
      return Object.assign(Object.create(data) as BrowseData, {
        close: () => {
          closed = true;
          data.close();
        },
      });
    });
    await waitFor(r, (x) => selectedId(x) === id, 'the list');
    await press(r, KEY.enter);
    let f = await waitFor(r, (x) => x.includes(`Engram ${id}`) && x.includes('statement: Start of the long engram.'), 'the first lines');
    expect(f).toMatch(/lines 1-19 of [\d,]+\+?/);
    await press(r, 'j', 'j', 'j');
    await waitFor(r, has('lines 4-22 of'), 'three lines down');
    await press(r, KEY.pageDown);
    f = await waitFor(r, has('lines 23-41 of'), 'a page down');
    const body = f.split('\n').slice(2, 21);
    expect(
      body.every((l) => /^ {2}[a-z0-9]+( [a-z0-9]+)*\s*$/.test(l)),
      body.join('\n'),
    ).toBe(true); // statement text, wrapped
    // G: the end, once the whole text is laid out (the count has no + then).
    await press(r, 'G');
    f = await waitFor(r, (x) => /lines ([\d,]+)-([\d,]+) of ([\d,]+)\s/.test(x) && x.includes('recurrence_count'), 'the end', 15_000);
    const [, from, to, total] = /lines ([\d,]+)-([\d,]+) of ([\d,]+)\s/.exec(f)!.map((n) => Number(n.replace(/,/g, '')));
    expect(to).toBe(total);
    expect(to! - from! + 1).toBe(19);
    expect(total).toBeGreaterThan(12_000); // ~1 MB at 78 columns
    await press(r, 'g');
    await waitFor(r, has('statement: Start of the long engram.'), 'back to the top');
    // Open it again (its layout starts over) and quit at once: q does not wait for the layout.
    await press(r, KEY.esc, KEY.enter, 'G', 'q');
    const end = Date.now() + 3000;
    while (!closed && Date.now() < end) await sleep(10);
    expect(closed).toBe(true);
  });

  it('reports a store that cannot be opened, and still quits', async () => {
    const r = mount(async () => {
      throw new Error('cannot open the store at /nowhere: permission denied');
    });
    await waitFor(r, has('Cannot open the store: cannot open the store at /nowhere'), 'the error');
  });
});
