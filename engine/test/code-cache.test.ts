import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireWithCodeCache, writeCodeCache } from '../code-cache.cjs';
import { fileReadLog } from './support/file-reads.js';

// The code cache only saves compile time: a module loads the same with it, without it, and
// with one that no longer fits the file.

const MODULE = `"use strict";
const { join } = require('node:path');
module.exports = function where(x) { return join(__dirname, String(x)) + ':' + typeof exports; };`;

describe('requireWithCodeCache', () => {
  it('loads a CommonJS file the same with a cache, without one, and with a stale one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
    const file = join(dir, 'mod.cjs');
    writeFileSync(file, MODULE);
    const plain = (requireWithCodeCache(file) as (x: unknown) => string)(1);
    expect(plain).toBe(`${join(dir, '1')}:object`);

    await writeCodeCache(file, (f) => void (f as (x: unknown) => string)(2));
    expect(existsSync(`${file}.v8cache`)).toBe(true);
    expect((requireWithCodeCache(file) as (x: unknown) => string)(1)).toBe(plain);

    writeFileSync(file, MODULE.replace("':' + typeof exports", "'!'"));
    expect((requireWithCodeCache(file) as (x: unknown) => string)(1)).toBe(`${join(dir, '1')}!`);
  });

  it.each([
    ['the engram validator', 'engine/model/engram-validator.gen.cjs'],
    ["the CLI's bundle", 'bin/svc.cjs'],
    ["the CLI's bundle of the commands a prompt runs", 'bin/svc-prompt.cjs'],
    ["svc mcp's bundle of the MCP SDK and zod", 'bin/mcp-deps.cjs'],
    ["svc init's bundle of the TOML editor", 'bin/toml-deps.cjs'],
  ])('the build writes a cache of %s that a new node process accepts', (_, path) => {
    const file = fileURLToPath(new URL(`../../dist/${path}`, import.meta.url));
    expect(existsSync(`${file}.v8cache`)).toBe(true);
    const codeCache = new URL('../../dist/engine/code-cache.cjs', import.meta.url).href;
    const check = `const { runCommonJs } = await import(${JSON.stringify(codeCache)});
      process.stdout.write(String(runCommonJs(${JSON.stringify(file)}).cacheRejected));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', check], { encoding: 'utf8' });
    expect(r.stdout, r.stderr).toBe('false');
  });

  it.each(['svc.cjs', 'svc-prompt.cjs', 'mcp-deps.cjs', 'toml-deps.cjs'])(
    'keeps the bundle %s ASCII, so that node reads it as a one-byte string',
    (name) => {
      const bundle = readFileSync(fileURLToPath(new URL(`../../dist/bin/${name}`, import.meta.url)), 'utf8');
      expect(bundle.match(/[^\x00-\x7f]/g) ?? []).toEqual([]);
    },
  );

  it('starts svc from a CommonJS entry: a command that imports nothing runs no ES module', () => {
    // Each process loads Node's ES module loader itself; only running an ES module loads its module jobs.
    const dir = mkdtempSync(join(tmpdir(), 'svc-entry-'));
    const probe = join(dir, 'probe.cjs');
    writeFileSync(
      probe,
      `process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('esm/')))));`,
    );
    const entry = fileURLToPath(new URL('../../dist/bin/svc.js', import.meta.url));
    const r = spawnSync(process.execPath, ['--require', probe, entry, '--version'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+/);
    expect((JSON.parse(r.stderr) as string[]).filter((m) => m.includes('module_job'))).toEqual([]);
  });

  it("leaves the side bundles to their commands: a learn and a recall read neither svc mcp's nor svc init's", () => {
    const files = bundlesRead([
      ['learn', 'Deploys happen on Tuesdays', '--scope', 'global'],
      ['recall', 'deploys'],
    ]);
    expect(files).toContain('svc-prompt.cjs.v8cache');
    expect(files.filter((f) => /(mcp|toml)-deps\.cjs/.test(f))).toEqual([]);
  });

  it('runs the commands a prompt runs from the prompt bundle alone, and every other command from the full one', () => {
    const event = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's', prompt: 'when do deploys happen' });
    const prompt = bundlesRead(
      [
        ['learn', 'Deploys happen on Tuesdays', '--scope', 'global'],
        ['recall', 'deploys'],
        ['inject', 'deploy'],
        ['--version'],
        ['hook-inject'],
      ],
      event,
    );
    expect(prompt.filter((f) => /^svc.*\.cjs/.test(f))).toEqual(['svc-prompt.cjs', 'svc-prompt.cjs.v8cache']);
    const other = bundlesRead([['--json', 'learn', 'Deploys happen on Tuesdays', '--scope', 'global'], ['list'], ['status'], ['--help']]);
    expect(other.filter((f) => /^svc.*\.cjs/.test(f))).toEqual(['svc.cjs', 'svc.cjs.v8cache']);
  });

  it('builds the prompt bundle with exactly the commands bin/svc.ts sends it', () => {
    const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
    const check = `const { runCommonJs } = require(${JSON.stringify(join(dist, 'engine', 'code-cache.cjs'))});
      const { isPromptCommand } = require(${JSON.stringify(join(dist, 'bin', 'prompt-commands.cjs'))});
      const names = (file) => runCommonJs(${JSON.stringify(join(dist, 'bin'))} + '/' + file).exports.commandNames();
      process.stdout.write(JSON.stringify({ prompt: names('svc-prompt.cjs'), sent: names('svc.cjs').filter(isPromptCommand) }));`;
    const r = spawnSync(process.execPath, ['-e', check], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const { prompt, sent } = JSON.parse(r.stdout) as { prompt: string[]; sent: string[] };
    expect(prompt).toEqual(sent);
    expect(prompt).toEqual(expect.arrayContaining(['learn', 'recall', 'inject', 'hook-inject', 'hook-observe']));
  });
});

/** The files of dist/bin that `svc` read to run each of `commands` (in one store), by name, once each. */
function bundlesRead(commands: string[][], input = ''): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bundles-'));
  const reads = fileReadLog();
  const bin = fileURLToPath(new URL('../../dist/bin/', import.meta.url));
  const env = { ...process.env, SVC_PATH: join(dir, 'store'), SVC_EMBED: 'off', HOME: dir };
  for (const args of commands) {
    const r = spawnSync(process.execPath, ['--require', reads.preload, join(bin, 'svc.js'), ...args], {
      encoding: 'utf8',
      env,
      cwd: dir,
      input,
    });
    expect(r.status, `svc ${args.join(' ')}: ${r.stderr}`).toBe(0);
  }
  return [
    ...new Set(
      reads
        .files()
        .filter((f) => f.startsWith(bin))
        .map((f) => f.slice(bin.length)),
    ),
  ].sort();
}
