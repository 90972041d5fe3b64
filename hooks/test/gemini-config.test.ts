import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostSandbox, snapshot, write } from './support/host-sandbox.js';
import { parse as parseJsonc } from 'jsonc-parser';
import { geminiSettingsText } from '../install/gemini-install.js';

// `svc init --gemini` and `svc doctor` on Gemini CLI's settings, as real processes in a temporary
// HOME and project: what is written, what is kept, and what doctor says when a part is missing.

interface Check {
  check: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  fix?: string;
}

function sandbox() {
  const s = hostSandbox({ label: 'gemini-config' });
  const { home, project } = s;
  return {
    ...s,
    settings: join(project, '.gemini', 'settings.json'),
    userSettings: join(home, '.gemini', 'settings.json'),
    init: (...args: string[]) =>
      s.json<{ files: Array<{ path: string; status: string }>; notes: string[]; skipped: Array<{ what: string; reason: string }> }>([
        'init',
        '--no-desktop',
        ...args,
      ]),
    doctor: async () => (await s.json<Check[]>(['doctor', '--no-handshake'])).data,
    /** What a person does in Gemini CLI's "Trust folder" dialog. */
    trustFolder: () => write(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' })),
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Settings = Record<string, any>;
const readJsonc = (path: string): Settings => parseJsonc(readFileSync(path, 'utf8')) as Settings;
const byName = (checks: Check[], name: string): Check => {
  const c = checks.find((x) => x.check === name);
  if (!c) throw new Error(`no check "${name}" in ${JSON.stringify(checks.map((x) => x.check))}`);
  return c;
};

const EXPECTED = {
  SessionStart: [
    ['hook-session-guard', 15000],
    ['hook-session-remind', 15000],
    ['hook-session-mark', 15000],
  ],
  BeforeAgent: [
    ['hook-inject', 10000],
    ['hook-correction-detect', 15000],
  ],
  AfterTool: [
    ['hook-observe', 15000],
    ['hook-revert-detect', 15000],
  ],
  AfterAgent: [['hook-learn-check', 30000]],
  SessionEnd: [['hook-session-mark', 15000]],
};

/** svc's hooks in a settings object: event -> [hook, timeout] (commands checked to name the host). */
function svcHooks(settings: Settings): Record<string, Array<[string, number]>> {
  const out: Record<string, Array<[string, number]>> = {};
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    for (const group of groups as Settings[]) {
      for (const h of group.hooks) {
        const m = /^"\$HOME\/\.svc\/bin\/svc-hook" (hook-[a-z-]+) --host gemini$/.exec(h.command);
        if (m) (out[event] ??= []).push([m[1]!, h.timeout]);
      }
    }
  }
  return out;
}

describe('svc init --gemini', () => {
  it('writes the hooks (timeouts in ms) and the trusted MCP server to .gemini/settings.json, says the folder needs trust, and is idempotent', async () => {
    const s = sandbox();
    const { run, data } = await s.init('--gemini');
    expect(run.code, run.stderr).toBe(0);
    const settings = readJsonc(s.settings);
    expect(svcHooks(settings)).toEqual(EXPECTED);
    expect(settings.hooks.AfterTool[0].matcher).toBe('*');
    expect(settings.mcpServers.svc).toEqual({ command: '$HOME/.svc/bin/svc-hook', args: ['mcp'], trust: true });
    expect(readFileSync(s.settings, 'utf8')).not.toContain(s.home); // committable: no machine paths
    expect(data.notes.join('\n')).toMatch(
      /Gemini CLI reads .*settings\.json only in a folder you trust.*svc does not trust folders for you/,
    );
    expect(existsSync(join(s.home, '.gemini', 'trustedFolders.json'))).toBe(false);

    const again = await s.init('--gemini');
    expect(
      again.data.files.every((f) => f.status === 'unchanged'),
      JSON.stringify(again.data.files),
    ).toBe(true);

    // Once the person trusted the folder, the note is gone.
    s.trustFolder();
    expect((await s.init('--gemini')).data.notes.join('\n')).not.toMatch(/folder you trust/);
  });

  it('runs when .gemini/ exists, and --no-gemini skips it', async () => {
    const s = sandbox();
    mkdirSync(join(s.project, '.gemini'));
    const skipped = await s.init('--no-gemini');
    expect(existsSync(s.settings)).toBe(false);
    expect(skipped.data.skipped).toContainEqual({ what: 'Gemini CLI', reason: '--no-gemini' });
    await s.init();
    expect(svcHooks(readJsonc(s.settings))).toEqual(EXPECTED);
  });

  it("keeps the person's comments, hooks, servers and keys, and replaces only svc's own entries", async () => {
    const s = sandbox();
    const mine = { type: 'command', command: './scripts/lint-prompt.sh', timeout: 5000 };
    write(
      s.settings,
      [
        '{',
        '  // the team model',
        '  "model": { "name": "gemini-2.5-pro" },',
        '  /* hooks the team keeps */',
        '  "hooks": {',
        `    "BeforeAgent": [{ "hooks": [${JSON.stringify(mine)}, { "type": "command", "command": "svc hook-inject", "timeout": 60 }] }]`,
        '  },',
        '  "mcpServers": { "github": { "command": "gh-mcp" }, "svc": { "command": "node", "args": ["/old/dist/bin/svc.js", "mcp"] } }',
        '  // end',
        '}',
        '',
      ].join('\n'),
    );
    const { run } = await s.init('--gemini');
    expect(run.code, run.stderr).toBe(0);
    const text = readFileSync(s.settings, 'utf8');
    for (const comment of ['// the team model', '/* hooks the team keeps */', '// end']) expect(text).toContain(comment);
    const settings = readJsonc(s.settings);
    expect(settings.model).toEqual({ name: 'gemini-2.5-pro' });
    expect(settings.mcpServers.github).toEqual({ command: 'gh-mcp' });
    expect(settings.mcpServers.svc).toEqual({ command: '$HOME/.svc/bin/svc-hook', args: ['mcp'], trust: true });
    expect(settings.hooks.BeforeAgent[0].hooks).toEqual([mine]); // the old svc command is gone, the person's stays
    expect(svcHooks(settings)).toEqual(EXPECTED);
    expect((await s.init('--gemini')).data.files.find((f) => f.path === s.settings)?.status).toBe('unchanged');
  });

  it('--global writes ~/.gemini/settings.json and nothing in the project; --no-approve leaves the trust to Gemini CLI', async () => {
    const s = sandbox();
    write(s.userSettings, JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }));
    const { run, data } = await s.init('--global', '--gemini');
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(join(s.project, '.gemini'))).toBe(false);
    const user = readJsonc(s.userSettings);
    expect(user.security).toEqual({ auth: { selectedType: 'gemini-api-key' } });
    expect(svcHooks(user)).toEqual(EXPECTED);
    expect(data.notes.join('\n')).not.toMatch(/folder you trust/);

    // Installed in the project too: Gemini CLI would run each hook twice, and both commands say so.
    await s.init('--gemini');
    const both = await s.init('--global', '--gemini');
    expect(both.data.notes.join('\n')).toMatch(/svc hooks are also in .*\.gemini\/settings\.json: Gemini CLI would run each twice/);
    s.trustFolder();
    expect(byName(await s.doctor(), 'gemini.hooks')).toMatchObject({ status: 'warn', message: expect.stringMatching(/runs each twice/) });

    const manual = await s.init('--global', '--gemini', '--no-approve');
    expect(readJsonc(s.userSettings).mcpServers.svc).toEqual({ command: '$HOME/.svc/bin/svc-hook', args: ['mcp'] });
    expect(manual.data.notes.join('\n')).toMatch(/set "trust": true on mcpServers\.svc/);
  });

  it('a malformed settings file is a clear error: exit 1, naming it, and nothing written', async () => {
    const s = sandbox();
    const broken = '{\n  "hooks": {\n';
    write(s.settings, broken);
    const before = snapshot(s.home, s.project);
    const r = await s.run(['init', '--no-desktop', '--gemini', '--no-json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(s.settings);
    expect(r.stderr).toMatch(/not valid JSON/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(snapshot(s.home, s.project)).toEqual(before);
  });
});

describe('svc doctor for Gemini CLI', () => {
  it('is ok after init in a trusted folder, with a live handshake through the entry Gemini CLI starts', async () => {
    const s = sandbox();
    s.trustFolder();
    expect((await s.init('--gemini')).run.code).toBe(0);
    const { run, data } = await (async () => {
      const r = await s.run(['doctor', '--json']);
      return { run: r, data: JSON.parse(r.stdout) as Check[] };
    })();
    const gemini = data.filter((c) => c.check.startsWith('gemini.'));
    expect(gemini.map((c) => [c.check, c.status])).toEqual([
      ['gemini.hooks', 'ok'],
      ['gemini.mcp', 'ok'],
      ['gemini.approval', 'ok'],
      ['gemini.folder', 'ok'],
      ['gemini.handshake', 'ok'],
    ]);
    expect(byName(data, 'gemini.handshake').message).toMatch(/39 tools/);
    expect(run.stdout).toBeTruthy();
  }, 60_000);

  it('names the fix when a hook, the approval, the folder trust or the server is missing', async () => {
    const s = sandbox();
    expect((await s.init('--gemini')).run.code).toBe(0);
    let checks = await s.doctor();
    expect(byName(checks, 'gemini.folder')).toMatchObject({ status: 'warn', fix: expect.stringMatching(/choose "Trust folder"/) });

    s.trustFolder();
    const settings = readJsonc(s.settings);
    delete settings.hooks.AfterAgent;
    delete settings.mcpServers.svc.trust;
    write(s.settings, JSON.stringify(settings, null, 2));
    checks = await s.doctor();
    expect(byName(checks, 'gemini.hooks')).toMatchObject({ status: 'fail', fix: 'svc init --gemini' });
    expect(byName(checks, 'gemini.hooks').message).toContain('AfterAgent -> hook-learn-check');
    expect(byName(checks, 'gemini.approval')).toMatchObject({ status: 'warn', fix: expect.stringMatching(/^svc init --gemini/) });
    expect(byName(checks, 'gemini.folder').status).toBe('ok');

    delete settings.mcpServers.svc;
    write(s.settings, JSON.stringify(settings, null, 2));
    expect(byName(await s.doctor(), 'gemini.mcp')).toMatchObject({ status: 'fail', fix: 'svc init --gemini' });

    await s.init('--gemini');
    write(s.userSettings, JSON.stringify({ hooksConfig: { enabled: false } }));
    expect(byName(await s.doctor(), 'gemini.hooks')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/hooksConfig\.enabled is false/),
    });
  }, 60_000);
});

