import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { LocalStore } from '../store/local-store.js';
import { importFile, importIntoStore, type ImportOptions, type ImportReport } from '../ops/import/import.js';
import { learnBatch } from '../ops/import/batch-learn.js';
import { learn } from '../ops/learn.js';
import { forget } from '../ops/forget.js';
import { systemContext } from '../ops/context.js';
import { SvcError } from '../errors.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const DATA = fileURLToPath(new URL('./data/', import.meta.url));
const data = (name: string): string => join(DATA, name);

let dir: string;
let root: string;
let store: LocalStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-import-'));
  root = join(dir, 'store');
  store = await LocalStore.open(root);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (opts: ImportOptions): Promise<ImportReport> => importFile(store, opts, systemContext);
const rowAt = (r: ImportReport, at: string) => r.rows.find((x) => x.at === at || x.at.startsWith(`${at} `));
const all = () => store.list({ limit: 1000 });
const byStatement = async (start: string) => (await all()).find((e) => e.statement.startsWith(start));
const fileCount = (): number => readdirSync(join(root, 'engrams')).filter((f) => f.endsWith('.yaml')).length;

/** A mem0 history database built from the SQL fixture. */
let dbs = 0;
function mem0Db(sqlFile = 'mem0-history.sql'): string {
  const path = join(dir, `history-${++dbs}.db`);
  const db = new Database(path);
  db.exec(readFileSync(data(sqlFile), 'utf8'));
  db.close();
  return path;
}

