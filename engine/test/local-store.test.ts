import { describe, it, expect, beforeEach, afterEach, vi } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { forget } from '../ops/forget.js';
import { feedback } from '../ops/feedback.js';
import { promote } from '../ops/promote.js';
import { recall } from '../ops/recall.js';
import { systemContext, type OpContext } from '../ops/context.js';
import { parseId } from '../model/ids.js';
import { contentHash } from '../model/content-hash.js';

let root: string;
let store: LocalStore;

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-store-')), 'store');
  store = await LocalStore.open(root);
});

afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

const fileOf = (id: string): string => join(root, 'engrams', `${id}.yaml`);
const readYaml = (id: string): any => parse(readFileSync(fileOf(id), 'utf8'));
const reopen = async (mode: 'fast' | 'full' = 'full'): Promise<LocalStore> => {
  store.close();
  store = await LocalStore.open(root, mode);
  return store;
};
const atDay = (iso: string): OpContext => ({ now: () => new Date(iso) });

describe('layout', () => {
  it('creates a git repository, a .gitignore that keeps the index out, config and a machine-local id prefix', () => {
    expect(existsSync(join(root, '.git', 'HEAD'))).toBe(true);
    const ignore = readFileSync(join(root, '.gitignore'), 'utf8');
    for (const entry of ['index.db', 'local.yaml', 'quarantine/', '.tmp-*']) expect(ignore).toContain(entry);
    expect(readFileSync(join(root, 'config.yaml'), 'utf8')).toMatch(/^store_version: 2/m);
    expect(store.idPrefix()).toMatch(/^[A-Z][A-Z0-9]{3}$/);
  });

  it('gives two stores different prefixes, so their ids never collide', async () => {
    const other = await LocalStore.open(join(root, '..', 'other'));
    try {
      expect(other.idPrefix()).not.toBe(store.idPrefix());
      const a = await learn(store, { statement: 'alpha' }, systemContext);
      const b = await learn(other, { statement: 'beta' }, systemContext);
      expect(a.engram.id).not.toBe(b.engram.id);
    } finally {
      other.close();
    }
  });
});

describe('ids', () => {
  it('allocates ENG-{PREFIX}-YYYY-MMDD-NNN per day, growing past 999', async () => {
    const ctx = atDay('2026-03-04T10:00:00Z');
    const first = await learn(store, { statement: 'first of the day' }, ctx);
    expect(first.engram.id).toBe(`ENG-${store.idPrefix()}-2026-0304-001`);
    const second = await learn(store, { statement: 'second of the day' }, ctx);
    expect(parseId(second.engram.id)!.seq).toBe(2);
    const next = await learn(store, { statement: 'next day' }, atDay('2026-03-05T00:00:01Z'));
    expect(next.engram.id).toBe(`ENG-${store.idPrefix()}-2026-0305-001`);
  });

  it('never reuses the id of a file that exists without its index row, nor of a quarantined file', async () => {
    const ctx = atDay('2026-05-06T10:00:00Z');
    const prefix = store.idPrefix();
    // A writer died after its YAML rename and before its index commit: the file is there, the row is not.
    writeFileSync(fileOf(`ENG-${prefix}-2026-0506-001`), 'not: [valid');
    const a = await learn(store, { statement: 'after a crash' }, ctx);
    expect(a.engram.id).toBe(`ENG-${prefix}-2026-0506-002`);
    await reopen(); // quarantines 001
    await store.rebuild();
    const b = await learn(store, { statement: 'after a rebuild' }, ctx);
    expect(b.engram.id).toBe(`ENG-${prefix}-2026-0506-003`);
  });
});