describe('settings with comments, edited in place', () => {
  it.each([
    ['an empty object with a comment', '{ // nothing yet\n}\n', ['// nothing yet']],
    ['comment-like text in strings', '{"a": "x // not a comment", /* c */ "b": [1, {"c": "}"}]}\n', ['/* c */', 'x // not a comment']],
    [
      "comments in the person's own events and servers",
      '// top\n{\n  "hooks": {\n    // ours\n    "BeforeTool": [{ "hooks": [{ "type": "command", "command": "./guard.sh" }] }]\n  },\n  "mcpServers": { /* gh */ "github": { "command": "gh-mcp" } }\n}\n',
      ['// top', '// ours', '/* gh */'],
    ],
  ])("sets svc's hooks and server in %s, keeping the comments, idempotently", (_what, text, comments) => {
    const path = join(mkdtempSync(join(tmpdir(), 'svc-gemini-jsonc-')), 'settings.json');
    writeFileSync(path, text);
    const out = geminiSettingsText(path, true);
    for (const c of comments) expect(out).toContain(c);
    const data = parseJsonc(out) as Settings;
    expect(svcHooks(data)).toEqual(EXPECTED);
    expect(data.mcpServers.svc).toEqual({ command: '$HOME/.svc/bin/svc-hook', args: ['mcp'], trust: true });
    writeFileSync(path, out);
    expect(geminiSettingsText(path, true)).toBe(out);
  });
});
