import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { systemContext } from '../ops/context.js';
import type { EngramDoc } from '../model/engram-types.js';
import { audit } from '../ops/audit/audit.js';
import { claudeProjectKey, loadHostMemory, markdownBlocks, projectRootOf, type HostMemory } from '../ops/host-memory.js';
import { conflictReason, preference, snapshotReason } from '../ops/audit/heuristics.js';
import { references, symbolsOf } from '../ops/project-references.js';
import { shellQuote } from '../text.js';

const engram = (statement: string, extra: Partial<EngramDoc> = {}): EngramDoc =>
  ({ id: 'ENG-X-2026-0101-001', statement, status: 'active', type: 'behavioral', scope: 'global', ...extra }) as EngramDoc;

describe('reading markdown memory', () => {
  it('keeps bullets and paragraphs; skips headings, front matter, code, tables, quotes and comments', () => {
    const md = [
      '---',
      'name: testing notes',
      'type: feedback',
      '---',
      '# Title',
      '',
      'A paragraph that',
      'spans two lines.',
      '',
      '- **Bold** bullet one',
      '  continued here',
      '* [x] a done checkbox item',
      '1. numbered item here',
      '',
      '```bash',
      'npm test',
      '```',
      '| a | b |',
      '|---|---|',
      '> a quote',
      '<!-- a',
      'comment -->',
      '---',
      'Last line.',
    ].join('\n');
    expect(markdownBlocks(md)).toEqual([
      { text: 'A paragraph that spans two lines.', line: 7 },
      { text: 'Bold bullet one continued here', line: 10 },
      { text: 'a done checkbox item', line: 12 },
      { text: 'numbered item here', line: 13 },
      { text: 'Last line.', line: 24 },
    ]);
  });
});

describe('references', () => {
  it('finds paths and files in code spans and in the text', () => {
    const refs = (t: string) => references(t).map((r) => `${r.kind}:${r.ref}`);
    expect(refs('Config is in `src/config.ts` and docs/guide/setup.md, see package.json.')).toEqual([
      'path:src/config.ts',
      'path:docs/guide/setup.md',
      'path:package.json',
    ]);
    expect(refs('Scripts live in ./scripts/ and ~/bin/tool.sh')).toEqual(['path:~/bin/tool.sh', 'path:./scripts/']);
  });

  it('leaves out URLs, routes, packages, product names and phrases', () => {
    const refs = (t: string) => references(t).map((r) => r.ref);
    expect(refs('See https://example.com/docs/page.md and (claude.ai/code).')).toEqual([]);
    expect(refs('The API is served under /api/v1/engrams/ for clients.')).toEqual([]);
    expect(refs('Install `@types/node` with `npm install`, built on Node.js and read/write access.')).toEqual([]);
    expect(refs('Use `pnpm` and `TypeScript` here.')).toEqual([]);
  });

  it('reads code symbols: camelCase, PascalCase, snake_case, called names', () => {
    expect(symbolsOf('writeFileDurable()')).toEqual(['writeFileDurable']);
    expect(symbolsOf('LegacyStore.open()')).toEqual(['LegacyStore']);
    expect(symbolsOf('parse_config')).toEqual(['parse_config']);
    expect(symbolsOf('render()')).toEqual(['render']);
    expect(symbolsOf('main')).toEqual([]);
    expect(symbolsOf('SVC_PATH')).toEqual([]);
    expect(symbolsOf('npm run build')).toEqual([]);
  });
});

describe('snapshots', () => {
  it('recognises dates, versions, time-bound wording and status updates', () => {
    expect(snapshotReason('As of 2025-03-14 the staging deploy is broken.')).toBe('a date ("2025-03-14")');
    expect(snapshotReason('The API moved in March 2025.')).toBe('a date ("March 2025")');
    expect(snapshotReason('We pinned react to v18.2.0 for the build.')).toBe('a version ("v18.2.0")');
    expect(snapshotReason('Currently the login test is flaky.')).toBe('time-bound wording ("Currently")');
    expect(snapshotReason('The release branch is frozen this week.')).toBe('time-bound wording ("this week")');
    expect(snapshotReason('Payments refactor is in progress.')).toBe('a status update ("in progress")');
    expect(snapshotReason('TODO: remove the feature flag')).toBe('a status update ("TODO:")');
  });

  it('leaves lasting rules alone', () => {
    for (const t of [
      'Never deploy on Fridays.',
      'Use the latest Node LTS for new services.',
      'Indent with 2 spaces.',
      'Run npm test before pushing.',
    ]) {
      expect(snapshotReason(t), t).toBeNull();
    }
  });
});

