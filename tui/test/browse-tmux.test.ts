import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, svcJson, tempStore } from '../../engine/test/support/run-svc.js';

// The browser in a real terminal: tmux gives `svc` (no arguments) an 80×24 pseudo-terminal,
// keys go in with send-keys, and capture-pane shows what a person would see. Runs the
// compiled CLI (dist/bin/svc.js): build first.

const hasTmux = spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;
const SOCKET = `svc-browse-test-${process.pid}`;
const SESSION = 'browse';

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
}

const screen = (): string => tmux('capture-pane', '-p', '-t', SESSION);
const keys = (...k: string[]) => tmux('send-keys', '-t', SESSION, ...k);
const typeText = (text: string) => tmux('send-keys', '-t', SESSION, '-l', text);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

async function waitScreen(pred: (s: string) => boolean, what: string, timeout = 15_000): Promise<string> {
  const end = Date.now() + timeout;
  let s = '';
  for (;;) {
    s = screen();
    if (pred(s)) return s;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; the screen:\n${s}`);
    await sleep(50);
  }
}

const SEED: Array<[string, string[]]> = [
  ['Use pgbouncer to pool Postgres connections', ['--domain', 'db.postgres', '--type', 'procedural']],
  ['Never run Postgres migrations on a Friday', ['--domain', 'db.postgres']],
  ['Terraform state lives in a versioned S3 bucket', ['--domain', 'infra.terraform', '--type', 'architectural']],
  ['A tenant is one paying organization', ['--domain', 'glossary', '--type', 'terminological']],
  ['Prefer structured logs over printf debugging', ['--domain', 'observability']],
];

describe.skipIf(!hasTmux)(`svc browse in a real terminal (tmux, 80×24)${hasTmux ? '' : ': skipped, tmux is not installed'}`, () => {
  let store: string;
  let marks: string;
  const ids: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npx tsc -p tsconfig.json)`);
    store = tempStore('browse-tmux');
    marks = mkdtempSync(join(tmpdir(), 'svc-browse-tmux-'));
    const cwd = join(marks, 'project');
    mkdirSync(join(cwd, '.git'), { recursive: true }); // no .svc.yaml above it routes scopes
    for (const [statement, flags] of SEED) {
      const { run, data } = await svcJson(['learn', statement, ...flags], { store, cwd });
      expect(run.code, run.stderr).toBe(0);
      ids.push(data.id ?? data.engram?.id);
    }
    expect(
      ids.every((id) => /^ENG-/.test(id)),
      JSON.stringify(ids),
    ).toBe(true);
  });

  afterAll(() => {
    if (!hasTmux) return;
    spawnSync('tmux', ['-L', SOCKET, 'kill-session', '-t', SESSION], { stdio: 'ignore' });
    spawnSync('tmux', ['-L', SOCKET, 'kill-server'], { stdio: 'ignore' });
  });

  it('bare svc opens the browser; keys navigate and search; q quits and restores the terminal', async () => {
    // After svc exits the pane records its exit code and the terminal mode, then idles.
    const command = [
      `cd ${sh(join(marks, 'project'))}`,
      `env -u CI -u CONTINUOUS_INTEGRATION SVC_PATH=${sh(store)} ${sh(process.execPath)} ${sh(CLI)}; echo "exit=$?" > ${sh(join(marks, 'exit'))}`,
      // Written aside, then renamed: the file the test waits for appears only once complete.
      `stty -a > ${sh(join(marks, 'stty.part'))} && mv ${sh(join(marks, 'stty.part'))} ${sh(join(marks, 'stty'))}`,
      'exec sleep 600',
    ].join('; ');
    tmux('new-session', '-d', '-s', SESSION, '-x', '80', '-y', '24', command);

    // The list, newest first, with the help line; nothing wraps at 80 columns.
    let s = await waitScreen((x) => x.includes('Prefer structured logs') && x.includes('5 engrams'), 'the engram list');
    let lines = s.split('\n');
    expect(lines[0]).toMatch(/^ svc \[1 Engrams\]/);
    expect(lines[2]).toContain('/ to search');
    expect(lines[3]).toMatch(/^›.*Prefer structured logs/);
    expect(lines[22]).toMatch(/\? keys\s+q quit/);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    expect(lines[21]).toContain(ids[4]);

    // j moves the selection down (the info line names the selected engram).
    keys('j');
    s = await waitScreen((x) => x.split('\n')[21]!.includes(ids[3]!), 'the second row selected');
    expect(s.split('\n')[4]).toMatch(/^›.*A tenant is one paying organization/);
    keys('Down');
    await waitScreen((x) => x.split('\n')[21]!.includes(ids[2]!), 'the third row selected (arrow)');
    keys('k');
    await waitScreen((x) => x.split('\n')[21]!.includes(ids[3]!), 'back up (k)');

    // Search as you type narrows the list.
    keys('/');
    await waitScreen((x) => x.includes('/ ▏'), 'the search prompt');
    typeText('postgres');
    s = await waitScreen((x) => /\/ postgres▏\s+2 found/.test(x), 'two Postgres hits');
    expect(s).toContain('Use pgbouncer to pool Postgres connections');
    expect(s).toContain('Never run Postgres migrations on a Friday');
    expect(s).not.toContain('Terraform');
    keys('Enter');
    await waitScreen((x) => /\/ postgres\s+2 found/.test(x), 'the search kept');

    // Details of the selected engram, then back.
    keys('Enter');
    s = await waitScreen((x) => x.includes('statement: ') && /Engram ENG-/.test(x), 'the detail view');
    expect(s).toMatch(/domain: db\.postgres/);
    lines = s.split('\n');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    keys('Escape');
    await waitScreen((x) => /\/ postgres\s+2 found/.test(x) && !x.includes('statement: '), 'back to the list');

    // q quits: the process ends with 0, the normal screen comes back, the tty is cooked again.
    keys('q');
    const end = Date.now() + 10_000;
    while (!existsSync(join(marks, 'stty')) && Date.now() < end) await sleep(50);
    expect(readFileSync(join(marks, 'exit'), 'utf8').trim()).toBe('exit=0');
    const stty = readFileSync(join(marks, 'stty'), 'utf8');
    expect(stty).toMatch(/(^|\s)icanon(\s|$)/);
    expect(stty).toMatch(/(^|\s)echo(\s|$)/);
    s = screen();
    expect(s).not.toContain('[1 Engrams]');
    expect(tmux('display-message', '-p', '-t', SESSION, '#{pane_current_command}').trim()).toBe('sleep');
  });
});
