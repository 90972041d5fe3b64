import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { ingest } from '../ops/ingest/ingest.js';
import { extractCandidates, type IngestCandidate } from '../ops/ingest/extract.js';
import { forget } from '../ops/forget.js';
import { learn } from '../ops/learn.js';
import { systemContext } from '../ops/context.js';

const data = (name: string): string => readFileSync(new URL(`./data/${name}`, import.meta.url), 'utf8');
const CONTRIBUTING = data('CONTRIBUTING.md');
const TRANSCRIPT = data('chat-transcript.txt');

const statements = (cs: IngestCandidate[]): string[] => cs.map((c) => c.statement);
const find = (cs: IngestCandidate[], start: string): IngestCandidate | undefined => cs.find((c) => c.statement.startsWith(start));
/** The kind of the one candidate a single sentence yields, or null when it yields none. */
const kindOf = (text: string): string | null => {
  const { candidates } = extractCandidates(text);
  expect(candidates.length, `${text} -> ${JSON.stringify(candidates)}`).toBeLessThanOrEqual(1);
  return candidates[0]?.kind ?? null;
};

describe('extraction from a CONTRIBUTING.md', () => {
  const { format, candidates } = extractCandidates(CONTRIBUTING);

  it('reads it as a document and finds each kind', () => {
    expect(format).toBe('document');
    const count = (kind: string) => candidates.filter((c) => c.kind === kind).length;
    expect(count('procedure')).toBe(2);
    expect(count('decision')).toBe(2);
    expect(count('definition')).toBe(3);
    expect(count('prohibition')).toBe(4);
    expect(count('rule')).toBe(11);
  });

  it('extracts the rules and prohibitions with their type, polarity, line and section', () => {
    expect(find(candidates, 'Use TypeScript strict mode')).toMatchObject({
      statement: 'Use TypeScript strict mode for all new packages.',
      kind: 'rule',
      type: 'behavioral',
      polarity: 'do',
      line: 38,
      section: 'coding-style',
      context: 'Contributing to Tidepool > Coding style',
    });
    expect(find(candidates, 'Never use `any`')).toMatchObject({ kind: 'prohibition', polarity: 'dont', section: 'coding-style' });
    expect(find(candidates, 'Do not commit a `package-lock.json`')).toMatchObject({
      kind: 'prohibition',
      line: 23,
      section: 'development-workflow',
    });
    expect(find(candidates, 'Force-pushing to `main` is not allowed')).toMatchObject({ kind: 'prohibition', section: 'pull-requests' });
    expect(find(candidates, 'Avoid adding runtime dependencies')).toMatchObject({ kind: 'prohibition' });
    for (const rule of [
      'We use pnpm for package management.',
      'Prefer named exports over default exports.',
      'Keep functions small and focused.',
      'Commit messages must follow the Conventional Commits format (for example `fix(parser): handle empty input`).',
      'Keep the subject line under 72 characters.',
      'Every pull request must include tests for the change.',
      'PRs should target the `main` branch.',
      'If you change a public API, update the changelog in `CHANGELOG.md`.',
      'All code is formatted with Prettier; run `pnpm format` before committing.',
      'Open an issue first so we can discuss the design.',
    ]) {
      expect(find(candidates, rule), rule).toMatchObject({ statement: rule, kind: 'rule', polarity: 'do' });
    }
    expect(find(candidates, 'Keep the subject line')!.line).toBe(53);
  });

  it('turns a numbered list of steps into one procedural engram, titled by its heading or intro', () => {
    expect(find(candidates, 'Getting started:')).toMatchObject({
      kind: 'procedure',
      type: 'procedural',
      polarity: null,
      statement:
        'Getting started: 1. Fork the repository and clone your fork; 2. Install dependencies with `pnpm install`; ' +
        '3. Run `pnpm test` to make sure everything passes; 4. Create a branch from `main` for your change.',
    });
    expect(find(candidates, 'To publish a new version:')).toMatchObject({
      kind: 'procedure',
      line: 77,
      section: 'releasing',
      statement:
        'To publish a new version: 1. Bump the version in `package.json`; 2. Update `CHANGELOG.md` with the release notes; ' +
        '3. Run `pnpm build && pnpm test`; 4. Tag the commit with `vX.Y.Z` and push the tag.',
    });
    // The steps are not extracted a second time as rules.
    expect(statements(candidates).filter((s) => s.startsWith('Bump the version'))).toEqual([]);
  });

  it('extracts decisions as architectural and glossary entries as terminological', () => {
    expect(find(candidates, 'We decided to ship ESM only')).toMatchObject({
      kind: 'decision',
      type: 'architectural',
      section: 'architecture-decisions',
    });
    expect(find(candidates, 'We chose Vitest over Jest')).toMatchObject({ kind: 'decision', type: 'architectural' });
    expect(find(candidates, 'Pool:')).toMatchObject({
      statement: 'Pool: a set of workers that share one task queue.',
      kind: 'definition',
      type: 'terminological',
    });
    expect(find(candidates, 'Tide:')).toMatchObject({ statement: 'Tide: one scheduling cycle of the pool.', kind: 'definition' });
    expect(find(candidates, 'A "drain" means')).toMatchObject({ kind: 'definition', section: 'glossary' });
  });

  it('leaves out questions, thanks, pointers, code blocks, tables, HTML comments and front matter', () => {
    const all = statements(candidates).join('\n');
    for (const absent of [
      'Thanks for your interest',
      'Have a question',
      'Ask it in',
      'Please read our',
      'read our Code of Conduct',
      "Don't run this in CI",
      'pnpm run dev',
      'You can also use the VS Code dev container',
      'See the',
      'Never    | shown',
      'never publish this comment',
      'title: Contributing',
      'Is your change large',
      'Want a quick review',
      'Releases are cut by maintainers',
      'Feel free to reach out',
      'Thank you for helping',
    ]) {
      expect(all, absent).not.toContain(absent);
    }
  });

  it('gives every statement once, ending in a full stop', () => {
    expect(new Set(statements(candidates)).size).toBe(candidates.length);
    for (const c of candidates) expect(c.statement).toMatch(/[.!]$/);
  });
});