describe('dedup, recurrence and secrets', () => {
  it('a same-scope rewrite bumps reference_count and appends a source, keeping one file', async () => {
    const a = await learn(store, { statement: 'Run the linter before every commit.', scope: 'project:web' }, systemContext);
    const b = await learn(
      store,
      { statement: 'run the  linter before every commit', scope: 'project:web' },
      { ...systemContext, sessionId: 's-42' },
    );
    expect(b.action).toBe('deduplicated');
    expect(b.engram.id).toBe(a.engram.id);
    const doc = readYaml(a.engram.id);
    expect(doc.reference_count).toBe(2);
    expect(doc.sources).toHaveLength(2);
    expect(doc.sources[1]).toMatchObject({ scope: 'project:web', session_id: 's-42' });
    expect(readdirSync(join(root, 'engrams'))).toHaveLength(1);
  });

  it('the same content at another scope is a new engram and bumps recurrence_count', async () => {
    const a = await learn(store, { statement: 'Prefer small pull requests', scope: 'project:web' }, systemContext);
    const b = await learn(store, { statement: 'Prefer small pull requests', scope: 'project:api' }, systemContext);
    expect(b.action).toBe('created');
    expect(b.engram.id).not.toBe(a.engram.id);
    expect(b.recurrences).toEqual([a.engram.id]);
    expect(readYaml(a.engram.id).recurrence_count).toBe(1);
    expect(readYaml(b.engram.id).recurrence_count).toBe(1);
  });

  it('demotes secrets aimed at a shared scope to local, with a warning', async () => {
    const r = await learn(store, { statement: 'CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789', scope: 'org:acme' }, systemContext);
    expect(r.engram.scope).toBe('local');
    expect(r.engram.visibility).toBe('private');
    expect(r.warnings.join('\n')).toMatch(/GitHub token.*stored in scope "local" instead of "org:acme"/);
    const plain = await learn(store, { statement: 'Passwords must be rotated every 90 days', scope: 'org:acme' }, systemContext);
    expect(plain.engram.scope).toBe('org:acme');
    expect(plain.warnings).toEqual([]);
  });

  it('re-learning a retired statement reactivates it', async () => {
    const a = await learn(store, { statement: 'Tabs, not spaces' }, systemContext);
    await forget(store, { target: a.engram.id, reason: 'team changed its mind' }, systemContext);
    expect(readYaml(a.engram.id).retirement.reason).toBe('team changed its mind');
    const b = await learn(store, { statement: 'tabs, not spaces' }, systemContext);
    expect(b.action).toBe('reactivated');
    expect(readYaml(a.engram.id)).toMatchObject({ status: 'active', reference_count: 1 });
  });
});

describe('lifecycle', () => {
  it('recall never returns retired engrams and marks candidates', async () => {
    const a = await learn(store, { statement: 'Cache HTTP responses for five minutes' }, systemContext);
    const c = await learn(store, { statement: 'Cache database queries per request', status: 'candidate' }, systemContext);
    let r = await recall(store, 'cache');
    expect(r.hits.map((h) => h.engram.id).sort()).toEqual([a.engram.id, c.engram.id].sort());
    expect(r.hits.find((h) => h.engram.id === c.engram.id)!.candidate).toBe(true);
    await forget(store, { target: a.engram.id }, systemContext);
    r = await recall(store, 'cache');
    expect(r.hits.map((h) => h.engram.id)).toEqual([c.engram.id]);
  });

  it('promote moves a candidate to active with fresh activation; retired cannot be promoted', async () => {
    const c = await learn(store, { statement: 'Name branches after tickets', status: 'candidate' }, systemContext);
    const p = await promote(store, c.engram.id, systemContext);
    expect(p.status).toBe('active');
    expect(p.activation).toMatchObject({ retrieval_strength: 1, frequency: 0 });
    await expect(promote(store, c.engram.id, systemContext)).rejects.toThrow(/is active, not a candidate/);
    await forget(store, { target: c.engram.id }, systemContext);
    await expect(promote(store, c.engram.id, systemContext)).rejects.toThrow(/retired engrams cannot be promoted/);
  });

  it('a feedback batch with an unknown id writes nothing', async () => {
    const a = await learn(store, { statement: 'Document every public function' }, systemContext);
    const before = readFileSync(fileOf(a.engram.id), 'utf8');
    await expect(
      feedback(
        store,
        [
          { id: a.engram.id, signal: 'positive' },
          { id: 'ENG-NOPE-2026-0101-001', signal: 'negative' },
        ],
        systemContext,
      ),
    ).rejects.toThrow(/no engram ENG-NOPE/);
    expect(readFileSync(fileOf(a.engram.id), 'utf8')).toBe(before);
    await feedback(store, [{ id: a.engram.id, signal: 'positive' }], systemContext);
    expect(readYaml(a.engram.id).activation.retrieval_strength).toBeCloseTo(0.8);
  });
});

