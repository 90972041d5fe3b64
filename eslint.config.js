// ESLint for the whole repository; `npm run lint`, which `npm test` runs. Syntax rules only (typescript-eslint's
// recommended set, not the type-checked one): a type-aware lint would build the program a second time after tsc.
// Layout is left to Prettier. The layering of shared/DESIGN.md ("Layout and direction of dependencies") is
// import-x/no-restricted-paths, generated below from TOP and HUB_LAYERS; every exception is named in EXCEPTIONS.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const root = path.dirname(fileURLToPath(import.meta.url));

// Top-level folders: what each may import besides itself. bin/ (the dispatcher) and scripts/ (build scripts and
// the bench, not published) may import anything; nothing imports them. Tests (*/test/**) live under their folder
// and follow its rule.
const TOP = {
  engine: [],
  tui: ['engine'],
  hooks: ['engine'],
  hub: ['engine'],
};
const TOP_FOLDERS = ['bin', 'engine', 'tui', 'hooks', 'hub', 'scripts'];

// The hub's own order, lowest first: a module may import its own layer and those below it, never one above.
// Entries are folders or files under hub/; a file entry puts that file below its folder (a low helper that lives
// beside the routes that use it). A file cannot be put above its folder: such files are EXCEPTIONS.
const HUB_LAYERS = [
  ['contracts.ts'], // types shared by everything
  ['observe'], // the logger, request ids and the access line
  ['net', 'mail', 'http/problem.ts', 'pages/html.ts'], // leaf adapters: outbound HTTP, mail, problem documents, HTML escaping
  ['openapi', 'http/request-input.ts', 'pages/page-kit.ts'],
  ['data'], // the database: pools, transactions, migrations, SQL helpers, organizations, the BM25 index
  ['access'], // policy, tokens, scopes, epochs, identities
  ['webhooks/webhook-outbox.ts'], // the outbox rows, written in the writer's transaction
  ['org-backend'], // an organization's engine backend on PostgreSQL, bound to the caller's policy
  ['audit'],
  ['limits'],
  ['webhooks/delivery-worker.ts', 'webhooks/signature.ts'],
  ['monitor'], // metrics and readiness: read the pool, the audit writer, the limits, the webhook worker
  ['config.ts'], // the hub's settings: reads the defaults of every service above
  ['http'], // the shared HTTP layer: authentication, gates, route kit, idempotency
  ['login'],
  ['admin'],
  ['engrams', 'packs', 'people', 'scim', 'webhooks'], // the feature routes (people: users, groups, keys, invitations)
  ['mcp'],
  ['pages'],
  ['app.ts'],
  ['start.ts'],
  ['cli'],
];

// Imports that break the order today, each with the fix that would remove it. Paths are from the repository root;
// `file` may be a glob.
const EXCEPTIONS = [
  // Tests: the synthetic corpus and the generated validator's builder live in scripts/ (the bench uses them too).
  { file: 'engine/test/generated-validator.test.ts', imports: ['scripts/generate-validator.ts'] },
  { file: 'engine/test/yaml-codec.test.ts', imports: ['scripts/support/synthetic-engrams.ts'] },
  { file: 'engine/test/rank-memory.test.ts', imports: ['scripts/support/synthetic-engrams.ts'] },
  { file: 'engine/test/rarest-terms.test.ts', imports: ['scripts/support/synthetic-engrams.ts'] },
  { file: 'hub/test/bm25-parity.test.ts', imports: ['scripts/support/synthetic-engrams.ts'] },
  { file: 'hub/test/postings-cache.test.ts', imports: ['scripts/support/synthetic-engrams.ts'] },
  // The LoCoMo bench asks through svc mcp as through the engine: the test runs the bench's own runner both ways.
  { file: 'tui/test/locomo-through-mcp.test.ts', imports: ['scripts/bench/locomo.ts'] },
  // The team-memory CLI tests start a real hub with the hub tests' process helper.
  { file: 'tui/test/team-memory.test.ts', imports: ['hub/test/support/hub-process.ts'] },
  { file: 'tui/test/team-memory-ux.test.ts', imports: ['hub/test/support/hub-process.ts'] },
];

const inside = (p, folder) => p === folder || p.startsWith(folder + '/');