describe('extraction from a chat transcript', () => {
  const { format, candidates } = extractCandidates(TRANSCRIPT);

  it("reads it as a chat and takes only the user's durable statements", () => {
    expect(format).toBe('chat');
    expect(candidates.map((c) => [c.kind, c.statement])).toEqual([
      ['rule', 'Use pnpm.'],
      ['prohibition', 'We never use npm in this repo.'],
      ['prohibition', "Don't add new dependencies for something this small, just write the loop yourself."],
      ['rule', "Always run the linter before you tell me you're done."],
      ['definition', '"flaky" here means a test that failed at least once in the last 20 CI runs.'],
      ['decision', 'We decided to keep the upload timeout at 30 seconds because the CDN drops slower connections anyway.'],
    ]);
    expect(candidates.every((c) => c.speaker === 'user')).toBe(true);
    expect(candidates[0]!.line).toBe(3);
  });

  it('never extracts from the assistant, nor questions, requests, hedges or chit-chat', () => {
    const all = statements(candidates).join('\n').toLowerCase();
    for (const absent of [
      'p-retry',
      'always pin versions',
      'never mind',
      'can you add a retry',
      'fix the flaky upload test',
      'status of the docs',
      'axios',
      "don't worry",
      'thanks',
      'yes',
    ]) {
      expect(all, absent).not.toContain(absent);
    }
  });

  it('understands Human:/Assistant: transcripts with multi-line turns and named speakers', () => {
    const human = extractCandidates(
      'Human: Please refactor the parser.\nIt is too slow.\nAssistant: I will always use regexes.\nHuman: No. From now on, write a benchmark before optimizing anything.\nAlso never touch the generated files in gen/.\n',
    );
    expect(human.format).toBe('chat');
    expect(human.candidates.map((c) => c.statement)).toEqual([
      'Write a benchmark before optimizing anything.',
      'Never touch the generated files in gen/.',
    ]);

    const bullets = extractCandidates(
      'user: two rules for this repo:\n- never edit CHANGELOG.md by hand\n- always add a changeset\nassistant: noted\n',
    );
    expect(bullets.candidates.map((c) => c.statement)).toEqual(['Never edit CHANGELOG.md by hand.', 'Always add a changeset.']);

    const slack = extractCandidates(
      'alice: morning!\nbob: hey\nalice: reminder: we always squash-merge feature branches\nbob: ok\nalice: can someone review #42?\n',
    );
    expect(slack.format).toBe('chat');
    expect(slack.candidates.map((c) => [c.speaker, c.statement])).toEqual([['alice', 'We always squash-merge feature branches.']]);
  });
});

