import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { okIn as ok, projectDir, runIn as run, tempStore, type RunOptions, type SvcRun } from '../../engine/test/support/run-svc.js';

// `svc ingest` and `svc import` as real processes (dist/bin/svc.js). stdout is a pipe, so JSON
// is the default; --no-json gives the text a person reads.

type Json = any;

const DATA = fileURLToPath(new URL('../../engine/test/data/', import.meta.url));
const data = (name: string): string => join(DATA, name);

/** Exit 1 with exactly one clean JSON error line on stderr (no stack trace). */
async function fails(store: string, args: string[], opts: RunOptions = {}): Promise<{ message: string; details: string[]; run: SvcRun }> {
  const r = await run(store, args, opts);
  expect(r.code, `svc ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(1);
  const lines = r.stderr.split('\n').filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  const { error } = JSON.parse(lines[0]!) as { error: { message: string; details: string[] } };
  return { ...error, run: r };
}

const engramFiles = (store: string): string[] =>
  existsSync(join(store, 'engrams')) ? readdirSync(join(store, 'engrams')).filter((f) => f.endsWith('.yaml')) : [];
const list = async (store: string): Promise<Json[]> => (await ok(store, ['list', '--limit', '1000'])).engrams;

describe.concurrent('svc ingest', () => {
  it('--extract-only prints the candidates from stdin and creates no store', async () => {
    const store = tempStore();
    const out = await ok(store, ['ingest', '--extract-only', '--domain', 'tidepool'], {
      input: readFileSync(data('CONTRIBUTING.md'), 'utf8'),
    });
    expect(out).toMatchObject({ format: 'document', extract_only: true, count: 22, created: 0 });
    expect(out.candidates.find((c: Json) => c.statement.startsWith('Force-pushing'))).toMatchObject({
      kind: 'prohibition',
      type: 'behavioral',
      polarity: 'dont',
      domain: 'tidepool.pull-requests',
      line: 59,
    });
    expect(existsSync(store)).toBe(false);
  });

  it("saves a chat transcript's learnings with type, scope and source; a second run only bumps reference counts", async () => {
    const store = tempStore();
    const transcript = readFileSync(data('chat-transcript.txt'), 'utf8');
    const out = await ok(store, ['ingest', '--scope', 'project:uploader', '--source', 'session 42'], { input: transcript });
    expect(out).toMatchObject({ format: 'chat', count: 6, created: 6, duplicate: 0 });
    const engrams = await list(store);
    expect(engrams.map((e: Json) => [e.type, e.statement]).sort()).toEqual(
      [
        ['architectural', 'We decided to keep the upload timeout at 30 seconds because the CDN drops slower connections anyway.'],
        ['behavioral', "Always run the linter before you tell me you're done."],
        ['behavioral', "Don't add new dependencies for something this small, just write the loop yourself."],
        ['behavioral', 'Use pnpm.'],
        ['behavioral', 'We never use npm in this repo.'],
        ['terminological', '"flaky" here means a test that failed at least once in the last 20 CI runs.'],
      ].sort(),
    );
    expect(new Set(engrams.map((e: Json) => e.scope))).toEqual(new Set(['project:uploader']));
    const again = await ok(store, ['ingest', '--scope', 'project:uploader'], { input: transcript });
    expect(again).toMatchObject({ created: 0, duplicate: 6 });
    expect(engramFiles(store)).toHaveLength(6);
  });

  it('takes the text as an argument, uses .svc.yaml defaults, and prints text with --no-json', async () => {
    const store = tempStore();
    const cwd = projectDir('scope: project:shop\ndomain: shop\n');
    const r = await run(
      store,
      ['ingest', '--no-json', 'We decided to use Postgres for orders. Never log card numbers. Nice weather today.'],
      { cwd },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Ingested 2 statements from a document: 2 new, 0 already known\n/);
    expect(r.stdout).toMatch(/ENG-\S+ {2}\[decision, architectural\] We decided to use Postgres for orders\. {2}\(line 1, shop\)/);
    expect(r.stdout).toContain('[prohibition, behavioral, dont] Never log card numbers.');
    const engrams = await list(store);
    expect(engrams.every((e: Json) => e.scope === 'project:shop' && e.domain === 'shop')).toBe(true);
  });

  it('warns when a secret is moved to the local scope', async () => {
    const store = tempStore();
    const r = await run(store, [
      'ingest',
      '--scope',
      'project:x',
      'Never paste the token ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 into chats.',
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/svc: warning: line 1: content looks like it holds a secret: GitHub token .*stored in scope "local"/);
    expect(JSON.parse(r.stdout).candidates[0]).toMatchObject({ scope: 'local', action: 'created' });
  });

  it('usage errors: no text, a bad scope or domain, an unknown flag', async () => {
    const store = tempStore();
    expect((await fails(store, ['ingest'])).message).toBe('the text to ingest is missing: pass it as an argument or on stdin');
    expect((await fails(store, ['ingest', '--scope', 'bad scope', 'Always use pnpm.'])).message).toMatch(
      /scope: must not contain whitespace/,
    );
    expect((await fails(store, ['ingest', '--domain', 'a b', 'Always use pnpm.'])).message).toMatch(/--domain must be a dotted path/);
    expect((await fails(store, ['ingest', '--file', 'x.md'])).message).toBe('unknown flag --file (see --help)');
  });

  it('finding nothing is not an error', async () => {
    const store = tempStore();
    expect(await ok(store, ['ingest', 'hello there, how are you?'])).toMatchObject({ count: 0, created: 0 });
    const r = await run(store, ['ingest', '--no-json', 'thanks!']);
    expect(r.stdout).toBe('No learnable statements found.\n');
  });
});

describe.concurrent('svc import', () => {
  it('--path is the input and --store the store; SVC_PATH is left alone', async () => {
    const home = tempStore('home');
    const target = join(mkdtempSync(join(tmpdir(), 'svc-target-')), 'store');
    const out = await ok(home, ['import', '--from', 'generic', '--path', data('plain-list.json'), '--store', target]);
    expect(out).toMatchObject({
      from: 'generic',
      format: 'json',
      path: data('plain-list.json'),
      store: target,
      total: 3,
      imported: 3,
      error: 0,
    });
    expect(engramFiles(target)).toHaveLength(3);
    expect(existsSync(home)).toBe(false);
    // Without --store, the store is $SVC_PATH (never the --path file).
    const viaEnv = await ok(home, ['import', '--from', 'generic', '--path', data('plain-list.json')]);
    expect(viaEnv.store).toBe(home);
    expect(engramFiles(home)).toHaveLength(3);
  });

  it('generic JSONL: names bad rows on stdout and stderr, exits 1, still imports the rest; a re-import skips', async () => {
    const store = tempStore();
    const r = await run(store, ['import', '--from', 'generic', '--path', data('notes.jsonl')]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ total: 11, imported: 5, skipped: 1, conflict: 0, error: 5 });
    expect(report.rows.filter((x: Json) => x.status === 'error').map((x: Json) => x.at)).toEqual([
      'line 7 (id n-6)',
      'line 8 (id n-7)',
      'line 9 (id n-8)',
      'line 10',
      'line 11 (id n-10)',
    ]);
    const stderr = r.stderr.split('\n').filter(Boolean);
    expect(stderr[0]).toMatch(/^svc: warning: line 12 \(id n-11\): content looks like it holds a secret/);
    const error = JSON.parse(stderr.at(-1)!).error;
    expect(error).toMatchObject({ kind: 'invalid', message: '5 of 11 rows could not be imported' });
    expect(error.details[0]).toBe('line 7 (id n-6): statement: missing or empty');
    expect(engramFiles(store)).toHaveLength(5);
    expect((await list(store)).find((e: Json) => e.statement.startsWith('The payment webhook secret'))).toMatchObject({ scope: 'local' });

    const again = JSON.parse((await run(store, ['import', '--from', 'generic', '--path', data('notes.jsonl')])).stdout);
    expect(again).toMatchObject({ imported: 0, skipped: 6, error: 5 });
    expect(engramFiles(store)).toHaveLength(5);
  });

  it('generic CSV with --mapping; the text report names rows by line', async () => {
    const store = tempStore();
    const r = await run(store, [
      'import',
      '--from',
      'generic',
      '--path',
      data('notes.csv'),
      '--mapping',
      data('notes-mapping.json'),
      '--no-json',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`Imported 4 of 7 rows from ${data('notes.csv')} (generic, csv) into ${store}.`);
    expect(r.stdout).toMatch(/imported 4 · skipped 0 · conflict 0 · error 3/);
    expect(r.stdout).toContain(
      'Errors:\n  line 7: has 6 fields, the header has 5\n  line 8: statement: missing or empty\n  line 9: learned_at: "not-a-date" is not a date',
    );
    expect(r.stderr).toMatch(/^svc: 3 of 7 rows could not be imported: line 7: has 6 fields/);
    const perf = (await list(store)).find((e: Json) => e.statement.startsWith('Keep API responses'));
    expect(perf).toMatchObject({ type: 'behavioral', domain: 'perf.api', tags: ['perf', 'api'] });
  });

  it('--dry-run writes nothing (not even a new store) and reports what a real run then does', async () => {
    const store = tempStore();
    const dry = await run(store, ['import', '--from', 'generic', '--path', data('notes.jsonl'), '--dry-run']);
    expect(dry.code).toBe(1);
    expect(existsSync(store)).toBe(false);
    const text = await run(store, ['import', '--from', 'generic', '--path', data('notes.jsonl'), '--dry-run', '--no-json']);
    expect(text.stdout).toMatch(/^Dry run: would import 5 of 11 rows .*; nothing was written\./);
    const real = await run(store, ['import', '--from', 'generic', '--path', data('notes.jsonl')]);
    const strip = (s: string) => {
      const r = JSON.parse(s);
      // A dry run allocates no ids: engrams it would create are not named.
      const rows = r.rows.map((x: Json) => (x.reason.startsWith('duplicate of an earlier row') ? { ...x, engram: null } : x));
      return { ...r, rows, dry_run: null, elapsed_ms: null, demoted: r.demoted.map((d: Json) => ({ ...d, engram: null })) };
    };
    expect(strip(dry.stdout)).toEqual(strip(real.stdout));
    expect(engramFiles(store)).toHaveLength(5);
  });

  it('mem0-json and mem0-sqlite', async () => {
    const store = tempStore();
    const json = await run(store, ['import', '--from', 'mem0-json', '--path', data('mem0-export.json'), '--scope', 'user:alice']);
    expect(json.code).toBe(1); // one memory has no text
    expect(JSON.parse(json.stdout)).toMatchObject({ from: 'mem0-json', imported: 3, skipped: 1, error: 1 });

    const dir = mkdtempSync(join(tmpdir(), 'svc-mem0-'));
    const dbPath = join(dir, 'history.db');
    const db = new Database(dbPath);
    db.exec(readFileSync(data('mem0-history.sql'), 'utf8'));
    db.close();
    const sqlite = await run(store, ['import', '--from', 'mem0-sqlite', '--path', dbPath, '--scope', 'user:alice']);
    expect(JSON.parse(sqlite.stdout)).toMatchObject({ from: 'mem0-sqlite', total: 5, imported: 3, skipped: 1, error: 1 });
    const engrams = await list(store);
    expect(engrams).toHaveLength(6);
    expect(engrams.find((e: Json) => e.statement === 'Prefers code reviews under 400 lines')).toMatchObject({ scope: 'user:alice' });
    // user: scopes are private, so the secret stays where it was put.
    expect(engrams.find((e: Json) => e.statement.startsWith('Deploy token'))).toMatchObject({ scope: 'user:alice' });
  });

  it('a clean import exits 0 and prints no error', async () => {
    const store = tempStore();
    const r = await run(store, [
      'import',
      '--from',
      'generic',
      '--path',
      data('tasks-export.json'),
      '--mapping',
      data('tasks-mapping.json'),
      '--dry-run',
    ]);
    expect(r.code).toBe(1);
    const clean = await run(store, ['import', '--from', 'generic', '--path', data('plain-list.json'), '--quiet', '--no-json']);
    expect(clean.code).toBe(0);
    expect(clean.stderr).toBe('');
    expect(clean.stdout).toBe('3 imported, 0 skipped, 0 conflict, 0 error\n');
  });

  it('malformed files and bad usage fail with one clean line and write nothing', async () => {
    const store = tempStore();
    const dir = mkdtempSync(join(tmpdir(), 'svc-bad-'));
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '[{"statement": ');
    expect((await fails(store, ['import', '--from', 'generic', '--path', broken])).message).toMatch(/^broken\.json is not valid JSON: /);
    expect((await fails(store, ['import', '--from', 'mem0-sqlite', '--path', data('notes.jsonl')])).message).toMatch(
      /notes\.jsonl is not a SQLite database/,
    );
    expect((await fails(store, ['import', '--from', 'mem0-json', '--path', data('tasks-export.json')])).message).toMatch(
      /is not a mem0 export/,
    );
    expect((await fails(store, ['import', '--from', 'generic', '--path', join(dir, 'nope.csv')])).message).toMatch(/does not exist$/);
    expect((await fails(store, ['import', '--from', 'generic', '--path', data('notes.csv')])).message).toMatch(
      /no statement column in the header/,
    );
    const badMapping = await fails(store, ['import', '--from', 'generic', '--path', data('notes.csv'), '--mapping', data('notes.jsonl')]);
    expect(badMapping.message).toMatch(/the mapping file .*notes\.jsonl is not valid JSON/);
    expect((await fails(store, ['import', '--path', data('notes.jsonl')])).message).toBe(
      '--from is required: one of generic, mem0-json, mem0-sqlite',
    );
    expect((await fails(store, ['import', '--from', 'letta', '--path', data('notes.jsonl')])).message).toBe(
      '--from must be one of generic, mem0-json, mem0-sqlite (got "letta")',
    );
    expect((await fails(store, ['import', '--from', 'generic'])).message).toMatch(/^--path is required: the file to import/);
    expect(
      (await fails(store, ['import', '--from', 'mem0-json', '--path', data('mem0-export.json'), '--mapping', data('notes-mapping.json')]))
        .message,
    ).toBe('--mapping applies only to --from generic (not mem0-json)');
    const text = await run(store, ['import', '--from', 'generic', '--path', broken, '--no-json']);
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^svc: broken\.json is not valid JSON: [^\n]+\n$/);
    expect(engramFiles(store)).toHaveLength(0);
  });
});