describe('the YAML is the source of truth', () => {
  it('unknown top-level properties survive an update', async () => {
    const a = await learn(store, { statement: 'Keep functions short' }, systemContext);
    const doc = readYaml(a.engram.id);
    doc.x_team_note = { owner: 'ana', refs: [1, 2, { deep: true }] };
    doc.zz_flag = 'kept';
    writeFileSync(fileOf(a.engram.id), stringify(doc));
    await reopen();
    await learn(store, { statement: 'keep functions short.' }, systemContext); // dedup rewrites the file
    const after = readYaml(a.engram.id);
    expect(after.reference_count).toBe(2);
    expect(after.x_team_note).toEqual({ owner: 'ana', refs: [1, 2, { deep: true }] });
    expect(after.zz_flag).toBe('kept');
    expect((await store.get(a.engram.id))!.x_team_note).toEqual(after.x_team_note);
  });

  it('reconciles hand edits in place, new files and deleted files on open', async () => {
    const a = await learn(store, { statement: 'Use UTC in logs' }, systemContext);
    const b = await learn(store, { statement: 'Use ISO dates in filenames' }, systemContext);
    // In-place edit (same inode, as editors that do not rename do).
    const doc = readYaml(a.engram.id);
    doc.statement = 'Use UTC timestamps in every log line';
    writeFileSync(fileOf(a.engram.id), stringify(doc));
    unlinkSync(fileOf(b.engram.id));
    const pulled = { ...doc, id: 'ENG-2026-0101-001', statement: 'Pulled from a teammate: squash merges only' };
    writeFileSync(fileOf('ENG-2026-0101-001'), stringify(pulled));
    await reopen('full');
    expect((await recall(store, 'timestamps')).hits.map((h) => h.engram.id)).toEqual([a.engram.id]);
    expect(await store.get(b.engram.id)).toBeNull();
    expect((await recall(store, 'squash')).hits.map((h) => h.engram.id)).toEqual(['ENG-2026-0101-001']);
  });

  it("looks a changed file up, and reads a scan slice's file stamps, from one index, which an index made before it gains on open", async () => {
    await learn(store, { statement: 'Seed engram' }, systemContext);
    store.close();
    const { default: Database } = await import('better-sqlite3');
    const raw = new Database(join(root, 'index.db'));
    // As an index of the version before it: file names alone.
    raw.exec('DROP INDEX engrams_file_stamp; CREATE INDEX engrams_file ON engrams (file)');
    raw.close();
    await reopen('fast');
    store.close();
    const check = new Database(join(root, 'index.db'), { readonly: true });
    const plan = (sql: string, ...args: unknown[]) =>
      (check.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((p) => p.detail).join(' ');
    // Without it, reconciling n changed files (a pull, a clone) read the whole table n times, and
    // every hot path's slice read a thousand of the table's rows.
    expect(plan('SELECT mtime, size FROM engrams WHERE file = ?', 'x.yaml')).toMatch(/USING COVERING INDEX engrams_file_stamp/);
    expect(plan('SELECT id, file, mtime, size FROM engrams WHERE file > ? ORDER BY file LIMIT ?', '', 1000)).toMatch(
      /USING COVERING INDEX engrams_file_stamp/,
    );
    const narrow = check.prepare("SELECT name FROM sqlite_master WHERE name = 'engrams_file'").get();
    check.close();
    expect(narrow).toBeUndefined();
    await reopen();
  });

  it('the fast path notices files added or removed behind its back', async () => {
    await learn(store, { statement: 'Seed engram' }, systemContext);
    const added = {
      id: 'ENG-2026-0202-001',
      version: 2,
      status: 'active',
      type: 'behavioral',
      scope: 'global',
      statement: 'Vendored dependencies are forbidden',
    };
    writeFileSync(fileOf(added.id), stringify(added));
    await reopen('fast');
    expect((await recall(store, 'vendored')).hits).toHaveLength(1);
  });

  it("a long-lived process's catch-up and its writes take turns: neither starts a transaction inside the other's", async () => {
    // A server's request refreshes the index (a catch-up) while another request's write awaits
    // with the index's transaction open, and the other way round; both touch one connection.
    await learn(store, { statement: 'Seed engram' }, systemContext);
    const behindItsBack = (n: number): void =>
      writeFileSync(
        fileOf(`ENG-2026-0202-00${n}`),
        stringify({
          id: `ENG-2026-0202-00${n}`,
          version: 2,
          status: 'active',
          type: 'behavioral',
          scope: 'global',
          statement: `Written elsewhere ${n}`,
        }),
      );
    behindItsBack(1);
    let release!: () => void;
    const writing = store.write(async () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((r) => setTimeout(r, 20)); // the write holds the transaction and waits
    await store.refresh();
    release();
    await writing;

    behindItsBack(2);
    // The catch-up reads the new file with its transaction open; the write is asked for meanwhile.
    await Promise.all([store.refresh(), store.write(async () => undefined)]);
    await learn(store, { statement: 'Written after both' }, systemContext);
    expect((await recall(store, 'elsewhere')).hits).toHaveLength(2);
    expect((await recall(store, 'after both')).hits).toHaveLength(1);
  });

  /**
   * 2,500 engram files, one edited in place near the end of the file order (the folder's mtime
   * does not move); `step` makes each slice due, opens the store on the fast path and returns
   * the cursor it left.
   */
  const sliceFixture = async () => {
    const ids = Array.from({ length: 2_500 }, (_, i) => `ENG-2026-0303-${String(i + 1).padStart(4, '0')}`);
    const docOf = (id: string, statement: string) => ({
      id,
      version: 2,
      status: 'active',
      type: 'behavioral',
      scope: 'global',
      statement,
      content_hash: contentHash(statement),
    });
    for (const id of ids) writeFileSync(fileOf(id), stringify(docOf(id, `Rule number ${id.slice(-4)} of the slices`)));
    await reopen('full');
    const last = ids.at(-1)!;
    writeFileSync(fileOf(last), stringify(docOf(last, 'Rotate the signing keys every quarter')));
    const { default: Database } = await import('better-sqlite3');
    const meta = (key: string, value?: string): string | undefined => {
      store.close();
      const raw = new Database(join(root, 'index.db'));
      try {
        if (value !== undefined) raw.prepare('UPDATE meta SET value = ? WHERE key = ?').run(value, key);
        return (raw.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
      } finally {
        raw.close();
      }
    };
    const found = async () => (await recall(store, 'rotate signing keys')).hits.length;
    const step = async (): Promise<string> => {
      meta('scan_slice_at', '0'); // as if the interval had passed
      await reopen('fast');
      const cursor = meta('scan_cursor')!;
      await reopen('fast');
      return cursor;
    };
    /** `count` slices with process.hrtime reading `clock`; the edit stays unseen through the first `unseen`. Returns the cursors. */
    const sweep = async (count: number, clock: () => bigint, unseen: number): Promise<string[]> => {
      const spy = vi.spyOn(process.hrtime, 'bigint').mockImplementation(clock);
      const seen: string[] = [];
      try {
        for (let i = 0; i < count; i++) {
          seen.push(await step());
          if (i < unseen) expect(await found()).toBe(0);
        }
      } finally {
        spy.mockRestore();
      }
      return seen;
    };
    return { ids, found, sweep };
  };

  it('the fast path finds an edit in place a slice of files at a time, without stating the whole folder', async () => {
    const { ids, found, sweep } = await sliceFixture();
    // Within the interval a hot open stats nothing.
    await reopen('fast');
    expect(await found()).toBe(0);
    // A clock that stands still: no slice runs out of time.
    const seen = await sweep(3, () => 1_000_000n, 2);
    expect(seen).toEqual([`${ids[999]}.yaml`, `${ids[1999]}.yaml`, '']); // 1,000 files a slice, then back to the start
    expect(await found()).toBe(1);
  });

  it('a slice that runs out of time stops after its first hundred files, and the next goes on from there', async () => {
    const { ids, found, sweep } = await sliceFixture();
    // A clock that moves ten milliseconds each time it is read: a slice's time is over at once.
    let now = 0n;
    const seen = await sweep(26, () => (now += 10_000_000n), 24);
    // 100 files a slice: the edited file, the 2,500th, is stated by the 25th; the 26th wraps around.
    expect(seen).toEqual([...Array.from({ length: 25 }, (_, i) => `${ids[i * 100 + 99]}.yaml`), '']);
    expect(await found()).toBe(1);
  });

  it('quarantines a file cut short that still parses, instead of reading it as whole and rewriting it', async () => {
    const cut = await learn(
      store,
      { statement: 'corrupted files must never be rewritten as if whole', rationale: 'found by pulling the disk' },
      systemContext,
    );
    const kept = await learn(store, { statement: 'Hand edits stay welcome' }, systemContext);
    // `truncate -s 120`: valid YAML and a valid engram, `statement: corru...`
    writeFileSync(fileOf(cut.engram.id), readFileSync(fileOf(cut.engram.id)).subarray(0, 120));
    expect(parse(readFileSync(fileOf(cut.engram.id), 'utf8')).statement).toMatch(/^corru/);
    // A hand edit of the statement keeps every key: accepted, its hash computed again.
    const doc = readYaml(kept.engram.id);
    doc.statement = 'Hand edits of a statement stay welcome';
    writeFileSync(fileOf(kept.engram.id), stringify(doc));
    await reopen('full');
    expect(store.warnings.join('\n')).toMatch(
      new RegExp(
        `quarantined ${cut.engram.id}\\.yaml: it lost .*content_hash, which its previous version had: the file was cut short or damaged`,
      ),
    );
    expect(await store.get(cut.engram.id)).toBeNull();
    await expect(feedback(store, [{ id: cut.engram.id, signal: 'positive' }], systemContext)).rejects.toThrow(/no engram/);
    const q = store.quarantined().find((x) => x.file.includes(cut.engram.id))!;
    expect(readFileSync(q.file)).toHaveLength(120);
    expect(await store.get(kept.engram.id)).toMatchObject({
      statement: 'Hand edits of a statement stay welcome',
      content_hash: expect.stringMatching(/^sha256:/),
    });
    expect((await store.get(kept.engram.id))!.content_hash).not.toBe(kept.engram.content_hash);
  });

  it('leaves nothing behind when a write fails after its files were written: a single learn and a whole import batch', async () => {
    const kept = await learn(store, { statement: 'Existing rule stays' }, systemContext);
    const before = readdirSync(join(root, 'engrams')).sort();
    const eventsBefore = readdirSync(join(root, 'events'))
      .map((f) => readFileSync(join(root, 'events', f), 'utf8'))
      .join('');
    // The history cannot be appended (a file where its folder should be): the write fails late.
    rmSync(join(root, 'events'), { recursive: true });
    writeFileSync(join(root, 'events'), 'in the way');
    await expect(learn(store, { statement: 'Never half-written', rationale: 'x' }, systemContext)).rejects.toThrow();
    const { learnBatch } = await import('../ops/import/batch-learn.js');
    await expect(
      learnBatch(
        store,
        Array.from({ length: 40 }, (_, i) => ({ input: { statement: `Imported rule ${i}` } })),
        systemContext,
        { onDuplicate: 'skip' },
      ),
    ).rejects.toThrow();
    expect(readdirSync(join(root, 'engrams')).sort()).toEqual(before);
    expect((await store.list({})).map((e) => e.id)).toEqual([kept.engram.id]);
    rmSync(join(root, 'events'));
    await reopen('full');
    expect((await store.list({})).map((e) => e.id)).toEqual([kept.engram.id]);
    expect(eventsBefore).not.toBe('');
    const again = await learn(store, { statement: 'Never half-written' }, systemContext);
    expect(again.action).toBe('created');
  });

  it('quarantines corrupt, empty and invalid files, keeps their bytes, and serves the rest', async () => {
    const good = await learn(store, { statement: 'Good engram about retries' }, systemContext);
    const bad = {
      'ENG-2026-0101-001.yaml': 'id: ENG-2026-0101-001\nstatement: [unclosed\n',
      'ENG-2026-0101-002.yaml': '',
      'ENG-2026-0101-003.yaml': stringify({
        id: 'ENG-2026-0101-003',
        status: 'zombie',
        type: 'behavioral',
        scope: 'global',
        statement: 'retries everywhere',
      }),
      'ENG-2026-0101-004.yaml': stringify({
        id: 'ENG-2026-0101-999',
        status: 'active',
        type: 'behavioral',
        scope: 'global',
        statement: 'wrong name',
      }),
    };
    for (const [name, text] of Object.entries(bad)) writeFileSync(join(root, 'engrams', name), text);
    await reopen();
    const reasons = store.quarantined();
    expect(reasons).toHaveLength(4);
    expect(reasons.map((q) => q.reason).join('\n')).toMatch(/not valid YAML/);
    expect(reasons.map((q) => q.reason).join('\n')).toMatch(/file is empty/);
    expect(reasons.map((q) => q.reason).join('\n')).toMatch(/status: must be one of/);
    expect(reasons.map((q) => q.reason).join('\n')).toMatch(/does not match the file name/);
    expect(store.warnings.join('\n')).toMatch(/quarantined ENG-2026-0101-003\.yaml/);
    // Nothing is lost: every byte is in quarantine.
    for (const [name, text] of Object.entries(bad)) {
      const kept = reasons.find((q) => q.file.includes(`${name}.`))!;
      expect(readFileSync(kept.file, 'utf8')).toBe(text);
    }
    expect((await recall(store, 'retries')).hits.map((h) => h.engram.id)).toEqual([good.engram.id]);
    expect((await store.stats()).engrams).toBe(1);
  });

  it('sets a damaged index aside and rebuilds it, losing nothing', async () => {
    const a = await learn(store, { statement: 'Index damage must not lose engrams' }, systemContext);
    store.close();
    writeFileSync(join(root, 'index.db'), 'this is not a database');
    store = await LocalStore.open(root);
    expect(store.warnings.join('\n')).toMatch(/index was damaged \(SQLITE_NOTADB\).*rebuilt it from the YAML files/);
    expect((await recall(store, 'damage')).hits.map((h) => h.engram.id)).toEqual([a.engram.id]);
    expect(readdirSync(root).some((f) => f.startsWith('index.db.damaged-'))).toBe(true);
  });

  it('rebuilds the index from the files alone', async () => {
    for (let i = 0; i < 20; i++) await learn(store, { statement: `Rule number ${i} about widgets` }, systemContext);
    store.close();
    for (const f of ['index.db', 'index.db-wal', 'index.db-shm']) rmSync(join(root, f), { force: true });
    store = await LocalStore.open(root);
    expect((await store.stats()).engrams).toBe(20);
    expect((await recall(store, 'widgets', { limit: 50 })).hits).toHaveLength(20);
    const next = await learn(store, { statement: 'One more about gadgets' }, systemContext);
    expect(parseId(next.engram.id)!.seq).toBe(21);
  });
});
