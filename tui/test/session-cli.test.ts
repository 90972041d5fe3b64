import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { okIn as ok, projectDir, runIn as run, tempStore, type RunOptions } from '../../engine/test/support/run-svc.js';

// `svc session start|end|show` end to end, over the engine's sessions (engine/ops/sessions.ts).

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const SES_ID = /^SES-[A-Z][A-Z0-9]+-\d{4}-\d{4}-[0-9a-f]{8}$/;

async function fails(store: string, args: string[], opts: RunOptions = {}): Promise<{ kind: string; message: string }> {
  const r = await run(store, args, opts);
  expect(r.code, `svc ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(1);
  const lines = r.stderr.split('\n').filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  return (JSON.parse(lines[0]!) as { error: { kind: string; message: string } }).error;
}

const sessionFile = (store: string, id: string): Json => parse(readFileSync(join(store, 'sessions', `${id}.yaml`), 'utf8'));

describe.concurrent('svc session', () => {
  it('start prints the session id, the injection for the task and the writable scopes', async () => {
    const store = tempStore('session');
    const pnpm = (await ok(store, ['learn', 'Always use pnpm to install dependencies'])).id;
    const never = (await ok(store, ['learn', 'Never install dependencies globally'])).id;

    const r = await ok(store, [
      'session',
      'start',
      'install',
      'the',
      'dependencies',
      '--agent',
      'claude-code',
      '--scope',
      'project:shop',
      '--domain',
      'build',
      '--fast',
    ]);
    expect(r.session).toMatchObject({
      status: 'open',
      task: 'install the dependencies',
      agent: 'claude-code',
      scope: 'project:shop',
      domain: 'build',
    });
    expect(r.session.id).toMatch(SES_ID);
    expect(r.session.engram_ids.sort()).toEqual([pnpm, never].sort());
    expect(r.injection.blocks.directives.map((e: Json) => e.id)).toEqual([pnpm]);
    expect(r.injection.blocks.constraints.map((e: Json) => e.id)).toEqual([never]);
    expect(r.injection.text).toContain('## DIRECTIVES');
    expect(r.writable_scopes).toEqual(['project:shop', 'global', 'local']);
    expect(sessionFile(store, r.session.id)).toMatchObject({ id: r.session.id, status: 'open', task: 'install the dependencies' });

    const text = await run(store, ['session', 'start', 'install dependencies', '--fast', '--no-json']);
    expect(text.code).toBe(0);
    const id = /^Session (SES-\S+) started for: install dependencies$/m.exec(text.stdout)?.[1];
    expect(id).toMatch(SES_ID);
    expect(text.stdout).toContain(`- Always use pnpm to install dependencies (${pnpm})`);
    expect(text.stdout).toContain('## CONSTRAINTS');
    expect(text.stdout).toContain('Writable scopes: global, local');
    expect(text.stdout).toContain(`svc session end ${id}`);

    const quiet = await run(store, ['session', 'start', '--fast', '--no-json', '--quiet']);
    expect(quiet.stdout.trim()).toMatch(SES_ID);

    // Budget is honoured and validated.
    const small = await ok(store, ['session', 'start', 'install dependencies', '--budget', '100', '--fast']);
    expect(small.injection.budget).toBe(100);
    expect((await fails(store, ['session', 'start', '--budget', '0'])).message).toMatch(/--budget/);
    expect((await fails(store, ['session', 'start', '--scope', 'project:'])).message).toMatch(/scope/);
  });

  it("takes scope and domain from the project's .svc.yaml by default", async () => {
    const store = tempStore('session');
    const cwd = projectDir('scope: project:web\ndomain: frontend\n');
    const r = await ok(store, ['session', 'start', 'style the header', '--fast'], { cwd });
    expect(r.session).toMatchObject({ scope: 'project:web', domain: 'frontend', agent: 'cli' });
    expect(r.writable_scopes[0]).toBe('project:web');
  });

  it('end learns each --learn in the session scope, records the summary and suggests learnings; show prints it', async () => {
    const store = tempStore('session');
    const start = await ok(store, ['session', 'start', 'fix the flaky login test', '--scope', 'project:auth', '--fast']);
    const id = start.session.id;

    const end = await ok(store, [
      'session',
      'end',
      id,
      '--summary',
      'Fixed the flaky login test. You should always wait for the token refresh before asserting.',
      '--learn',
      'Wait for the token refresh before asserting in login tests',
      '--learn',
      'The login test fixture lives in the auth package',
    ]);
    expect(end.session).toMatchObject({ id, status: 'ended', summary: expect.stringContaining('Fixed the flaky login test') });
    expect(end.learned).toHaveLength(2);
    for (const l of end.learned) expect(l).toMatchObject({ action: 'created', scope: 'project:auth', id: expect.stringMatching(/^ENG-/) });
    expect(end.session.engram_ids).toEqual(expect.arrayContaining(end.learned.map((l: Json) => l.id)));
    expect(end.suggested).toEqual(['You should always wait for the token refresh before asserting.']);
    const engram = parse(readFileSync(join(store, 'engrams', `${end.learned[0].id}.yaml`), 'utf8'));
    expect(engram.sources[0].session_id).toBe(id);
    expect(sessionFile(store, id).status).toBe('ended');

    const shown = await ok(store, ['session', 'show', id]);
    expect(shown.session).toMatchObject({ id, status: 'ended', task: 'fix the flaky login test', scope: 'project:auth' });
    expect(shown.episodes.map((e: Json) => e.summary)).toEqual([
      'Session started: fix the flaky login test',
      expect.stringMatching(/^Session ended: Fixed the flaky login test/),
    ]);

    const text = await run(store, ['session', 'show', id, '--no-json']);
    expect(text.stdout).toContain(`${id}  ended`);
    expect(text.stdout).toContain('  task: fix the flaky login test');
    expect(text.stdout).toContain('  summary: Fixed the flaky login test.');

    // Ending twice is refused; the session stays as it was.
    expect((await fails(store, ['session', 'end', id])).kind).toBe('conflict');
  });

  it('end in text mode lists what was learned and the suggestions as commands', async () => {
    const store = tempStore('session');
    const id = (await ok(store, ['session', 'start', '--fast'])).session.id;
    const text = await run(store, [
      'session',
      'end',
      id,
      '--no-json',
      '--summary',
      "Don't mock the database in integration tests.",
      '--learn',
      'Run integration tests against a real database',
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^Session ${id} ended: Don't mock the database in integration tests\\.`));
    expect(text.stdout).toMatch(/Learned:\n {2}ENG-\S+ \(created, scope global\): Run integration tests against a real database/);
    expect(text.stdout).toContain(`Worth learning? (not saved yet)\n  svc learn "Don't mock the database in integration tests."`);
  });

  it('refuses unknown sessions, subcommands and misplaced flags with one line, exit 1', async () => {
    const store = tempStore('session');
    expect((await fails(store, ['session', 'show', 'SES-NOPE-2026-0101-deadbeef'])).kind).toBe('not_found');
    expect((await fails(store, ['session', 'end', 'SES-NOPE-2026-0101-deadbeef'])).kind).toBe('not_found');
    expect((await fails(store, ['session', 'show', '../etc/passwd'])).message).toMatch(/not a session id/);
    expect((await fails(store, ['session'])).message).toMatch(/start\|end\|show/);
    expect((await fails(store, ['session', 'pause'])).message).toMatch(/unknown session subcommand "pause"/);
    expect((await fails(store, ['session', 'end'])).message).toMatch(/session id is missing/);
    expect((await fails(store, ['session', 'show', 'SES-X-1', '--summary', 'x'])).message).toMatch(
      /--summary does not apply to "session show"/,
    );
    expect((await fails(store, ['session', 'start', '--learn', 'x'])).message).toMatch(/--learn does not apply to "session start"/);
    expect((await fails(store, ['session', 'end', 'SES-X-1', 'extra words'])).message).toMatch(/--summary/);

    const help = await run(store, ['session', '--help']);
    expect(help.code).toBe(0);
    for (const flag of ['--agent', '--scope', '--domain', '--budget', '--summary', '--learn', '--fast'])
      expect(help.stdout).toContain(flag);
  });
});
