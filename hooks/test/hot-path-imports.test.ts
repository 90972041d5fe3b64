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
// Nor node:crypto, 2-10 ms to load: hashes come from @noble/hashes (engine/text-hash.ts).
// The command runs module by module here (moduleByModule), not from its bundle.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The files of ours and of packages a command loads, and the Node built-ins it loads. */
function loadsOf(args: string[], input: string, cwd: string, env: NodeJS.ProcessEnv): { files: string[]; builtins: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-loads-'));
  const log = join(dir, 'loads.txt');
  writeFileSync(log, '');
  const builtinLog = join(dir, 'builtins.txt');
  const builtins = join(dir, 'builtins.cjs');
  writeFileSync(
    builtins,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(builtinLog)}, process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)).join('\\n')));\n`,
  );
  const hooks = join(dir, 'record.mjs');
  writeFileSync(
    hooks,
    `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(`import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { if (url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); }`)}));\n`,
  );
  const run = spawnSync(process.execPath, ['--require', builtins, '--import', hooks, ...moduleByModule(args)], {
    cwd,
    env: { ...process.env, ...env },
    input,
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  return {
    files: readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((u) => fileURLToPath(u).slice(ROOT.length)),
    builtins: readFileSync(builtinLog, 'utf8').split('\n'),
  };
}

/** The packages among the files loaded, `@scope/name` for scoped ones, sorted. */
const packagesOf = (files: string[]): string[] =>
  [
    ...new Set(
      files
        .filter((f) => f.startsWith('node_modules/'))
        .map((f) =>
          f
            .split('/')
            .slice(1, f.split('/')[1]!.startsWith('@') ? 3 : 2)
            .join('/'),
        ),
    ),
  ].sort();

describe('what the prompt-time hook loads', () => {
  it('hook-inject loads the store, the index and recall, and nothing a prompt does not need', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-hot-home-'));
    const project = projectDir();
    const env = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' };
    expect((await svc(['init', '--no-desktop'], { cwd: project, env })).code).toBe(0);
    expect((await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: project, env })).code).toBe(0);

    const input = JSON.stringify({ hook_event_name: 'UserPromptSubmit', prompt: 'when do deploys happen', session_id: 's1', cwd: project });
    const { files: loads, builtins } = loadsOf(['hook-inject'], input, project, env);
    expect(
      loads.some((f) => f.endsWith('engine/ops/inject.js')),
      'the hook did not reach injection',
    ).toBe(true);
    expect(packagesOf(loads)).toEqual(['@noble/hashes', 'better-sqlite3']);
    expect(builtins).not.toContain('crypto');
    const heavy = loads.filter((f) =>
      /^dist\/(engine\/(mcp|packs|importers|remote\/team-writes)|tui\/(browse|commands)|hub)\/|generated-validator/.test(f),
    );
    expect(heavy).toEqual([]);
  }, 60_000);

  it('hook-inject of a store with another registered reads the registry without the yaml package', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-hot-home-'));
    const project = projectDir();
    const primary = join(home, 'primary');
    const team = join(home, 'team');
    const env = { HOME: home, SVC_PATH: primary, SVC_EMBED: 'off' };
    expect((await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: project, env })).code).toBe(0);
    expect((await svc(['learn', 'Deploy freezes start on Fridays'], { cwd: project, env: { ...env, SVC_PATH: team } })).code).toBe(0);
    expect((await svc(['stores', 'add', team, 'group:platform', '--shared'], { cwd: project, env })).code).toBe(0);
    expect(readFileSync(join(primary, 'local.yaml'), 'utf8')).toMatch(/^#.*\n[\s\S]*stores:/);

    const input = JSON.stringify({ hook_event_name: 'UserPromptSubmit', prompt: 'when do deploys happen', session_id: 's1', cwd: project });
    const { files } = loadsOf(['hook-inject'], input, project, env);
    expect(files.some((f) => f.endsWith('engine/store/multi-store.js'))).toBe(true);
    expect(packagesOf(files)).toEqual(['@noble/hashes', 'better-sqlite3']);
  }, 60_000);

  it('svc learn loads no package but SQLite and its hashes: flags by node:util, YAML by svc-yaml, no node:crypto', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-hot-home-'));
    const project = projectDir();
    const env = { HOME: home, SVC_PATH: '', SVC_EMBED: 'off' };
    expect((await svc(['learn', 'Deploys to production happen only on Tuesdays'], { cwd: project, env })).code).toBe(0);

    // A configured project: its .svc.yaml is read by svc's own YAML reader, not the package.
    writeFileSync(join(project, '.svc.yaml'), 'scope: project:hot-path\ndomain: deploys\n');
    const { files: loads, builtins } = loadsOf(
      ['learn', 'Release notes are written in the pull request', '--tags', 'release'],
      '',
      project,
      env,
    );
    expect(
      loads.some((f) => f.endsWith('engine/ops/learn.js')),
      'learn did not run',
    ).toBe(true);
    expect(packagesOf(loads)).toEqual(['@noble/hashes', 'better-sqlite3']);
    expect(builtins).not.toContain('crypto');
  }, 60_000);
});
