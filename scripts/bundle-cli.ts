import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { codeCacheOf, writeCodeCache } from '../engine/code-cache.cjs';
import { COMMON_JS } from './support/common-js-bundle.js';

// Part of the build (`npm run build`, after tsc): bundles the dispatcher (dist/bin/dispatch.mjs)
// and every module it reaches into one CommonJS file, dist/bin/svc.cjs, and the commands a prompt
// runs into dist/bin/svc-prompt.cjs, then writes their V8 code caches by running commands
// (bin/svc.ts explains why). Dynamic imports of our own modules become lazy initialisers inside
// the file, so a command still initialises only what it uses. Packages stay outside (required, or
// imported through the loader), except INLINE and those in SIDE_BUNDLES, each of which gets a
// code-cached bundle of its own beside this one.

const DIST = fileURLToPath(new URL('../', import.meta.url));
const ENTRY = join(DIST, 'bin', 'dispatch.mjs');
const BUNDLE = join(DIST, 'bin', 'svc.cjs');
const PROMPT_BUNDLE = join(DIST, 'bin', 'svc-prompt.cjs');
const CLI = join(DIST, 'bin', 'svc.js');

/**
 * Packages bundled rather than required:
 * - better-sqlite3's JavaScript, which every command loads: thirteen small files, each resolved,
 *   read and compiled with no code cache (about 4 ms of `svc recall`). Its compiled addon stays
 *   outside (engine/store/sqlite-open.ts names it).
 * - @noble/hashes (the content hash of every write): ES modules only, which require() cannot load
 *   before Node 20.19.
 */
const INLINE = new Set(['better-sqlite3', '@noble/hashes']);

/**
 * Packages a few commands need, bundled on their own beside the CLI's bundle, each from the one
 * module of ours that re-exports them (lint keeps their imports there), with a code cache written
 * after `warm` has used them. The CLI's bundle requires that bundle where the module is imported.
 * The packages are bundled from their ES-module builds, so what is not reached is left out, and
 * an ES-module-only package needs no import() (require() loads one only from Node 20.19 on).
 * - `svc mcp`'s MCP SDK and zod: some two hundred files read and compiled without a cache on every
 *   start of the server;
 * - the TOML editor of `svc init` and `svc doctor`: 170 KB every other command read for nothing.
 */
const SIDE_BUNDLES: Array<{ module: string; bundle: string; warm: (exports: unknown) => Promise<void> | void }> = [
  { module: join(DIST, 'engine', 'mcp', 'sdk-deps.js'), bundle: join(DIST, 'bin', 'mcp-deps.cjs'), warm: warmMcpServer },
  {
    module: join(DIST, 'hooks', 'install', 'toml-deps.js'),
    bundle: join(DIST, 'bin', 'toml-deps.cjs'),
    warm: (exports) => {
      const toml = exports as typeof import('../hooks/install/toml-deps.js');
      const text = '# kept\n[mcp_servers.other]\ncommand = "x"\n';
      toml.patch(
        text,
        { ...(toml.parse(text) as object), mcp_servers: { svc: { command: 'node', args: ['svc.js', 'mcp'] } } },
        { inlineTableStart: 4 },
      );
    },
  },
];

/**
 * Modules that stay ES modules beside the bundle, reached by import() through the loader, with
 * what they import:
 * - the Ink UI, because Ink's yoga-layout awaits at its top level, which require() cannot load;
 * - the hub (`svc hub`), a third of the bundle that no other command uses: every command read and
 *   held it (`svc recall` 7.7 ms and `hook-inject` 9 ms faster without it at 10,000 engrams,
 *   2 cores, `node -e 0` 112 ms), while `svc hub` subcommands, which start PGlite, take 50-80 ms
 *   longer.
 * An island holds its own copies of the engine's modules (errors.ts says what that asks of them).
 */
const ISLANDS = new Set(['tui/browse/app.js', 'hub/cli/hub-command.js']);

const packageName = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
const require = createRequire(BUNDLE);

/** Whether require() loads `specifier` as CommonJS (a CommonJS package, or a package's CommonJS build). */
function requiresAsCommonJs(specifier: string): boolean {
  if (isBuiltin(specifier)) return true;
  let file: string;
  try {
    file = require.resolve(specifier);
  } catch {
    return false; // an ES-module-only package exports nothing to require()
  }
  return !(file.endsWith('.mjs') || (file.endsWith('.js') && packageType(file) === 'module'));
}

function packageType(file: string): string | undefined {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string }).type ?? 'commonjs';
    } catch {
      // no package.json here: look one folder up
    }
  }
  return undefined;
}

