import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { moduleByModule, projectDir, svc } from '../../engine/test/support/run-svc.js';

// `svc hook-inject` runs before every prompt: what it loads is its start-up time. A module
// loader hook records every file the real process loads, and the hot path must keep to the
// store, the index and recall: no argument parser, YAML, validator, MCP, TUI, hub or packs.
// The command runs module by module here (moduleByModule), not from its bundle.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function loadsOf(args: string[], input: string, cwd: string, env: NodeJS.ProcessEnv): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'svc-loads-'));
  const log = join(dir, 'loads.txt');
  writeFileSync(log, '');
  const hooks = join(dir, 'record.mjs');
  writeFileSync(
    hooks,
    `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(`import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { if (url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); }`)}));\n`,
  );
  const run = spawnSync(process.execPath, ['--import', hooks, ...moduleByModule(args)], {
    cwd,
    env: { ...process.env, ...env },
    input,
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((u) => fileURLToPath(u).slice(ROOT.length));
}

describe('what the prompt-time hook loads', () => {
  it('hook-inject loads the store, the index and recall, and nothing a prompt does not need', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-hot-home-'));
    const project = projectDir();
    const env = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' };
    expect((await svc(['init', '--no-desktop'], { cwd: project, env })).code).toBe(0);
    expect((await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: project, env })).code).toBe(0);

    const input = JSON.stringify({ hook_event_name: 'UserPromptSubmit', prompt: 'when do deploys happen', session_id: 's1', cwd: project });
    const loads = loadsOf(['hook-inject'], input, project, env);
    expect(
      loads.some((f) => f.endsWith('engine/ops/inject.js')),
      'the hook did not reach injection',
    ).toBe(true);
    const packages = [
      ...new Set(
        loads
          .filter((f) => f.startsWith('node_modules/'))
          .map((f) =>
            f
              .split('/')
              .slice(1, f.split('/')[1]!.startsWith('@') ? 3 : 2)
              .join('/'),
          ),
      ),
    ];
    expect(packages).toEqual(['better-sqlite3']);
    const heavy = loads.filter((f) =>
      /^dist\/(engine\/(mcp|packs|importers|remote\/team-writes)|tui\/(browse|commands)|hub)\/|generated-validator/.test(f),
    );
    expect(heavy).toEqual([]);
  }, 60_000);

  it('svc learn loads no package but SQLite: flags by node:util, YAML by svc-yaml', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-hot-home-'));
    const project = projectDir();
    const env = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' };
    expect((await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: project, env })).code).toBe(0);

    const loads = loadsOf(['learn', 'Release notes are written in the pull request', '--tags', 'release'], '', project, env);
    expect(
      loads.some((f) => f.endsWith('engine/ops/learn.js')),
      'learn did not run',
    ).toBe(true);
    const packages = [...new Set(loads.filter((f) => f.startsWith('node_modules/')).map((f) => f.split('/')[1]))];
    expect(packages).toEqual(['better-sqlite3']);
  }, 60_000);
});