describe('conflicts', () => {
  it('reads preferences', () => {
    expect(preference('Use pnpm, not npm, for installs')).toEqual({ prefer: 'pnpm', over: 'npm' });
    expect(preference('Prefer vitest over jest')).toEqual({ prefer: 'vitest', over: 'jest' });
    expect(preference('Use tabs instead of spaces')).toEqual({ prefer: 'tabs', over: 'spaces' });
    expect(preference('Always run the linter')).toBeNull();
  });

  it('sees a swapped preference, opposite polarity, and one swapped choice', () => {
    expect(conflictReason('Use npm for installing dependencies.', engram('Use pnpm, not npm, for installing dependencies'))).toMatch(
      /prescribes npm, which .* rejects in favour of pnpm/,
    );
    expect(conflictReason('Use pnpm, not npm.', engram('Use npm, not pnpm.'))).toMatch(/prefers pnpm over npm/);
    expect(conflictReason('Use yarn instead of npm.', engram('Never use yarn.'))).toMatch(/prescribes yarn, which .* forbids/);
    expect(conflictReason('Never commit directly to main.', engram('Always commit directly to main.'))).toMatch(
      /forbids what .* prescribes/,
    );
    expect(conflictReason('Indent with 4 spaces.', engram('Indent with 2 spaces'))).toMatch(/different choice: 4 here, 2 in/);
  });

  it('does not call agreement or different subjects a conflict', () => {
    expect(conflictReason('Always run the tests before pushing.', engram('Never push without running the tests.'))).toBeNull();
    expect(conflictReason('Use pnpm for installs.', engram('Use pnpm, not npm, for installing dependencies'))).toBeNull();
    expect(conflictReason('Add tests for the parser.', engram('Add tests for the lexer.'))).toBeNull();
    expect(conflictReason('Never log secrets.', engram('Always write a changelog entry.'))).toBeNull();
  });
});

describe("Claude Code's memory files", () => {
  let base: string;
  let project: string;
  let home: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'svc-audit-'));
    project = join(base, 'repo');
    home = join(base, 'home');
    mkdirSync(join(project, '.git'), { recursive: true });
    mkdirSync(join(project, 'pkg', 'web'), { recursive: true });
    mkdirSync(join(project, '.claude', 'rules'), { recursive: true });
    mkdirSync(join(home, '.claude'), { recursive: true });
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('reads user, project (each level down to the working directory), local, rules, imports and auto memory, in order', () => {
    writeFileSync(join(home, '.claude', 'CLAUDE.md'), '- user rule one\n');
    writeFileSync(join(project, 'CLAUDE.md'), '- root rule one\n@docs/shared.md\n@docs/gone.md\n');
    mkdirSync(join(project, 'docs'));
    writeFileSync(join(project, 'docs', 'shared.md'), '- imported rule one\n@../CLAUDE.md\n');
    writeFileSync(join(project, 'CLAUDE.local.md'), '- local rule one\n');
    writeFileSync(join(project, 'pkg', 'CLAUDE.md'), '- package rule one\n');
    writeFileSync(join(project, 'pkg', 'web', '.claude-ignored.md'), '- not memory\n');
    writeFileSync(join(project, '.claude', 'rules', 'style.md'), '- style rule one\n');
    const mem = join(home, '.claude', 'projects', claudeProjectKey(project), 'memory');
    mkdirSync(mem, { recursive: true });
    writeFileSync(join(mem, 'debugging.md'), '---\nname: debugging\n---\n- auto topic one\n');
    writeFileSync(join(mem, 'MEMORY.md'), '- auto index one\n');

    const m = loadHostMemory({ cwd: join(project, 'pkg', 'web'), home, env: {} });
    expect(m.project_root).toBe(project);
    expect(m.entries.map((e) => [e.text, e.level])).toEqual([
      ['user rule one', 'user'],
      ['root rule one', 'project'],
      ['imported rule one', 'import'],
      ['@docs/gone.md', 'project'], // a missing import stays an entry: an orphan
      ['local rule one', 'project'],
      ['package rule one', 'project'],
      ['style rule one', 'project'],
      ['auto index one', 'auto'],
      ['auto topic one', 'auto'],
    ]);
    expect(m.files).toEqual([
      join(home, '.claude', 'CLAUDE.md'),
      join(project, 'CLAUDE.md'),
      join(project, 'docs', 'shared.md'),
      join(project, 'CLAUDE.local.md'),
      join(project, 'pkg', 'CLAUDE.md'),
      join(project, '.claude', 'rules', 'style.md'),
      join(mem, 'MEMORY.md'),
      join(mem, 'debugging.md'),
    ]);
    expect(m.looked_in).toContain(join(project, 'pkg', 'web', 'CLAUDE.md'));
  });

  it('honours CLAUDE_CONFIG_DIR and names the project folder as Claude Code does', () => {
    const config = join(base, 'cfg');
    mkdirSync(config);
    writeFileSync(join(config, 'CLAUDE.md'), '- from the config dir\n');
    expect(loadHostMemory({ cwd: project, home, env: { CLAUDE_CONFIG_DIR: config } }).entries.map((e) => e.text)).toEqual([
      'from the config dir',
    ]);
    expect(claudeProjectKey('/home/me/my.project_x')).toBe('-home-me-my-project-x');
    expect(projectRootOf(join(project, 'pkg'))).toBe(project);
  });

  it('needs --from-json for the other hosts, and reads its forms', () => {
    expect(() => loadHostMemory({ source: 'cursor', cwd: project, home })).toThrow(/--source cursor .* --from-json <path>/);
    const file = join(base, 'm.json');
    writeFileSync(
      file,
      JSON.stringify({ memories: ['one memory here', { id: 7, text: 'two  memory\nhere' }, { content: 'three memory here' }, '  '] }),
    );
    const m = loadHostMemory({ source: 'claude-desktop', fromJson: file, cwd: project, home });
    expect(m.entries).toEqual([{ text: 'one memory here' }, { text: 'two memory here', id: '7' }, { text: 'three memory here' }]);
    writeFileSync(file, '{"a": 1}');
    expect(() => loadHostMemory({ fromJson: file })).toThrow(/must hold a JSON array/);
    writeFileSync(file, '[1, {"text": 2}]');
    try {
      loadHostMemory({ fromJson: file });
      expect.unreachable();
    } catch (err) {
      expect((err as { details: string[] }).details).toEqual([
        '[0]: must be a string or an object with a string "text"',
        '[1]: must be a string or an object with a string "text"',
      ]);
    }
    expect(() => loadHostMemory({ fromJson: join(base, 'nope.json') })).toThrow(/cannot read --from-json .*: ENOENT/);
  });
});