/**
 * The bundle in ASCII: with one character beyond it, V8 holds the whole file as a two-byte string,
 * and every command took 4-16 ms longer (up to a tenth of `node -e 0`; reading the file alone: 22
 * against 17 ms). esbuild escapes strings and plain templates; what it leaves (regular
 * expressions, tagged templates, comments) means the same with \uXXXX escapes, as long as no tag
 * function reads a template's raw text: html`` reads the cooked one, and String.raw text must stay
 * ASCII (as must a character escaped by a backslash).
 */
function asAscii(code: string, file: string): string {
  for (const raw of code.matchAll(/String\.raw`(?:[^`\\]|\\.)*`|\\[^\x00-\x7f]/gs))
    if (/[^\x00-\x7f]/.test(raw[0]))
      throw new Error(`bundle-cli: ${file}: write the non-ASCII characters in ${raw[0].slice(0, 60)}… as \\u escapes`);
  return code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Every package a bundle requires must be CommonJS (or have a CommonJS build) on Node 20.11. */
function checkRequires(code: string, file: string): void {
  for (const [, specifier] of code.matchAll(/\brequire\("([^"]+)"\)/g)) {
    if (!requiresAsCommonJs(specifier!))
      throw new Error(`bundle-cli: ${file} requires ${specifier}, an ES module: add it to INLINE or reach it by import()`);
  }
}

const layout: Plugin = {
  name: 'svc-layout',
  setup(bundler) {
    bundler.onResolve({ filter: /^[^./]/ }, ({ path, kind }) => {
      if (INLINE.has(packageName(path))) return undefined;
      // A package with a CommonJS build is required even where we import() it: a process that
      // loaded both of a dual package's builds paid for each (the MCP SDK's client, which
      // `svc doctor` imports, is one such package).
      if (kind === 'dynamic-import' && requiresAsCommonJs(path)) return { path, namespace: 'required' };
      return { path, external: true };
    });
    bundler.onLoad({ filter: /.*/, namespace: 'required' }, ({ path }) => ({
      contents: `module.exports = require(${JSON.stringify(path)});`,
      resolveDir: DIST,
    }));
    // A side bundle, from its code cache (the same code-cache module as the validator's).
    bundler.onLoad({ filter: /.*/, namespace: 'side-bundle' }, ({ path }) => {
      const side = relative(dirname(BUNDLE), SIDE_BUNDLES.find((b) => b.module === path)!.bundle);
      return {
        contents: `module.exports = require("./engine/code-cache.cjs").requireWithCodeCache(require("node:path").join(__dirname, ${JSON.stringify(side)}));`,
        resolveDir: DIST,
      };
    });
    bundler.onResolve({ filter: /^\./ }, ({ path, resolveDir, kind, importer }) => {
      const target = resolve(resolveDir, path);
      if (SIDE_BUNDLES.some((b) => b.module === target)) return { path: target, namespace: 'side-bundle' };
      if (!ISLANDS.has(relative(DIST, target).split(sep).join('/'))) return undefined;
      if (kind !== 'dynamic-import')
        return { errors: [{ text: `${importer} imports the ES-module island ${path} statically: use import()` }] };
      const beside = relative(dirname(BUNDLE), target).split(sep).join('/');
      return { path: beside.startsWith('.') ? beside : `./${beside}`, external: true };
    });
  },
};

/**
 * The two bundles of the dispatcher: the full one, and the one of the commands a prompt runs
 * (bin/prompt-commands.cts), built with SVC_BUNDLE defined as "prompt" so that the other
 * commands' branch of the dispatcher's table, and what only they reach, is left out.
 */
const BUNDLES: Array<{ file: string; define: Record<string, string> }> = [
  { file: BUNDLE, define: {} },
  { file: PROMPT_BUNDLE, define: { 'process.env.SVC_BUNDLE': '"prompt"' } },
];
for (const { file, define } of BUNDLES) writeFileSync(file, await bundleDispatcher(file, define));
// dist/bin/svc.js is CommonJS, as bin/package.json makes tsc write it: Node must read it so too.
copyFileSync(join(DIST, '..', 'bin', 'package.json'), join(DIST, 'bin', 'package.json'));

async function bundleDispatcher(file: string, define: Record<string, string>): Promise<string> {
  const result = await build({
    ...COMMON_JS,
    entryPoints: [ENTRY],
    metafile: true,
    plugins: [layout],
    // import.meta.url of every module becomes the bundle's: package-info.ts's codeFile() finds files from it.
    define: { 'import.meta.url': '__svcImportMetaUrl', ...define },
    banner: { js: 'const __svcImportMetaUrl = require("node:url").pathToFileURL(__filename).href;' },
  });
  // Code compiled by node:vm has no import() of its own (Node 20 lends it only behind a flag): the
  // external dynamic imports call the loader's instead. Each one replaced must be one esbuild kept.
  const kept = new Set(
    Object.values(result.metafile.inputs).flatMap((input) =>
      input.imports.filter((i) => i.kind === 'dynamic-import' && i.external).map((i) => i.path),
    ),
  );
  const code = result.outputFiles[0]!.text.replace(/\bimport\("([^"]+)"\)/g, (call, specifier: string) => {
    if (!kept.has(specifier)) throw new Error(`bundle-cli: ${call} in the bundle is not an import esbuild kept`);
    return `__svcImport(${JSON.stringify(specifier)})`;
  });
  if (/\bimport\(/.test(code)) throw new Error('bundle-cli: an import() the loader cannot serve is left in the bundle');
  checkRequires(code, file);
  rmSync(codeCacheOf(file), { force: true });
  return asAscii(code.replace(/^#!.*\n/, ''), file);
}

// The code caches: each command below runs from the cache the one before wrote and adds what it
// compiled, so each bundle's cache holds the functions of the commands run here and no others,
// whose bytecode would only make every start read more: the prompt bundle's, those of the
// commands a prompt runs; the full one's, those of `svc list` and `svc status`, and its start-up.
const home = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
const event = (name: string, extra: object): string => JSON.stringify({ hook_event_name: name, session_id: 'build', cwd: home, ...extra });
const WARM: Array<{ args: string[]; input?: string }> = [
  { args: ['learn', 'Deploys to production happen only on Tuesdays', '--tags', 'release'] },
  { args: ['learn', 'Release notes are written in the pull request'] },
  { args: ['learn', 'Deploys to production happen only on Tuesdays'] },
  { args: ['recall', 'when do deploys happen'] },
  { args: ['inject', 'write the release notes'] },
  { args: ['hook-inject'], input: event('UserPromptSubmit', { prompt: 'when do we deploy to production' }) },
  {
    args: ['hook-observe'],
    input: event('PostToolUse', { tool_name: 'Bash', tool_input: { command: 'npm test' }, tool_response: { stdout: 'ok' } }),
  },
  { args: ['hook-correction-detect'], input: event('UserPromptSubmit', { prompt: 'no, use pnpm instead of npm' }) },
  { args: ['list'] },
  { args: ['status'] },
];
try {
  for (const { args, input } of WARM) {
    const run = spawnSync(process.execPath, [CLI, ...args], {
      cwd: home,
      input: input ?? '',
      encoding: 'utf8',
      env: { ...process.env, HOME: home, SVC_PATH: '', SVC_EMBED: 'off', SVC_BUILD_CODE_CACHE: '1' },
    });
    if (run.status !== 0) throw new Error(`bundle-cli: svc ${args.join(' ')} exited with ${run.status}: ${run.stderr}`);
  }
} finally {
  rmSync(home, { recursive: true, force: true });
}

for (const { module, bundle, warm } of SIDE_BUNDLES) {
  const side = (await build({ ...COMMON_JS, entryPoints: [module] })).outputFiles[0]!.text;
  // (Ajv's code generator names its runtime files in require() calls inside strings: they stay.)
  checkRequires(side, bundle);
  if (/\bimport\(/.test(side)) throw new Error(`bundle-cli: ${bundle} has an import(), which code run by node:vm cannot make`);
  writeFileSync(bundle, asAscii(side, bundle));
  await writeCodeCache(bundle, warm);
}

/** What a session's start compiles: a server answering initialize, tools/list and a tools/call over
 * stdio streams, and a zod schema checking arguments. */
async function warmMcpServer(exports: unknown): Promise<void> {
  const sdk = exports as typeof import('../engine/mcp/sdk-deps.js');
  const server = new sdk.Server(
    { name: 'warm', version: '0' },
    { capabilities: { tools: {} }, jsonSchemaValidator: new sdk.AjvJsonSchemaValidator() },
  );
  const args = sdk.z.strictObject({ query: sdk.z.string().min(1), limit: sdk.z.number().int().optional() });
  server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: [] }));
  server.setRequestHandler(sdk.CallToolRequestSchema, (request) => ({
    content: [{ type: 'text', text: JSON.stringify(args.safeParse(request.params.arguments)) }],
  }));
  const input = new PassThrough();
  const output = new PassThrough();
  await server.connect(new sdk.StdioServerTransport(input, output));
  const answered = new Promise<void>((done, fail) => {
    let lines = 0;
    output.on('data', (chunk: Buffer) => (lines += chunk.toString().split('\n').length - 1) >= 3 && done());
    // A later SDK that answers differently must fail the build, not hang it.
    setTimeout(() => fail(new Error(`bundle-cli: warming mcp-deps.cjs, the MCP server answered ${lines} of 3 requests`)), 10_000).unref();
  });
  const send = (message: object) => input.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  send({
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'build', version: '0' } },
  });
  send({ method: 'notifications/initialized' });
  send({ id: 2, method: 'tools/list' });
  send({ id: 3, method: 'tools/call', params: { name: 'svc_recall', arguments: { query: 'deploys' } } });
  await answered;
  await server.close();
}
