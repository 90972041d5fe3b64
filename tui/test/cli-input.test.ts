import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, okIn as ok, runIn as run, svc, tempStore } from '../../engine/test/support/run-svc.js';

// What the command line does with what a user types by mistake: a mistyped store path, a huge
// argument or stdin, --help beside a bad flag. Real child processes of the compiled CLI.

const missing = () => join(mkdtempSync(join(tmpdir(), 'svc-missing-')), 'no-such-store');

/** stderr is one line (text mode), and stdout is empty. */
function oneLine(r: { stdout: string; stderr: string }): string {
  const lines = r.stderr.split('\n').filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stdout).toBe('');
  return lines[0]!;
}

describe('a store path that does not exist', () => {
  it.concurrent.each([
    ['list'],
    ['recall', 'pnpm'],
    ['inject', 'write a migration'],
    ['status'],
    ['timeline'],
    ['forget', 'pnpm'],
    ['conflicts'],
  ])('svc %s names it and creates nothing (SVC_PATH and --path)', async (...args) => {
    const viaEnv = missing();
    const r = await svc([...args, '--no-json'], { store: viaEnv });
    expect(r.code).toBe(1);
    expect(oneLine(r)).toBe(`svc: no store at ${viaEnv} (SVC_PATH): check the path; a command that writes, such as svc learn, creates it`);
    expect(existsSync(viaEnv)).toBe(false);

    const viaFlag = missing();
    const f = await svc(['--path', viaFlag, ...args, '--no-json']);
    expect(f.code).toBe(1);
    expect(oneLine(f)).toContain(`no store at ${viaFlag} (--path)`);
    expect(existsSync(viaFlag)).toBe(false);
  });

  it.concurrent('a command that writes creates it, and the reads then work', async () => {
    const root = missing();
    const learned = await ok(root, ['learn', 'Use pnpm, never npm']);
    expect(learned.id).toMatch(/^ENG-/);
    expect((await ok(root, ['list'])).count).toBe(1);
    const captured = missing();
    expect((await svc(['capture', 'tried the migration'], { store: captured })).code).toBe(0);
    expect(existsSync(join(captured, 'local.yaml'))).toBe(true);
  });
});

describe('long text', () => {
  it('svc learn stops reading stdin past the statement limit: one clear error, nothing learned', async () => {
    const store = tempStore();
    mkdirSync(store);
    // 64 MB that never ends on its own: the command must give up early, not read it all.
    const child = spawn(process.execPath, [CLI, 'learn', '--no-json'], {
      env: { ...process.env, SVC_PATH: store },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    let written = 0;
    child.stderr.on('data', (d) => (stderr += d));
    child.stdin.on('error', () => undefined); // EPIPE once svc closed its end
    const block = Buffer.alloc(1 << 20, 'a');
    const code = await new Promise<number | null>((resolve) => {
      child.on('close', (c) => resolve(c));
      const pump = (): void => {
        while (written < 64 && child.stdin.writable) {
          written += 1;
          if (!child.stdin.write(block)) return void child.stdin.once('drain', pump);
        }
        child.stdin.end();
      };
      pump();
    });
    expect(code).toBe(1);
    expect(stderr).toBe('svc: the statement is too long: at most 4000 characters (got more)\n');
    expect(written).toBeLessThan(64);
    expect((await ok(store, ['list'])).count).toBe(0);
  });

  it.concurrent.each([
    ['recall', 'the query', 2000],
    ['inject', 'the task', 4000],
  ])('svc %s refuses a query over the cap without echoing it, as an argument or on stdin', async (command, what, max) => {
    const store = tempStore();
    await ok(store, ['learn', 'Use pnpm, never npm']);
    const long = 'pnpm '.repeat(max / 5) + 'x';
    for (const r of [await run(store, [command, long, '--no-json']), await run(store, [command, '--no-json'], { input: long })]) {
      expect(r.code).toBe(1);
      expect(oneLine(r)).toBe(`svc: ${what} is too long: at most ${max} characters (got ${max + 1})`);
    }
    // At the cap it is served.
    expect((await run(store, [command, long.slice(0, max)])).code).toBe(0);
  });
});

describe('a reader that stops early', () => {
  it('ends the output quietly: exit 0, nothing on stderr (svc list | head)', async () => {
    const store = tempStore();
    // An answer of some 300 KB, past what a pipe holds (64 KB): svc is still writing when the reader leaves.
    const rows = join(mkdtempSync(join(tmpdir(), 'svc-pipe-')), 'rows.jsonl');
    writeFileSync(
      rows,
      Array.from({ length: 2000 }, (_, i) =>
        JSON.stringify({ statement: `Convention number ${i} of the pipe test: ${'x'.repeat(100)}` }),
      ).join('\n'),
    );
    await ok(store, ['import', '--from', 'generic', '--path', rows]);
    const child = spawn(process.execPath, [CLI, 'list', '--limit', '2000', '--no-json'], {
      env: { ...process.env, SVC_PATH: store },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });
});

describe('no terminal', () => {
  it('bare svc with /dev/null for input and output exits 0 without opening the terminal UI', async () => {
    // /dev/null is a character device, as a terminal is: it must not be taken for one.
    const child = spawn(process.execPath, [CLI], { env: { ...process.env, SVC_PATH: tempStore() }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });
});

describe('--help', () => {
  it.concurrent.each([
    [['learn', '--help', '--bogus']],
    [['learn', '--bogus', '--help']],
    [['recall', '--limit', 'x', '--help']],
    [['list', '--scope', '--help']],
  ])('wins over any mistake beside it: svc %j', async (args) => {
    const r = await svc(args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('Usage');
  });
});