async function rejects(p: Promise<unknown>, message: RegExp): Promise<SvcError> {
  const err = await p.then(
    () => {
      throw new Error('expected the import to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SvcError);
  expect((err as SvcError).kind).toBe('invalid');
  expect((err as SvcError).message).toMatch(message);
  return err as SvcError;
}

describe('generic JSONL', () => {
  it('imports good rows, skips in-file duplicates, demotes secrets and names every bad row', async () => {
    const r = await run({ from: 'generic', path: data('notes.jsonl') });
    expect(r).toMatchObject({
      from: 'generic',
      format: 'jsonl',
      dry_run: false,
      total: 11,
      imported: 5,
      skipped: 1,
      conflict: 0,
      error: 5,
    });
    expect(r.rows.map((x) => [x.at, x.status])).toEqual([
      ['line 5 (id n-4)', 'skipped'],
      ['line 7 (id n-6)', 'error'],
      ['line 8 (id n-7)', 'error'],
      ['line 9 (id n-8)', 'error'],
      ['line 10', 'error'],
      ['line 11 (id n-10)', 'error'],
    ]);
    expect(rowAt(r, 'line 5')).toMatchObject({
      row: 5,
      id: 'n-4',
      reason: 'duplicate of an earlier row of this file (same statement, scope global)',
    });
    expect(rowAt(r, 'line 7')!.reason).toBe('statement: missing or empty');
    expect(rowAt(r, 'line 8')!.reason).toBe('type: "opinion" is not one of behavioral, terminological, procedural, architectural');
    expect(rowAt(r, 'line 9')!.reason).toBe('scope: must not contain whitespace (got "project shop")');
    expect(rowAt(r, 'line 10')!.reason).toMatch(/^not valid JSON: /);
    expect(rowAt(r, 'line 11')!.reason).toBe('statement: must be text, got a list');
    expect(r.demoted).toEqual([expect.objectContaining({ row: 12, id: 'n-11', scope: 'local' })]);
    expect(r.demoted[0]!.reason).toMatch(/looks like it holds a secret: credential assignment/);

    expect(fileCount()).toBe(5);
    expect(await byStatement('Run the database migrations')).toMatchObject({
      type: 'procedural',
      domain: 'ops.db',
      tags: ['db', 'startup'],
      scope: 'global',
      source: 'import:notes.jsonl',
    });
    expect(await byStatement('Never commit .env files')).toMatchObject({ type: 'behavioral', tags: ['security', 'git'], polarity: 'dont' });
    const staging = await byStatement('Staging deploys');
    expect(staging).toMatchObject({ type: 'architectural' });
    expect(staging!.temporal).toMatchObject({ learned_at: '2024-03-05T09:30:00.000Z' });
    expect(staging!.temporal!.ingested_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(await byStatement('Feature flags live')).toMatchObject({ type: 'terminological', scope: 'project:shop' });
    expect(await byStatement('The payment webhook secret')).toMatchObject({ scope: 'local', visibility: 'private' });
  });

  it("records the import in each created engram's history", async () => {
    await run({ from: 'generic', path: data('notes.jsonl') });
    const id = (await byStatement('Staging deploys'))!.id;
    const events = await store.listEvents({ engram_id: id } as never);
    expect(events[0]).toMatchObject({
      action: 'created',
      details: { via: 'import', from: 'generic', file: 'notes.jsonl', at: 'line 3 (id n-3)', source_id: 'n-3' },
    });
  });

  it('importing the same file again skips every row and changes nothing', async () => {
    await run({ from: 'generic', path: data('notes.jsonl') });
    const before = Object.fromEntries((await all()).map((e) => [e.id, e.reference_count]));
    const again = await run({ from: 'generic', path: data('notes.jsonl') });
    expect(again).toMatchObject({ imported: 0, skipped: 6, error: 5, conflict: 0 });
    expect(rowAt(again, 'line 1')!.reason).toMatch(/^already in the store as ENG-\S+ \(same statement, scope global\)$/);
    expect(rowAt(again, 'line 12')).toMatchObject({ status: 'skipped', engram: expect.stringMatching(/^ENG-/) });
    expect(rowAt(again, 'line 12')!.reason).toContain('scope local');
    expect(Object.fromEntries((await all()).map((e) => [e.id, e.reference_count]))).toEqual(before);
    expect(fileCount()).toBe(5);
  });

  it('--scope puts every row in that scope; the project scope is only a fallback', async () => {
    const forced = await run({ from: 'generic', path: data('notes.jsonl'), scope: 'project:ops' });
    // n-8's bad scope is overridden, so it imports too.
    expect(forced).toMatchObject({ imported: 6, error: 4 });
    expect(new Set((await all()).map((e) => e.scope))).toEqual(new Set(['project:ops', 'local']));

    const other = await LocalStore.open(join(dir, 'other'));
    try {
      await importFile(
        other,
        { from: 'generic', path: data('notes.jsonl'), project: { scope: 'project:team', domain: 'team' } },
        systemContext,
      );
      const list = await other.list({ limit: 100 });
      expect(list.find((e) => e.statement.startsWith('Feature flags'))).toMatchObject({ scope: 'project:shop', domain: 'team' });
      expect(list.find((e) => e.statement.startsWith('Never commit'))).toMatchObject({ scope: 'project:team', domain: 'team' });
    } finally {
      other.close();
    }
  });
});

describe('conflicts', () => {
  it('a statement retired at the scope, or stored there with another type, is a conflict: nothing written', async () => {
    const retired = await learn(store, { statement: 'Never commit .env files' }, systemContext);
    await forget(store, { target: retired.engram.id }, systemContext);
    const typed = await learn(
      store,
      { statement: 'Feature flags live in config/flags.yaml', type: 'behavioral', scope: 'project:shop' },
      systemContext,
    );
    const r = await run({ from: 'generic', path: data('notes.jsonl') });
    expect(r).toMatchObject({ imported: 3, conflict: 3 });
    expect(rowAt(r, 'line 2')).toMatchObject({ status: 'conflict', engram: retired.engram.id });
    expect(rowAt(r, 'line 2')!.reason).toBe(`the same statement was retired at scope global (${retired.engram.id}); not revived`);
    expect(rowAt(r, 'line 6')).toMatchObject({ status: 'conflict', engram: typed.engram.id });
    expect(rowAt(r, 'line 6')!.reason).toBe(
      `the same statement is stored at scope project:shop as ${typed.engram.id} with type behavioral, not terminological`,
    );
    // n-4 (same words as the retired n-2, no type) is a conflict too, not a revival.
    expect(rowAt(r, 'line 5')).toMatchObject({ status: 'conflict' });
    expect((await store.get(retired.engram.id))!.status).toBe('retired');
    expect((await store.get(typed.engram.id))!.reference_count).toBe(1);
  });

  it('the same statement at another scope is imported, and counted as a recurrence there', async () => {
    const elsewhere = await learn(store, { statement: 'Never commit .env files', scope: 'project:other' }, systemContext);
    const r = await run({ from: 'generic', path: data('notes.jsonl') });
    expect(r.imported).toBe(5);
    expect((await store.get(elsewhere.engram.id))!.recurrence_count).toBe(1);
  });
});

describe('dry run', () => {
  it('gives the same report as the real import and writes nothing', async () => {
    await learn(store, { statement: 'Never commit .env files' }, systemContext);
    const dry = await run({ from: 'generic', path: data('notes.jsonl'), dryRun: true });
    expect(fileCount()).toBe(1);
    expect(dry.dry_run).toBe(true);
    expect(dry.demoted[0]).not.toHaveProperty('engram');
    const real = await run({ from: 'generic', path: data('notes.jsonl') });
    const shape = (r: ImportReport) => ({
      ...r,
      dry_run: undefined,
      elapsed_ms: undefined,
      demoted: r.demoted.map((d) => ({ ...d, engram: undefined })),
    });
    expect(shape(dry)).toEqual(shape(real));
    expect(fileCount()).toBe(5);
  });

  it('into a store that does not exist yet, creates nothing', async () => {
    const missing = join(dir, 'nowhere', 'store');
    const { report } = await importIntoStore(missing, { from: 'generic', path: data('notes.jsonl'), dryRun: true }, systemContext);
    expect(report).toMatchObject({ imported: 5, skipped: 1, error: 5 });
    expect(existsSync(join(dir, 'nowhere'))).toBe(false);
  });
});

describe('generic CSV with a mapping', () => {
  it('maps columns to fields, fills blanks from defaults and names rows by line', async () => {
    const r = await run({ from: 'generic', path: data('notes.csv'), mapping: data('notes-mapping.json') });
    expect(r).toMatchObject({ format: 'csv', total: 7, imported: 4, skipped: 0, conflict: 0, error: 3 });
    expect(r.rows).toEqual([
      { row: 7, at: 'line 7', status: 'error', reason: 'has 6 fields, the header has 5' },
      { row: 8, at: 'line 8', status: 'error', reason: 'statement: missing or empty' },
      { row: 9, at: 'line 9', status: 'error', reason: 'learned_at: "not-a-date" is not a date' },
    ]);
    expect(await byStatement('Keep API responses')).toMatchObject({
      type: 'behavioral',
      domain: 'perf.api',
      tags: ['perf', 'api'],
      visibility: 'public',
      polarity: 'do',
    });
    expect((await byStatement('Keep API responses'))!.temporal!.learned_at).toBe('2024-01-10T00:00:00.000Z');
    expect(await byStatement('Tickets are triaged')).toMatchObject({ type: 'architectural', domain: 'process' });
    expect(await byStatement('"SLO" means')).toMatchObject({ type: 'terminological', domain: 'imported', tags: ['glossary'] });
    const multi = await byStatement('Answer pages within 15 minutes');
    expect(multi!.statement).toBe('Answer pages within 15 minutes\n(the on-call rotation is in PagerDuty)');
  });

  it('a CSV with no statement column fails as a whole and names the columns', async () => {
    await rejects(
      run({ from: 'generic', path: data('notes.csv') }),
      /no statement column in the header \(looked for "statement", "content", "text", "memory"; the header has "Note", "Kind"/,
    );
    expect(fileCount()).toBe(0);
  });

  it('mapping a nested JSON export with dotted paths, null fields and defaults', async () => {
    const r = await run({ from: 'generic', path: data('tasks-export.json'), mapping: data('tasks-mapping.json') });
    expect(r).toMatchObject({ format: 'json', total: 4, imported: 2, error: 2 });
    expect(r.rows).toEqual([
      { row: 3, at: 'item 3 (id T-3)', id: 'T-3', status: 'error', reason: 'statement: missing or empty' },
      { row: 4, at: 'item 4', status: 'error', reason: 'expected an object (or a string), got number' },
    ]);
    expect(await byStatement('Write a regression test')).toMatchObject({ type: 'behavioral', domain: 'testing', tags: ['quality'] });
    expect(await byStatement('Release notes are written')).toMatchObject({ type: 'procedural', domain: 'docs', tags: ['migrated'] });
  });

  it('an inline mapping object works the same, and null stops a field being read', async () => {
    const r = await run({
      from: 'generic',
      path: data('notes.jsonl'),
      mapping: { fields: { type: null, scope: null, id: null }, defaults: { type: 'procedural' } },
    });
    // n-7's bad type and n-8's bad scope are no longer read; n-4 is now a same-type duplicate of n-2.
    expect(r).toMatchObject({ imported: 7, skipped: 1, error: 3 });
    expect(new Set((await all()).map((e) => e.type))).toEqual(new Set(['procedural']));
  });

  it('rejects a bad mapping once, naming each problem', async () => {
    const bad = join(dir, 'bad-mapping.json');
    writeFileSync(bad, JSON.stringify({ fields: { statment: 'Note', type: 3 }, defaults: { type: 'opinion', statement: 'x' }, extra: 1 }));
    const err = await rejects(run({ from: 'generic', path: data('notes.csv'), mapping: bad }), /is not a valid mapping/);
    expect(err.details).toEqual([
      'unknown key "extra" (expected "fields" and "defaults")',
      expect.stringMatching(/^fields\.statment: not an engram field/),
      'fields.type: must name a source column or dotted path (or be null: never read it)',
      'defaults.statement: cannot have a default',
      'defaults.type: "opinion" is not one of behavioral, terminological, procedural, architectural',
    ]);
    writeFileSync(bad, '{"fields": ');
    await rejects(run({ from: 'generic', path: data('notes.csv'), mapping: bad }), /the mapping file .* is not valid JSON/);
    await rejects(
      run({ from: 'generic', path: data('notes.csv'), mapping: join(dir, 'none.json') }),
      /cannot read the mapping file .*ENOENT/,
    );
    await rejects(
      run({ from: 'mem0-json', path: data('mem0-export.json'), mapping: data('notes-mapping.json') }),
      /--mapping applies only to --from generic/,
    );
  });
});

describe('generic JSON', () => {
  it('takes a plain list of strings and objects', async () => {
    const r = await run({ from: 'generic', path: data('plain-list.json') });
    expect(r).toMatchObject({ format: 'json', total: 3, imported: 3 });
    expect(await byStatement('Never run migrations by hand')).toMatchObject({ polarity: 'dont' });
    expect(await byStatement('Backups are verified weekly')).toMatchObject({ type: 'procedural' });
  });

  it('sniffs the format when the extension says nothing', async () => {
    const noExt = join(dir, 'export');
    writeFileSync(noExt, readFileSync(data('notes.jsonl')));
    expect((await run({ from: 'generic', path: noExt })).format).toBe('jsonl');
    writeFileSync(noExt, 'statement,type\n"Use UTC timestamps everywhere",rule\n');
    expect(await run({ from: 'generic', path: noExt })).toMatchObject({ format: 'csv', imported: 1 });
  });
});

describe('malformed input files: one clear error, nothing written', () => {
  const write = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it.each([
    ['broken.json', '[{"statement": "a"}, ', /^broken\.json is not valid JSON: /],
    [
      'object.json',
      '{"name": "not a list"}',
      /^object\.json holds no list of records: expected a JSON array, or an object with one of "items"/,
    ],
    ['garbage.jsonl', 'hello\nworld\n', /^garbage\.jsonl is not JSON Lines: line 1: not valid JSON/],
    ['quote.csv', 'statement,type\n"unclosed,rule\n', /^quote\.csv is not valid CSV: Quote Not Closed/],
    ['dupe.csv', 'statement,statement\na,b\n', /the header \(line 1\) names column "statement" twice/],
    ['prose.txt', 'Meeting notes\nWe talked about the release.\n', /^prose\.txt: no statement column in the header/],
    ['empty.jsonl', '', /^empty\.jsonl is empty: nothing to import$/],
    ['blank.csv', '\n  \n', /^blank\.csv is empty: nothing to import$/],
    [
      'program.bin',
      '\u007fELF\u0002\u0001\u0001\u0000\u0000statement,"x',
      /^program\.bin is not a text file \(binary data\): import reads JSON, JSONL or CSV text$/,
    ],
  ])('%s', async (name, text, message) => {
    await rejects(run({ from: 'generic', path: write(name, text) }), message);
    expect(fileCount()).toBe(0);
  });

  it('a missing file, a folder and an unknown source', async () => {
    await rejects(run({ from: 'generic', path: join(dir, 'missing.jsonl') }), /^the input file .*missing\.jsonl does not exist$/);
    await rejects(run({ from: 'generic', path: dir }), /is a folder, not a file/);
    await rejects(
      run({ from: 'mem1', path: data('notes.jsonl') }),
      /^--from must be one of generic, mem0-json, mem0-sqlite \(got "mem1"\)$/,
    );
  });

  it('mem0 sources: a text file as SQLite, a database without history, a JSON that is not an export', async () => {
    await rejects(run({ from: 'mem0-sqlite', path: data('notes.jsonl') }), /notes\.jsonl is not a SQLite database/);
    const other = join(dir, 'other.db');
    const db = new Database(other);
    db.exec('CREATE TABLE notes (id TEXT)');
    db.close();
    await rejects(
      run({ from: 'mem0-sqlite', path: other }),
      /other\.db is not a mem0 history database: it has no "history" \(or "memory_history"\) table \(tables: notes\)/,
    );
    await rejects(run({ from: 'mem0-json', path: data('notes.csv') }), /notes\.csv is not valid JSON/);
    await rejects(
      run({ from: 'mem0-json', path: data('tasks-export.json') }),
      /tasks-export\.json is not a mem0 export: none of its 4 entries has a "memory"/,
    );
    await rejects(
      run({ from: 'mem0-json', path: write('conf.json', '{"version": 2}') }),
      /conf\.json holds no list of records: expected a JSON array, or an object with one of "results", "memories", "items"/,
    );
    await rejects(run({ from: 'mem0-json', path: write('x.json', '{') }), /x\.json is not valid JSON/);
    const latin1 = join(dir, 'latin1.json');
    writeFileSync(latin1, Buffer.from([0x5b, 0x22, 0xe9, 0x22, 0x5d])); // ["é"] in Latin-1: not UTF-8
    await rejects(
      run({ from: 'mem0-json', path: latin1 }),
      /^latin1\.json is not UTF-8 text: import reads JSON, JSONL or CSV encoded in UTF-8$/,
    );
  });
});

describe('mem0', () => {
  it('mem0-json: imports get_all() results, skips deleted, names the empty one', async () => {
    const r = await run({ from: 'mem0-json', path: data('mem0-export.json') });
    expect(r).toMatchObject({ from: 'mem0-json', total: 5, imported: 3, skipped: 1, error: 1 });
    expect(r.rows).toEqual([
      {
        row: 4,
        at: 'memory 3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7',
        id: '3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7',
        status: 'error',
        reason: 'no "memory" text',
      },
      {
        row: 5,
        at: 'memory 9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
        id: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
        status: 'skipped',
        reason: 'deleted in mem0',
      },
    ]);
    const ts = await byStatement('Prefers TypeScript');
    expect(ts).toMatchObject({ type: 'behavioral', source: 'mem0:8c1e5f0a-6b1d-4a5e-9a61-3f2d8f7c9b01', tags: [] });
    expect(ts!.temporal!.learned_at).toBe('2024-06-01T17:15:00.123Z');
    expect(await byStatement('Uses pnpm')).toMatchObject({ tags: ['tooling', 'preferences'] });
    expect(await byStatement('To deploy:')).toMatchObject({ type: 'procedural' });

    const bare = join(dir, 'bare.json');
    writeFileSync(bare, JSON.stringify(JSON.parse(readFileSync(data('mem0-export.json'), 'utf8')).results));
    expect(await run({ from: 'mem0-json', path: bare })).toMatchObject({ imported: 0, skipped: 4, error: 1 });
  });

  it('mem0-json: a list of history entries is replayed like the database', async () => {
    const history = join(dir, 'history.json');
    writeFileSync(
      history,
      JSON.stringify([
        { id: 'h1', memory_id: 'm-1', old_memory: null, new_memory: 'Likes tea', event: 'ADD', created_at: '2024-01-01T00:00:00Z' },
        {
          id: 'h2',
          memory_id: 'm-1',
          old_memory: 'Likes tea',
          new_memory: 'Likes green tea',
          event: 'UPDATE',
          created_at: '2024-01-01T00:00:00Z',
        },
        { id: 'h3', memory_id: 'm-2', old_memory: null, new_memory: 'Lives in Oslo', event: 'ADD', created_at: '2024-01-02T00:00:00Z' },
        { id: 'h4', memory_id: 'm-2', old_memory: 'Lives in Oslo', new_memory: null, event: 'DELETE', is_deleted: true },
      ]),
    );
    const r = await run({ from: 'mem0-json', path: history });
    expect(r).toMatchObject({ total: 2, imported: 1, skipped: 1 });
    expect((await all()).map((e) => e.statement)).toEqual(['Likes green tea']);
  });

  it('mem0-sqlite: replays the history table (Python SDK schema)', async () => {
    const r = await run({ from: 'mem0-sqlite', path: mem0Db() });
    expect(r).toMatchObject({ from: 'mem0-sqlite', total: 5, imported: 3, skipped: 1, conflict: 0, error: 1 });
    expect(r.rows).toEqual([
      { row: 2, at: 'memory m-2', id: 'm-2', status: 'skipped', reason: 'deleted in mem0' },
      { row: 4, at: 'memory m-4', id: 'm-4', status: 'error', reason: 'no ADD or UPDATE event with a memory text' },
    ]);
    const m1 = await byStatement('Prefers code reviews');
    expect(m1).toMatchObject({ statement: 'Prefers code reviews under 400 lines', source: 'mem0:m-1', scope: 'global' });
    expect(m1!.temporal!.learned_at).toBe('2024-06-01T10:00:00.000Z');
    expect(r.demoted).toEqual([expect.objectContaining({ at: 'memory m-5', id: 'm-5', scope: 'local' })]);
    expect(await byStatement('Deploy token is')).toMatchObject({ scope: 'local' });
    // Re-import: every live memory is already there.
    expect(await run({ from: 'mem0-sqlite', path: mem0Db() })).toMatchObject({ imported: 0, skipped: 4, error: 1 });
  });

  it('mem0-sqlite: the older Python schema and the TypeScript SDK schema', async () => {
    const old = join(dir, 'old.db');
    let db = new Database(old);
    db.exec(`CREATE TABLE history (id TEXT PRIMARY KEY, memory_id TEXT, prev_value TEXT, new_value TEXT, event TEXT, timestamp DATETIME, is_deleted INTEGER);
      INSERT INTO history VALUES ('a', 'x1', NULL, 'Drinks coffee black', 'ADD', '2023-05-01T08:00:00', 0);
      INSERT INTO history VALUES ('b', 'x2', NULL, 'Owns a cat', 'ADD', '2023-05-02T08:00:00', 0);
      INSERT INTO history VALUES ('c', 'x2', 'Owns a cat', NULL, 'DELETE', '2023-05-03T08:00:00', 1);`);
    db.close();
    expect(await run({ from: 'mem0-sqlite', path: old })).toMatchObject({ total: 2, imported: 1, skipped: 1 });

    const ts = join(dir, 'ts.db');
    db = new Database(ts);
    db.exec(`CREATE TABLE memory_history (id INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL, previous_value TEXT, new_value TEXT, action TEXT NOT NULL, created_at TEXT, updated_at TEXT, is_deleted INTEGER DEFAULT 0);
      INSERT INTO memory_history (memory_id, previous_value, new_value, action, created_at) VALUES ('t1', NULL, 'Works in UTC+2', 'ADD', '2024-02-01T00:00:00Z');
      INSERT INTO memory_history (memory_id, previous_value, new_value, action, created_at, updated_at) VALUES ('t1', 'Works in UTC+2', 'Works in UTC+1', 'UPDATE', '2024-02-01T00:00:00Z', '2024-03-01T00:00:00Z');`);
    db.close();
    const r = await run({ from: 'mem0-sqlite', path: ts });
    expect(r).toMatchObject({ total: 1, imported: 1 });
    expect(await byStatement('Works in')).toMatchObject({ statement: 'Works in UTC+1', source: 'mem0:t1' });
  });
});

describe('batches', () => {
  it('writes in batches of the given size; duplicates across batches are still skipped', async () => {
    const lines = Array.from({ length: 25 }, (_, i) => JSON.stringify({ statement: `Rule number ${i % 10} of the style guide` }));
    const file = join(dir, 'rows.jsonl');
    writeFileSync(file, lines.join('\n'));
    const r = await run({ from: 'generic', path: file, batchSize: 4 });
    expect(r).toMatchObject({ total: 25, imported: 10, skipped: 15 });
    expect(r.rows.every((x) => x.reason.startsWith('duplicate of an earlier row of this file'))).toBe(true);
    expect(fileCount()).toBe(10);
  });

  it('learnBatch in dry-run mode touches nothing and reports like a real run', async () => {
    const items = [{ input: { statement: 'Use UTC' } }, { input: { statement: 'use utc.' } }, { input: { statement: '' } }];
    const outcomes = await learnBatch(store, items, systemContext, { onDuplicate: 'skip', dryRun: true });
    expect(outcomes.map((o) => o.action)).toEqual(['created', 'duplicate', 'error']);
    expect(fileCount()).toBe(0);
  });
});

describe('MCP tools svc_ingest and svc_import', () => {
  it("run ingest and import on the server's backend, or import into another store", async () => {
    const { invokeTool } = await import('../mcp/dispatch.js');
    const { ingestTool, importTool } = await import('../mcp/ingest-tools.js');
    const ctx = {
      backend: store,
      embedder: { load: async () => ({ state: 'unavailable' }), peek: () => undefined, probe: async () => ({ state: 'unavailable' }) },
      now: () => new Date(),
      local: store,
      project: { scope: 'project:mcp' },
    } as never;
    const extracted = (await invokeTool(ingestTool, ctx, {
      content: 'Never deploy on Fridays. Is it raining?',
      extract_only: true,
    })) as Json;
    expect(extracted).toMatchObject({ count: 1, created: 0 });
    const saved = (await invokeTool(ingestTool, ctx, { content: 'Never deploy on Fridays.', domain: 'ops' })) as Json;
    expect(saved.candidates[0]).toMatchObject({ action: 'created', scope: 'project:mcp', domain: 'ops' });

    const report = (await invokeTool(importTool, ctx, { from: 'generic', path: data('plain-list.json') })) as Json;
    expect(report).toMatchObject({ imported: 3 });
    expect((await all()).filter((e) => e.scope === 'project:mcp')).toHaveLength(4);

    const elsewhere = join(dir, 'elsewhere');
    const other = (await invokeTool(importTool, ctx, {
      from: 'mem0-json',
      path: data('mem0-export.json'),
      store: elsewhere,
      dry_run: true,
    })) as Json;
    expect(other).toMatchObject({ store: elsewhere, dry_run: true, imported: 3 });
    expect(existsSync(elsewhere)).toBe(false);
    await expect(invokeTool(importTool, ctx, { from: 'generic' })).rejects.toThrow(/invalid arguments for svc_import: path/);
  });
});