/** The zones of no-restricted-paths; `allowed` (repository paths) are excepted from every zone they fall in. */
function layerZones(allowed = []) {
  const zones = [];
  const zone = (target, from, lowered, message) => {
    if (allowed.some((p) => inside(from, p))) return;
    const except = [...new Set([...lowered, ...allowed])].filter((p) => inside(p, from) && p !== from).map((p) => path.relative(from, p));
    zones.push({ target: path.join(root, target), from: path.join(root, from), except, message });
  };
  for (const [target, may] of Object.entries(TOP)) {
    for (const from of TOP_FOLDERS) {
      if (from !== target && !may.includes(from))
        zone(target, from, [], `${target}/ may import only ${['itself', ...may].join(', ')} (DESIGN.md).`);
    }
  }
  const entries = HUB_LAYERS.flatMap((layer, rank) => layer.map((p) => ({ p: `hub/${p}`, rank })));
  for (const t of entries) {
    for (const f of entries) {
      if (f.rank <= t.rank) continue;
      // Entries inside f.p are excepted from its zone: below t they are allowed, above it they have their own zone.
      const lowered = entries.filter((e) => e.p !== f.p && inside(e.p, f.p)).map((e) => e.p);
      zone(t.p, f.p, lowered, `the hub's layers (HUB_LAYERS in eslint.config.js): ${t.p} is below ${f.p}.`);
    }
  }
  return zones;
}

const byFile = new Map();
for (const e of EXCEPTIONS) byFile.set(e.file, [...(byFile.get(e.file) ?? []), ...e.imports]);

// What svc's MCP server runs on comes from engine/mcp/sdk-deps.ts, which the CLI loads from a bundle
// of its own (ARCHITECTURE.md): a value imported from the packages elsewhere would be a second copy.
const MCP_SERVER_PACKAGES = {
  group: [
    '@modelcontextprotocol/sdk/server/*',
    '@modelcontextprotocol/sdk/types.js',
    '@modelcontextprotocol/sdk/validation/*',
    'zod',
    'zod/*',
  ],
  allowTypeImports: true,
  message: 'Import it from engine/mcp/sdk-deps.ts (types may come from the package).',
};

// The TOML editor comes from hooks/install/toml-deps.ts, also a bundle of its own for the CLI.
const TOML_EDITOR = {
  group: ['@decimalturn/toml-patch'],
  allowTypeImports: true,
  message: 'Import it from hooks/install/toml-deps.ts (types may come from the package).',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '**/*.gen.cjs'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.{ts,tsx,mts,cts,js}'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: path.join(root, 'tsconfig.test.json') })] },
    rules: {
      // The codebase's convention for a deliberately unused binding (a dropped field, a placeholder parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // Terminal, YAML, header and log sanitizers match control characters on purpose.
      'no-control-regex': 'off',
      // A `let` read by a closure before its one assignment (a server's handler, a transaction's last run) must stay.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'import-x/no-restricted-paths': ['error', { zones: layerZones() }],
    },
  },
  ...[...byFile].map(([file, imports]) => ({
    files: [file],
    rules: { 'import-x/no-restricted-paths': ['error', { zones: layerZones(imports) }] },
  })),
  {
    // The engine never loads the server's or the terminal UI's frameworks (DESIGN.md).
    files: ['engine/**'],
    ignores: ['engine/test/**', 'engine/mcp/sdk-deps.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['koa', '@koa/router', 'ink', 'react', 'pg'].map((name) => ({
            name,
            message: 'engine/ never imports Koa, Ink, React or pg (DESIGN.md).',
          })),
          patterns: [MCP_SERVER_PACKAGES],
        },
      ],
    },
  },
  {
    files: ['tui/**', 'hooks/**', 'bin/**'],
    ignores: ['**/test/**', 'hooks/install/toml-deps.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [MCP_SERVER_PACKAGES, TOML_EDITOR] }] },
  },
  {
    // What the product refuses is an SvcError (engine/errors.ts): the CLI prints it as one line with its exit code,
    // the hub answers it as a problem document; anything else is an internal error. Tests and scripts/ (build steps and
    // the bench, not published: a failure there should stop with its stack) throw Error freely.
    files: ['bin/**', 'engine/**', 'tui/**', 'hooks/**', 'hub/**'],
    ignores: ['**/test/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "ThrowStatement > :matches(NewExpression, CallExpression)[callee.name='Error']",
          message:
            'Throw an SvcError of the right kind (engine/errors.ts), or say in an eslint-disable comment why this is an internal error.',
        },
      ],
    },
  },
  {
    files: ['**/test/**'],
    rules: {
      // Tests read untyped JSON from the CLI and the hub; each `any` says so with an eslint-disable comment (the files
      // listed in the next block predate the lint).
      '@typescript-eslint/no-explicit-any': 'error',
      // Patterns match aligned columns of the CLI's output literally.
      'no-regex-spaces': 'off',
    },
  },
  {
    // Test files that use `any` without a comment (predating the lint); new ones must say why.
    files: [
      'engine/test/local-store.test.ts',
      'engine/test/migrations.test.ts',
      'engine/test/support/run-svc.ts',
      'hooks/test/doctor.test.ts',
      'hooks/test/init.test.ts',
      'tui/test/cli.test.ts',
      'tui/test/ingest-import-cli.test.ts',
      'tui/test/migrate-rerank-cli.test.ts',
    ],
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // A comma expression as a statement, predating the lint.
    files: ['hub/test/teardown-signals.test.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
