import { describe, it, expect, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';
import * as rr from '../../engine/test/support/rerank-fixture.js';
import { callTool, type Called } from '../../engine/test/support/mcp-call.js';

// The stdio MCP server as clients see it: a real SDK client spawning `svc mcp` on a temp store.

const FULL = [
  'svc_learn',
  'svc_learn_batch',
  'svc_recall',
  'svc_inject',
  'svc_feedback',
  'svc_forget',
  'svc_promote',
  'svc_pin',
  'svc_similarity_search',
  'svc_list',
  'svc_session_start',
  'svc_session_end',
  'svc_session_scope',
  'svc_capture',
  'svc_timeline',
  'svc_episode_to_engram',
  'svc_status',
  'svc_doctor',
  'svc_history',
  'svc_receipt',
  'svc_packs_list',
  'svc_packs_preview',
  'svc_packs_install',
  'svc_packs_uninstall',
  'svc_packs_export',
  'svc_packs_discover',
  'svc_stores_add',
  'svc_stores_list',
  'svc_scopes_discover',
  'svc_suggest_scope',
  'svc_rescope',
  'svc_sync',
  'svc_sync_status',
  'svc_outbox',
  'svc_tensions',
  'svc_tensions_purge',
  'svc_ingest',
  'svc_import',
  'svc_batch_decay',
];
const LEAN = [
  'svc_session_start',
  'svc_session_end',
  'svc_learn',
  'svc_recall',
  'svc_inject',
  'svc_feedback',
  'svc_forget',
  'svc_status',
  'svc_doctor',
  'svc_timeline',
  'svc_admin',
];

interface Session {
  client: Client;
  stderr: () => string;
  call(name: string, args?: Record<string, unknown>): Promise<Called>;
  close(): Promise<void>;
}

const open: Session[] = [];
afterAll(async () => {
  await Promise.all(open.map((s) => s.close().catch(() => undefined)));
});

async function startServer(store: string, env: Record<string, string> = {}): Promise<Session> {
  const base = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp'],
    env: { ...base, SVC_PATH: store, ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(transport);
  const session: Session = {
    client,
    stderr: () => stderr,
    call: (name, args = {}) => callTool(client, name, args),
    close: () => client.close(),
  };
  open.push(session);
  return session;
}

/** Calls a tool and expects success. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(s: Session, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await s.call(name, args);
  expect(r.isError, `${name} failed: ${r.text}`).toBe(false);
  return r.data;
}

/** Calls a tool and expects a tool error; returns its one line. */
async function fails(s: Session, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const r = await s.call(name, args);
  expect(r.isError, `${name} should fail: ${r.text}`).toBe(true);
  expect(r.text).not.toMatch(/\n|\s+at \S+ \(/); // one line, never a stack trace
  return r.text;
}

const engramFiles = (store: string): string[] =>
  readdirSync(join(store, 'engrams')).filter((f) => f.endsWith('.yaml') && !f.startsWith('.tmp-'));

describe('svc mcp: the tool surface', () => {
  it('lists exactly the 39 tools of the full profile, each described with a strict schema; prints the start-up time', async () => {
    const store = tempStore('mcp-list');
    await svc(['status'], { store });
    const t0 = performance.now();
    const s = await startServer(store, { SVC_TOOL_PROFILE: '' });
    const { tools } = await s.client.listTools();
    const ms = performance.now() - t0;
    console.log(`svc mcp: spawn to initialize + tools/list (full, ${tools.length} tools): ${ms.toFixed(0)} ms`);
    expect(tools.map((t) => t.name)).toEqual(FULL);
    for (const t of tools) {
      expect(t.description!.length, t.name).toBeGreaterThan(40);
      expect(t.inputSchema.type).toBe('object');
      expect((t.inputSchema as { additionalProperties?: unknown }).additionalProperties, t.name).toBe(false);
      for (const [field, schema] of Object.entries(t.inputSchema.properties ?? {})) {
        expect((schema as { description?: string }).description, `${t.name}.${field} has a description`).toBeTruthy();
      }
    }
    const learn = tools.find((t) => t.name === 'svc_learn')!;
    expect(learn.inputSchema.required).toEqual(['statement']);
    expect(tools.find((t) => t.name === 'svc_forget')!.annotations?.destructiveHint).toBe(true);
    expect(tools.find((t) => t.name === 'svc_recall')!.annotations?.readOnlyHint).toBe(true);
    expect(s.client.getServerVersion()?.name).toBe('svc');
    expect(s.client.getInstructions()).toMatch(/svc_session_start/);
  });

  it('the lean profile (SVC_TOOL_PROFILE=lean) lists exactly 11 tools; a bad profile fails on stderr', async () => {
    const store = tempStore('mcp-lean');
    const t0 = performance.now();
    const s = await startServer(store, { SVC_TOOL_PROFILE: 'lean' });
    const { tools } = await s.client.listTools();
    console.log(`svc mcp: spawn to initialize + tools/list (lean, ${tools.length} tools): ${(performance.now() - t0).toFixed(0)} ms`);
    expect(tools.map((t) => t.name)).toEqual(LEAN);
    const bad = await svc(['mcp'], { store, env: { SVC_TOOL_PROFILE: 'tiny' } });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(JSON.parse(bad.stderr).error.message).toBe('SVC_TOOL_PROFILE must be one of full, lean (got "tiny")');
  });
});

describe('svc mcp: memory tools', () => {
  it('learns, recalls, injects, and takes feedback, pin, promote and forget', async () => {
    const store = tempStore('mcp-mem');
    const s = await startServer(store, { SVC_EMBED: 'off' });

    const a = await ok(s, 'svc_learn', {
      statement: 'Use pnpm, not npm, to install dependencies',
      tags: ['tooling'],
      domain: 'build.node',
    });
    expect(a).toMatchObject({ action: 'created', type: 'behavioral', scope: 'global', status: 'active' });
    expect(a.id).toMatch(/^ENG-[A-Z0-9]+-\d{4}-\d{4}-001$/);
    const again = await s.call('svc_learn', { statement: 'Use pnpm, not npm, to install dependencies' });
    expect(again.data).toMatchObject({ id: a.id, action: 'deduplicated', reference_count: 2 });
    expect(again.structured).toEqual(again.data);
    const b = await ok(s, 'svc_learn', {
      statement: 'Never commit generated files in dist',
      type: 'procedural',
      scope: 'project:svc',
      supersedes: [],
    });
    expect(b.scope).toBe('project:svc');

    const batch = await ok(s, 'svc_learn_batch', {
      items: [{ statement: 'Release notes go in CHANGELOG.md' }, { statement: 'Bad', supersedes: ['ENG-NOPE-2026-0101-001'] }],
    });
    expect(batch).toMatchObject({ learned: 1, failed: 1 });
    expect(batch.results[1].error).toMatch(/supersedes.*ENG-NOPE-2026-0101-001/);

    const r = await ok(s, 'svc_recall', { query: 'install dependencies with pnpm' });
    expect(r.results[0].id).toBe(a.id);
    expect(r.legs).toMatchObject({ bm25: 'ran', vector: 'unavailable' });
    expect(r.legs.vector_reason).toMatch(/SVC_EMBED=off/);
    const none = await ok(s, 'svc_recall', { query: 'kubernetes helm chart' });
    expect(none).toMatchObject({ count: 0, results: [] });

    const inj = await ok(s, 'svc_inject', { task: 'install the dependencies of this project with pnpm' });
    expect(inj.blocks.directives.map((e: { id: string }) => e.id)).toContain(a.id);
    expect(inj.text).toMatch(/^## DIRECTIVES\n- Use pnpm, not npm, to install dependencies/);
    expect(inj.text).toMatch(/## LEARNING PROTOCOL/);
    const bare = await ok(s, 'svc_inject', { task: 'commit generated files', with_protocol: false });
    expect(bare.blocks.constraints.map((e: { id: string }) => e.id)).toEqual([b.id]);
    expect(bare.text).not.toMatch(/LEARNING PROTOCOL/);

    const fb = await ok(s, 'svc_feedback', { id: a.id, signal: 'positive' });
    expect(fb.engrams[0].feedback_signals).toEqual({ positive: 1, negative: 0, neutral: 0 });
    const fb2 = await ok(s, 'svc_feedback', {
      items: [
        { id: a.id, signal: 'negative' },
        { id: b.id, signal: 'neutral' },
      ],
    });
    expect(fb2.recorded).toBe(2);

    expect(await ok(s, 'svc_pin', { id: b.id })).toEqual({ id: b.id, pinned: true, status: 'active' });
    const pinnedInject = await ok(s, 'svc_inject', { task: 'something unrelated entirely' });
    expect(pinnedInject.blocks.constraints.map((e: { id: string; pinned: boolean }) => [e.id, e.pinned])).toEqual([[b.id, true]]);
    expect((await ok(s, 'svc_pin', { id: b.id, pinned: false })).pinned).toBe(false);

    expect(await fails(s, 'svc_promote', { id: a.id })).toBe(`${a.id} is active, not a candidate`);

    // A candidate arrives behind the server's back (another tool rewrote the file atomically).
    const file = join(store, 'engrams', `${a.id}.yaml`);
    const doc = parse(readFileSync(file, 'utf8'));
    doc.status = 'candidate';
    writeFileSync(`${file}.tmp-edit`, stringify(doc));
    renameSync(`${file}.tmp-edit`, file);
    const seen = await ok(s, 'svc_list', { status: 'candidate' });
    expect(seen.engrams.map((e: { id: string }) => e.id)).toEqual([a.id]);
    expect(await ok(s, 'svc_promote', { id: a.id })).toMatchObject({ id: a.id, status: 'active', activation: { retrieval_strength: 1 } });

    const single = await ok(s, 'svc_forget', { target: 'pnpm' });
    expect(single).toMatchObject({ action: 'retired', id: a.id }); // one live match: retired
    expect((await ok(s, 'svc_forget', { target: a.id })).action).toBe('already_retired');
    expect((await ok(s, 'svc_recall', { query: 'pnpm' })).count).toBe(0);
    await ok(s, 'svc_learn', { statement: 'Generated files are rebuilt by CI' });
    const two = await ok(s, 'svc_forget', { target: 'generated files' });
    expect(two.action).toBe('ambiguous');
    expect(two.matches).toHaveLength(2);
    expect(await fails(s, 'svc_forget', { target: 'ENG-NOPE-2026-0101-999' })).toBe('no engram ENG-NOPE-2026-0101-999');

    const list = await ok(s, 'svc_list', { scope: 'project:svc' });
    expect(list).toMatchObject({ count: 1, engrams: [{ id: b.id, statement: 'Never commit generated files in dist' }] });

    const status = await ok(s, 'svc_status');
    expect(status).toMatchObject({
      storage_root: store,
      engrams: 4,
      by_status: { active: 3, retired: 1 },
      search: { bm25: 'ready', vector: { state: 'unavailable' } },
    });
    expect(status.injection_events).toBeGreaterThanOrEqual(3);
    const doctor = await ok(s, 'svc_doctor');
    expect(doctor.checks.map((c: { name: string }) => c.name)).toEqual([
      'storage',
      'embedder',
      'hybrid_search',
      'reranker',
      'remote_store',
    ]);
    expect(doctor.checks.find((c: { name: string }) => c.name === 'reranker')).toMatchObject({
      status: 'off',
      detail: expect.stringMatching(/not configured/),
    });
    expect(doctor.checks.find((c: { name: string }) => c.name === 'remote_store')).toMatchObject({
      status: 'off',
      detail: expect.stringMatching(/no remote configured/),
    });
    expect(doctor.ok).toBe(true);

    const decay = await ok(s, 'svc_batch_decay', { context_scope: 'project:svc' });
    expect(decay.processed).toBe(4);
    expect(s.stderr()).toMatch(/vector search unavailable, BM25 only: disabled by SVC_EMBED=off/);
  });

  it('runs the dense leg with a model placed in the store, loaded on first need', async () => {
    const store = tempStore('mcp-dense');
    writeTinyModel(join(store, 'models', 'fast-bge-small-en-v1.5'), {
      synonyms: [
        ['car', 'automobile'],
        ['quick', 'rapid'],
      ],
    });
    const s = await startServer(store);
    const first = await ok(s, 'svc_learn', { statement: 'The car must be quick' });
    await ok(s, 'svc_learn', { statement: 'Lunch is served at noon' });
    const r = await ok(s, 'svc_recall', { query: 'automobile' });
    expect(r.legs).toMatchObject({ bm25: 'ran', vector: 'ran', model: 'bge-small-en-v1.5' });
    expect(r.results[0]).toMatchObject({ id: first.id, found_by: ['vector'] });
    const fast = await ok(s, 'svc_recall', { query: 'automobile', fast: true });
    expect(fast.legs.vector).toBe('skipped');
    const sim = await ok(s, 'svc_similarity_search', { query: 'The automobile must be rapid', limit: 1 });
    expect(sim.results[0]).toMatchObject({ id: first.id, reading: 'duplicate' });
    // Once loaded, learn flags near-duplicates.
    const dup = await ok(s, 'svc_learn', { statement: 'The automobile must be rapid' });
    expect(dup.near_duplicate.id).toBe(first.id);
    const status = await ok(s, 'svc_status');
    expect(status.search.vector).toEqual({ state: 'ready', model: 'bge-small-en-v1.5', vectors: 3, pending: 0 });
    const doctor = await ok(s, 'svc_doctor');
    expect(doctor.checks.find((c: { name: string }) => c.name === 'hybrid_search').status).toBe('ok');
  });
});

describe('svc mcp: reranking', () => {
  it('svc_recall and svc_inject rerank with SVC_RERANKER, as svc recall does', async () => {
    const store = tempStore('mcp-rerank');
    for (const statement of [rr.FULL, rr.PARTIAL]) expect((await svc(['learn', statement], { store })).code).toBe(0);
    rr.installInvertedReranker(store);
    const plain = await startServer(store, { SVC_RERANKER: '' });
    const before = await ok(plain, 'svc_recall', { query: rr.RERANK_QUERY, fast: false });
    expect(before.results.map((r: { statement: string }) => r.statement)).toEqual([rr.FULL, rr.PARTIAL]);
    expect(before.reranker).toBeUndefined();
    const s = await startServer(store, { SVC_RERANKER: rr.RERANKER });
    const after = await ok(s, 'svc_recall', { query: rr.RERANK_QUERY });
    expect(after.reranker).toMatchObject({ state: 'ran', model: rr.RERANKER });
    expect(after.results.map((r: { statement: string }) => r.statement)).toEqual([rr.PARTIAL, rr.FULL]);
    expect(typeof after.results[0].rerank_score).toBe('number');
    const injected = await ok(s, 'svc_inject', { task: rr.RERANK_QUERY, with_protocol: false });
    expect(injected.reranker).toMatchObject({ state: 'ran' });
    expect(injected.text.indexOf(rr.PARTIAL)).toBeLessThan(injected.text.indexOf(rr.FULL));
    expect((await ok(s, 'svc_recall', { query: rr.RERANK_QUERY, fast: true })).reranker).toBeUndefined();
  });
});

describe('svc mcp: sessions, episodes, history', () => {
  it('starts a session with its injection, learns and rates in it, ends it, and keeps the timeline and receipts', async () => {
    const store = tempStore('mcp-session');
    const s = await startServer(store, { SVC_EMBED: 'off' });
    const rule = await ok(s, 'svc_learn', { statement: 'Run the migrations before the integration tests' });
    const started = await ok(s, 'svc_session_start', { task: 'fix the integration tests', scope: 'project:api' });
    expect(started.session).toMatchObject({ status: 'open', task: 'fix the integration tests', agent: 'mcp-test', scope: 'project:api' });
    expect(started.injection.blocks.directives.map((e: { id: string }) => e.id)).toEqual([rule.id]);
    expect(started.writable_scopes).toContain('project:api');
    const sid = started.session.id as string;

    const inSession = await ok(s, 'svc_learn', { statement: 'Integration tests need the docker daemon', session: sid });
    expect(inSession.scope).toBe('project:api');
    const moved = await ok(s, 'svc_session_scope', { session: sid, domain: 'testing' });
    expect(moved.session).toMatchObject({ id: sid, scope: 'project:api', domain: 'testing' });
    await ok(s, 'svc_feedback', { id: rule.id, signal: 'positive', session: sid });
    const captured = await ok(s, 'svc_capture', {
      summary: 'Found that the tests failed without migrations',
      session: sid,
      channel: 'terminal',
    });
    expect(captured.episode).toMatchObject({ agent: 'mcp-test', channel: 'terminal', session: sid });

    const ended = await ok(s, 'svc_session_end', {
      session: sid,
      summary: 'Fixed the tests. You should always seed the test database first.',
      learnings: [{ statement: 'Seed the test database before the integration tests' }],
    });
    expect(ended.session).toMatchObject({ status: 'ended' });
    expect(ended.learned[0]).toMatchObject({ action: 'created', scope: 'project:api' });
    expect(ended.suggested).toContain('You should always seed the test database first.');
    expect(await fails(s, 'svc_session_end', { session: sid })).toMatch(/already ended/);

    const tl = await ok(s, 'svc_timeline', { session: sid });
    expect(tl.episodes.map((e: { summary: string }) => e.summary)).toEqual(
      expect.arrayContaining([
        'Found that the tests failed without migrations',
        expect.stringMatching(/^Session started/),
        expect.stringMatching(/^Session ended/),
      ]),
    );
    const found = await ok(s, 'svc_timeline', { query: 'migrations' });
    expect(found.episodes[0].id).toBe(captured.episode.id);

    const fromEpisode = await ok(s, 'svc_episode_to_engram', {
      episode_id: captured.episode.id,
      statement: 'Integration tests fail without migrations',
    });
    expect(fromEpisode.action).toBe('created');

    const receipts = await ok(s, 'svc_receipt', { session: sid });
    expect(receipts.receipts[0]).toMatchObject({
      task: 'fix the integration tests',
      session: sid,
      engram_ids: [rule.id],
      used: { [rule.id]: 'positive' },
    });
    const hist = await ok(s, 'svc_history', { id: rule.id });
    expect(hist.events.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['created', 'feedback']));
    expect(await fails(s, 'svc_history', { id: 'ENG-NOPE-2026-0101-001' })).toBe('no engram ENG-NOPE-2026-0101-001');
    expect(await fails(s, 'svc_timeline', { from: 'yesterday-ish' })).toMatch(/^invalid arguments for svc_timeline: from: must be a date/);
  });
});

describe('svc mcp: the lean profile and svc_admin', () => {
  it('dispatches to other non-destructive tools, validates their arguments and refuses destructive ones', async () => {
    const store = tempStore('mcp-admin');
    const s = await startServer(store, { SVC_TOOL_PROFILE: 'lean', SVC_EMBED: 'off' });
    const a = await ok(s, 'svc_learn', { statement: 'Prefer small pull requests' });
    const listed = await ok(s, 'svc_admin', { action: 'list', args: { limit: 5 } });
    expect(listed).toMatchObject({ count: 1, engrams: [{ id: a.id }] });
    expect((await ok(s, 'svc_admin', { action: 'svc_list' })).count).toBe(1);
    expect((await ok(s, 'svc_admin', { action: 'pin', args: { id: a.id } })).pinned).toBe(true);
    expect((await ok(s, 'svc_admin', { action: 'history', args: { id: a.id } })).events.length).toBeGreaterThan(0);

    expect(await fails(s, 'svc_admin', { action: 'list', args: { limit: 'many' } })).toBe(
      'invalid arguments for svc_list (via svc_admin): limit: must be a whole number (got "many")',
    );
    expect(await fails(s, 'svc_admin', { action: 'sync' })).toMatch(/^svc_admin refuses destructive tools: svc_sync/);
    expect(await fails(s, 'svc_admin', { action: 'svc_tensions_purge' })).toMatch(
      /^svc_admin refuses destructive tools: svc_tensions_purge/,
    );
    expect(await fails(s, 'svc_admin', { action: 'forget', args: { target: a.id } })).toMatch(
      /refuses destructive tools: svc_forget .*call svc_forget directly/,
    );
    expect(await fails(s, 'svc_admin', { action: 'import', args: {} })).toMatch(/refuses destructive tools: svc_import/);
    expect(await fails(s, 'svc_admin', { action: 'teleport' })).toMatch(
      /^svc_admin: unknown action "teleport" \(actions: learn, learn_batch, /,
    );
    expect((await ok(s, 'svc_admin', { action: 'packs_list' })).packs).toEqual([]);
    expect(await ok(s, 'svc_admin', { action: 'suggest_scope', args: { statement: 'x' } })).toMatchObject({
      scope: 'global',
      confident: false,
    });
    expect(await fails(s, 'svc_admin', { args: {} })).toBe('invalid arguments for svc_admin: action: is required (a string)');
    expect(await fails(s, 'svc_list')).toBe(
      'svc_list is not in the lean tool profile: call svc_admin with {"action": "list", "args": {...}}',
    );
    expect(await fails(s, 'svc_sync')).toMatch(/^svc_sync is not in the lean tool profile and svc_admin refuses destructive tools/);
    expect(await fails(s, 'svc_teleport')).toMatch(/^unknown tool "svc_teleport"/);
    expect((await ok(s, 'svc_forget', { target: a.id })).action).toBe('retired'); // forget is in lean itself
  });
});

describe('svc mcp: errors', () => {
  it('answers bad arguments, unknown tools and missing engine parts with clear one-line tool errors', async () => {
    const store = tempStore('mcp-err');
    const s = await startServer(store, { SVC_EMBED: 'off' });
    expect(await fails(s, 'svc_learn', {})).toBe('invalid arguments for svc_learn: statement: is required (a string)');
    expect(await fails(s, 'svc_learn', { statement: '   ' })).toBe('invalid arguments for svc_learn: statement: must not be empty');
    expect(await fails(s, 'svc_learn', { statement: 'x', type: 'opinion' })).toBe(
      'invalid arguments for svc_learn: type: must be one of "behavioral", "terminological", "procedural", "architectural" (got "opinion")',
    );
    expect(await fails(s, 'svc_learn', { statement: 'x', tags: 'a,b' })).toBe(
      'invalid arguments for svc_learn: tags: must be an array (got "a,b")',
    );
    expect(await fails(s, 'svc_learn', { statement: 'x', scope: 'project:' })).toMatch(
      /^invalid arguments for svc_learn: scope: path after ":" is missing/,
    );
    expect(await fails(s, 'svc_learn', { statement: 'x', supersedes: ['old'] })).toMatch(/supersedes\[0\]: must be an engram id/);
    expect(await fails(s, 'svc_learn', { statement: 'x', dual_coding: {} })).toBe(
      'invalid arguments for svc_learn: dual_coding: needs example or analogy (or both)',
    );
    expect(await fails(s, 'svc_learn', { statment: 'typo' })).toMatch(
      /statement: is required \(a string\); unknown argument "statment" \(allowed: statement, type, /,
    );
    expect(await fails(s, 'svc_recall', { query: 'x', limit: 0 })).toBe('invalid arguments for svc_recall: limit: must be at least 1');
    expect(await fails(s, 'svc_recall', { query: 'x', limit: 2.5 })).toBe(
      'invalid arguments for svc_recall: limit: must be a whole number (got 2.5)',
    );
    expect(await fails(s, 'svc_recall', { query: 'x', fast: 'yes' })).toBe(
      'invalid arguments for svc_recall: fast: must be true or false (got "yes")',
    );
    expect(await fails(s, 'svc_feedback', { id: 'ENG-A-1', signal: 'great' })).toMatch(
      /signal: must be one of "positive", "negative", "neutral" \(got "great"\)/,
    );
    expect(await fails(s, 'svc_feedback', { signal: 'positive' })).toBe(
      'invalid arguments for svc_feedback: id: is required (or give items)',
    );
    expect(await fails(s, 'svc_feedback', { id: 'ENG-NOPE-2026-0101-001', signal: 'positive' })).toBe('no engram ENG-NOPE-2026-0101-001');
    expect(await fails(s, 'svc_tensions', { action: 'resolve', tension_id: 'T-2026-0101-001' })).toBe(
      'invalid arguments for svc_tensions: winner: is required for action "resolve"',
    );
    expect(await fails(s, 'svc_lern', { statement: 'x' })).toBe('unknown tool "svc_lern" (did you mean svc_learn?)');
    expect(await fails(s, 'svc_teleport')).toMatch(/^unknown tool "svc_teleport" \(this server has 39 tools/);
    expect(await fails(s, 'svc_similarity_search', { query: 'x' })).toMatch(
      /^similarity search needs the embedding model: disabled by SVC_EMBED=off/,
    );

    // No tool answers "not available yet": without a hub, the team tools say what they need.
    expect(await fails(s, 'svc_scopes_discover', { register: true })).toMatch(/^no hub is configured for this project/);
    expect(await ok(s, 'svc_suggest_scope', { statement: 'Use pnpm in this repo' })).toMatchObject({ scope: 'global', confident: false });
    expect((await ok(s, 'svc_rescope', { ids: ['ENG-2026-0101-001'], scope: 'project:x' })).items).toEqual([
      expect.objectContaining({ outcome: 'not_found' }),
    ]);
    // The outbox is real: empty without a hub, and a retry says why it cannot send.
    expect(await ok(s, 'svc_outbox', {})).toMatchObject({ hub: null, queued: 0, refused: 0, entries: [] });
    expect(await fails(s, 'svc_outbox', { retry: true })).toMatch(/^no hub is configured for this project/);
    // Their final schemas are enforced all the same.
    expect(await fails(s, 'svc_stores_add', { path: '/x' })).toBe('invalid arguments for svc_stores_add: scope: is required (a string)');
    expect(await fails(s, 'svc_packs_export', { name: 'p', type: 'misc' })).toMatch(
      /^invalid arguments for svc_packs_export: type: must be one of/,
    );
    // The server keeps working after all of that.
    expect((await ok(s, 'svc_learn', { statement: 'Still alive' })).action).toBe('created');
  });

  it('writes nothing but the protocol to stdout, even while loading the model, and answers every call before exiting at end of input', async () => {
    const store = tempStore('mcp-stdout');
    writeTinyModel(join(store, 'models', 'fast-bge-small-en-v1.5'));
    const child = spawn(process.execPath, [CLI, 'mcp'], { env: { ...process.env, SVC_PATH: store }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const send = (msg: object) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
    send({
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 'svc_learn', arguments: { statement: 'Raw protocol works' } } });
    send({ id: 3, method: 'tools/call', params: { name: 'svc_recall', arguments: { query: 'raw protocol' } } });
    send({ id: 4, method: 'tools/call', params: { name: 'svc_status', arguments: {} } });
    // End stdin at once: the server finishes the calls it has (the recall waits for the model) before it exits.
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    const lines = out.split('\n').filter(Boolean);
    expect(lines).toHaveLength(4);
    const byId = new Map(lines.map((line) => JSON.parse(line)).map((m) => [m.id, m]));
    for (const m of byId.values()) expect(m.jsonrpc).toBe('2.0');
    expect([...byId.keys()].sort()).toEqual([1, 2, 3, 4]);
    const recall = byId.get(3).result;
    expect(JSON.parse(recall.content[0].text).legs.vector).toBe('ran');
  });
});

describe('svc mcp: several processes on one store', () => {
  it('two servers learning 40 engrams each at once and a CLI learning 20 lose nothing', async () => {
    const store = tempStore('mcp-conc');
    await svc(['status'], { store });
    const [s1, s2] = await Promise.all([startServer(store, { SVC_EMBED: 'off' }), startServer(store, { SVC_EMBED: 'off' })]);
    const serverBurst = (s: Session, tag: string) =>
      Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          const r = await s.call('svc_learn', { statement: `Server ${tag} rule ${i}: keep token ${tag}n${i} in the shared fixture` });
          expect(r.isError, r.text).toBe(false);
          return r.data.id as string;
        }),
      );
    const cliLoop = async (): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const { run, data } = await svcJson(['learn', `CLI rule ${i}: keep token clin${i} in the shared fixture`], { store });
        expect(run.code, run.stderr).toBe(0);
        ids.push(data.id);
      }
      return ids;
    };
    const printed = (await Promise.all([serverBurst(s1, 'a'), serverBurst(s2, 'b'), cliLoop()])).flat();
    expect(printed).toHaveLength(100);
    expect(new Set(printed).size).toBe(100);

    const onDisk = engramFiles(store)
      .map((f) => parse(readFileSync(join(store, 'engrams', f), 'utf8')).id as string)
      .sort();
    expect(onDisk).toEqual([...printed].sort());
    const { data } = await svcJson(['list', '--limit', '1000'], { store });
    expect((data.engrams as { id: string }[]).map((e) => e.id).sort()).toEqual(onDisk);
    // Each server sees the other's writes and the CLI's.
    for (const s of [s1, s2]) {
      const listed = await ok(s, 'svc_list', { limit: 1000 });
      expect(listed.engrams.map((e: { id: string }) => e.id).sort()).toEqual(onDisk);
    }
    const one = await ok(s2, 'svc_recall', { query: 'an17' });
    expect(one.results[0].statement).toBe('Server a rule 17: keep token an17 in the shared fixture');
  }, 240_000);
});