describe('audit', () => {
  let base: string;
  let store: LocalStore;
  let project: string;
  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'svc-audit-'));
    project = join(base, 'repo');
    mkdirSync(join(project, '.git'), { recursive: true });
    mkdirSync(join(project, 'src'), { recursive: true });
    writeFileSync(join(project, 'src', 'index.ts'), 'export function startServer(): void {}\n');
    store = await LocalStore.open(join(base, 'store'));
  });
  afterEach(() => {
    store.close();
    rmSync(base, { recursive: true, force: true });
  });

  const memory = (entries: HostMemory['entries']): HostMemory => ({
    source: 'claude-code',
    project_root: project,
    files: [join(project, 'CLAUDE.md')],
    looked_in: [],
    entries,
    warnings: [],
  });

  it('classifies each entry and suggests the next step', async () => {
    const pnpm = (await learn(store, { statement: 'Use pnpm, not npm, for installing dependencies' }, systemContext)).engram.id;
    const lint = (await learn(store, { statement: 'Always run the linter before committing' }, systemContext)).engram.id;
    const r = await audit(
      store,
      memory([
        { text: 'Use npm for installing dependencies.', level: 'project' },
        { text: 'Always run the linter before committing', level: 'project' },
        { text: 'Always run the linter before committing anything', level: 'project' },
        { text: 'As of 2025-03-14 the staging deploy is broken.', level: 'project' },
        { text: 'The server starts in `startServer()` from `src/index.ts`.', level: 'project' },
        { text: 'The server starts in `bootServer()` from `src/main.ts`.', level: 'project' },
        { text: 'Keep notes in `notes/todo.md`.', level: 'user' },
        { text: 'Never log secrets or tokens.', level: 'project' },
      ]),
      { fast: true },
    );
    expect(r.findings.map((f) => f.class)).toEqual([
      'conflict',
      'duplicate',
      'duplicate',
      'snapshot',
      'durable',
      'orphan',
      'durable',
      'durable',
    ]);
    expect(r.counts).toEqual({ conflict: 1, duplicate: 2, snapshot: 1, orphan: 1, durable: 3 });
    expect(r.search).toBe('bm25');

    const [conflict, exact, near, snap, ok, orphan, userLevel, durable] = r.findings as [any, any, any, any, any, any, any, any]; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(conflict).toMatchObject({
      engram: { id: pnpm },
      command: `svc learn "Use npm for installing dependencies." --supersedes ${pnpm}`,
      action: 'supersede or delete',
    });
    expect(conflict.suggestion).toContain(`svc forget ${pnpm}`);
    expect(exact).toMatchObject({ engram: { id: lint }, reason: `already stored as ${lint} (the same statement)` });
    expect(near.reason).toMatch(new RegExp(`already stored as ${lint} \\(word overlap 0\\.\\d+\\)`));
    expect(snap.command).toBe('svc capture "As of 2025-03-14 the staging deploy is broken."');
    expect(ok.command).toBe("svc learn 'The server starts in `startServer()` from `src/index.ts`.'");
    expect(orphan.missing).toEqual(['bootServer', 'src/main.ts']);
    expect(userLevel.class).toBe('durable'); // a user-level file's relative paths are not this project's
    expect(durable).toMatchObject({ action: 'learn', command: 'svc learn "Never log secrets or tokens."' });
    expect(r.findings.every((f) => f.related.length <= 5)).toBe(true);

    const limited = await audit(store, memory([{ text: 'Always run the linter before committing anything', level: 'project' }]), {
      fast: true,
      limit: 1,
    });
    expect(limited.findings[0]!.related).toHaveLength(1);
    await expect(audit(store, memory([]), { limit: 0 })).rejects.toThrow(/--limit/);
  });

  it('quotes commands for the shell', () => {
    expect(shellQuote('Use pnpm; not npm')).toBe('"Use pnpm; not npm"');
    expect(shellQuote("Don't use `any`")).toBe(`'Don'\\''t use \`any\`'`);
    expect(shellQuote('Costs $5')).toBe(`'Costs $5'`);
  });
});