describe('single sentences', () => {
  it.each([
    ['Always use pnpm.', 'rule'],
    ['Make sure the migrations are reversible.', 'rule'],
    ['All new code must include tests.', 'rule'],
    ['Type hints are required on all function signatures.', 'rule'],
    ['- **Docstrings**: required on all public APIs', 'rule'],
    ['Never log user emails.', 'prohibition'],
    ['Secrets must never be committed.', 'prohibition'],
    ['No direct commits to main.', 'prohibition'],
    ['Logging in request handlers is not allowed.', 'prohibition'],
    ['When a test is flaky, do not retry it silently.', 'prohibition'],
    ['Secrets cannot be committed.', 'prohibition'],
    ['Contributors may not push to main.', 'prohibition'],
    ['We decided to use PostgreSQL for the job queue.', 'decision'],
    ["We've settled on gRPC for service-to-service calls.", 'decision'],
    ['Decision: keep the public API versioned under /v2.', 'decision'],
    ['An engram means a learned statement.', 'definition'],
    ['By tide we mean one scheduling cycle.', 'definition'],
    ['SLO stands for service level objective.', 'definition'],
  ])('%s -> %s', (text, kind) => {
    expect(kindOf(text)).toBe(kind);
  });

  it.each([
    'We need to talk about the roadmap.',
    'The tests should pass now.',
    'You should check out our blog.',
    'This should work.',
    'Can you run the tests?',
    'Should we use Bun for this?',
    'I think we should use Bun.',
    'Maybe we should never deploy on Fridays.',
    'Thanks a lot!',
    'Great, looks good.',
    'That means the cache is cold.',
    "Don't worry about it.",
    'The parser is slow.',
    'We love pull requests.',
    'Use it.',
    'Always.',
    'Never again?',
    'What does engram mean?',
    "The parser can't handle tabs.",
    '`X@latest` may not run on Node 20.',
  ])('%s -> nothing', (text) => {
    expect(kindOf(text)).toBeNull();
  });

  it('names the definition\'s term in quotes when it was written "By X we mean"', () => {
    expect(extractCandidates('By tide we mean one scheduling cycle.').candidates[0]!.statement).toBe('"tide" means one scheduling cycle.');
  });

  it('finds nothing in empty or code-only text', () => {
    expect(extractCandidates('').candidates).toEqual([]);
    expect(extractCandidates('```\nnever do this\nalways do that\n```\n').candidates).toEqual([]);
    expect(extractCandidates('Intro:\n\n    never indented code\n    always code\n').candidates).toEqual([]);
  });
});

describe('ingest into a store', () => {
  let root: string;
  let store: LocalStore;

  beforeEach(async () => {
    root = join(mkdtempSync(join(tmpdir(), 'svc-ingest-')), 'store');
    store = await LocalStore.open(root);
  });
  afterEach(() => {
    store.close();
    rmSync(join(root, '..'), { recursive: true, force: true });
  });

  it('extract_only returns the candidates and writes nothing', async () => {
    const r = await ingest(store, { content: CONTRIBUTING, extract_only: true, domain: 'tidepool' }, systemContext);
    expect(r.extract_only).toBe(true);
    expect(r.count).toBe(22);
    expect(r.created).toBe(0);
    expect(r.candidates.every((c) => c.action === undefined && c.id === undefined)).toBe(true);
    expect(find(r.candidates, 'Use TypeScript strict mode')).toMatchObject({ domain: 'tidepool.coding-style' });
    expect((await store.stats()).engrams).toBe(0);
  });

  it('saves each candidate as an engram of its type, polarity, scope, domain, tags and source', async () => {
    const r = await ingest(
      store,
      { content: CONTRIBUTING, scope: 'project:tidepool', domain: 'tidepool', source: 'CONTRIBUTING.md' },
      systemContext,
    );
    expect(r).toMatchObject({ format: 'document', count: 22, created: 22, duplicate: 0, conflict: 0, error: 0 });
    const all = await store.list({ limit: 100 });
    expect(all).toHaveLength(22);
    const byStatement = (start: string) => all.find((e) => e.statement.startsWith(start))!;
    expect(byStatement('Use TypeScript strict mode')).toMatchObject({
      type: 'behavioral',
      polarity: 'do',
      scope: 'project:tidepool',
      domain: 'tidepool.coding-style',
      tags: ['ingest', 'rule'],
      source: 'CONTRIBUTING.md § Contributing to Tidepool > Coding style',
      status: 'active',
    });
    // learn() alone would not know this is a rule: the extractor sets the polarity.
    expect(byStatement('Every pull request must include tests')).toMatchObject({ polarity: 'do' });
    expect(byStatement('Force-pushing to `main`')).toMatchObject({ polarity: 'dont', tags: ['ingest', 'prohibition'] });
    expect(byStatement('We chose Vitest')).toMatchObject({ type: 'architectural', domain: 'tidepool.architecture-decisions' });
    expect(byStatement('Pool:')).toMatchObject({ type: 'terminological', domain: 'tidepool.glossary' });
    expect(byStatement('To publish a new version:')).toMatchObject({ type: 'procedural', domain: 'tidepool.releasing' });
    const ids = r.candidates.map((c) => c.id);
    expect(new Set(ids).size).toBe(22);
  });

  it('ingesting the same text again bumps reference counts like learn, and creates nothing', async () => {
    await ingest(store, { content: TRANSCRIPT, source: 'chat 2024-06-01' }, systemContext);
    const again = await ingest(store, { content: TRANSCRIPT, source: 'chat 2024-06-02' }, systemContext);
    expect(again).toMatchObject({ format: 'chat', count: 6, created: 0, duplicate: 6 });
    const e = await store.get(again.candidates[0]!.id!);
    expect(e).toMatchObject({ statement: 'Use pnpm.', reference_count: 2, source: 'chat 2024-06-01 (user)' });
    expect((await store.stats()).engrams).toBe(6);
  });

  it('does not revive a retired statement, nor merge one stored with another type: conflicts', async () => {
    const retired = await learn(store, { statement: 'Always use pnpm.' }, systemContext);
    await forget(store, { target: retired.engram.id }, systemContext);
    const other = await learn(store, { statement: 'Never log user emails.', type: 'procedural' }, systemContext);
    const r = await ingest(store, { content: 'Always use pnpm. Never log user emails. Prefer small pull requests.' }, systemContext);
    expect(r).toMatchObject({ count: 3, created: 1, conflict: 2 });
    expect(r.candidates[0]).toMatchObject({ action: 'conflict', id: retired.engram.id });
    expect(r.candidates[0]!.reason).toContain('retired');
    expect(r.candidates[1]).toMatchObject({ action: 'conflict', id: other.engram.id });
    expect(r.candidates[1]!.reason).toContain('type procedural');
    expect((await store.get(retired.engram.id))!.status).toBe('retired');
  });

  it('applies the secret guard: a credential aimed at a shared scope lands in local', async () => {
    const r = await ingest(
      store,
      { content: 'Never share the deploy token ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 outside the team.', scope: 'project:x' },
      systemContext,
    );
    expect(r.created).toBe(1);
    expect(r.candidates[0]).toMatchObject({ scope: 'local' });
    expect(r.warnings[0]).toMatch(/^line 1: content looks like it holds a secret/);
  });

  it('refuses empty content', async () => {
    await expect(ingest(store, { content: '  \n ' }, systemContext)).rejects.toThrow(/empty/);
  });
});
