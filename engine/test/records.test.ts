import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { capture, episodeToEngram, timeline } from '../ops/episodes.js';
import { endSession, sessionScope, startSession } from '../ops/sessions.js';
import { history, receipts, recordInjection } from '../ops/history.js';
import { learn } from '../ops/learn.js';
import { feedback } from '../ops/feedback.js';
import { forget } from '../ops/forget.js';
import { pin } from '../ops/pin.js';
import { inject } from '../ops/inject.js';
import type { OpContext } from '../ops/context.js';

let root: string;
let store: LocalStore;
let clock = Date.parse('2026-04-01T09:00:00Z');
const ctx: OpContext = { now: () => new Date((clock += 1000)) };

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-records-')), 'store');
  store = await LocalStore.open(root);
});
afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

const reopen = async (): Promise<void> => {
  store.close();
  store = await LocalStore.open(root);
};

describe('episodes', () => {
  it('captures and filters the timeline by query, agent, channel, session and time', async () => {
    const a = await capture(store, { summary: 'Migrated the billing tables to Postgres', agent: 'claude', session: 'SES-1' }, ctx);
    await capture(store, { summary: 'Fixed a flaky checkout test', agent: 'cursor', channel: 'tool' }, ctx);
    const c = await capture(store, { summary: 'Reviewed the billing invoice layout', channel: 'review', session: 'SES-1' }, ctx);
    expect(c.agent).toBe('cli');
    expect((await timeline(store, {})).map((e) => e.id)[0]).toBe(c.id); // newest first
    expect((await timeline(store, { query: 'billing' })).map((e) => e.id).sort()).toEqual([a.id, c.id].sort());
    expect((await timeline(store, { agent: 'cursor' })).map((e) => e.summary)).toEqual(['Fixed a flaky checkout test']);
    expect((await timeline(store, { channel: 'review' })).map((e) => e.id)).toEqual([c.id]);
    expect((await timeline(store, { session: 'SES-1' })).map((e) => e.id)).toEqual([c.id, a.id]);
    expect((await timeline(store, { from: c.at })).map((e) => e.id)).toEqual([c.id]);
    expect((await timeline(store, { to: a.at })).map((e) => e.id)).toEqual([a.id]);
    expect(await timeline(store, { limit: 1 })).toHaveLength(1);
    await expect(timeline(store, { from: 'yesterday-ish' })).rejects.toThrow(/from: must be a date/);
    await expect(capture(store, { summary: '   ' }, ctx)).rejects.toThrow(/summary: must not be empty/);
  });

  it('defaults to 20 episodes', async () => {
    for (let i = 0; i < 25; i++) await capture(store, { summary: `Step ${i}` }, ctx);
    expect(await timeline(store, {})).toHaveLength(20);
  });

  it('ignores a line torn by a killed writer, and the next append repairs the file', async () => {
    const first = await capture(store, { summary: 'Before the crash' }, ctx);
    const dir = join(root, 'episodes');
    const file = join(dir, readdirSync(dir)[0]!);
    appendFileSync(file, '{"id":"EP-TORN","at":"2026-04-01T09:0'); // no newline: never acknowledged
    await reopen();
    expect((await timeline(store, {})).map((e) => e.id)).toEqual([first.id]);
    const after = await capture(store, { summary: 'After the crash' }, ctx);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l).id)).toEqual([first.id, after.id]);
  });

  it('rebuilds episodes and history from the logs when the index is lost, and reindexes a rewritten log', async () => {
    const e = await capture(store, { summary: 'Deployed version 2' }, ctx);
    const l = await learn(store, { statement: 'Deploys need a changelog entry' }, ctx);
    store.close();
    for (const f of ['index.db', 'index.db-wal', 'index.db-shm']) rmSync(join(root, f), { force: true });
    store = await LocalStore.open(root);
    expect((await timeline(store, {})).map((x) => x.id)).toEqual([e.id]);
    expect((await history(store, l.engram.id)).map((x) => x.action)).toEqual(['created']);
    // A git checkout replaces the log with a shorter one.
    const dir = join(root, 'episodes');
    writeFileSync(join(dir, readdirSync(dir)[0]!), JSON.stringify({ ...e, id: 'EP-OTHER', summary: 'Pulled from elsewhere' }) + '\n');
    expect((await timeline(store, {})).map((x) => x.id)).toEqual(['EP-OTHER']);
  });

  it('turns an episode into an engram that remembers it', async () => {
    const e = await capture(store, { summary: 'Always pin dependency versions in Dockerfiles', session: 'SES-9' }, ctx);
    const r = await episodeToEngram(store, e.id, { domain: 'docker' }, ctx);
    expect(r.engram).toMatchObject({ statement: e.summary, domain: 'docker', episode_ids: [e.id] });
    expect(r.engram.sources![0]!.session_id).toBe('SES-9');
    await expect(episodeToEngram(store, 'EP-NONE', {}, ctx)).rejects.toThrow(/no episode EP-NONE/);
  });
});

describe('sessions', () => {
  it('start injects for the task; end learns, suggests and closes', async () => {
    const known = await learn(store, { statement: 'Never edit generated protobuf files' }, ctx);
    const started = await startSession(
      store,
      { task: 'update the protobuf definitions', agent: 'claude', scope: 'project:api', fast: true },
      ctx,
    );
    expect(started.session).toMatchObject({ status: 'open', agent: 'claude', scope: 'project:api', engram_ids: [known.engram.id] });
    expect(started.injection.blocks.constraints.map((e) => e.id)).toEqual([known.engram.id]);
    expect(started.writable_scopes).toEqual(['project:api', 'global', 'local']);

    await capture(
      store,
      { summary: 'User: no, regenerate with buf instead of protoc', channel: 'correction', session: started.session.id },
      ctx,
    );
    const ended = await endSession(
      store,
      started.session.id,
      {
        summary: 'Updated the API schema. Prefer buf generate over protoc. Never edit generated protobuf files.',
        learnings: [{ statement: 'Run buf lint before committing proto changes' }],
      },
      ctx,
    );
    expect(ended.session.status).toBe('ended');
    expect(ended.learned[0]!.engram).toMatchObject({ scope: 'project:api', statement: 'Run buf lint before committing proto changes' });
    expect(ended.learned[0]!.engram.sources![0]!.session_id).toBe(started.session.id);
    expect(ended.suggested).toEqual(['User: no, regenerate with buf instead of protoc', 'Prefer buf generate over protoc.']);
    expect(ended.session.engram_ids).toContain(ended.learned[0]!.engram.id);
    await expect(endSession(store, started.session.id, {}, ctx)).rejects.toThrow(/already ended/);
    const moved = await sessionScope(store, started.session.id, { scope: 'project:web' });
    expect(moved.scope).toBe('project:web');
    expect((await timeline(store, { session: started.session.id, channel: 'session' })).map((e) => e.summary)).toEqual([
      'Session ended: Updated the API schema. Prefer buf generate over protoc. Never edit generated protobuf files.',
      'Session started: update the protobuf definitions',
    ]);
    expect((await store.stats()).sessions).toBe(1);
  });
});

describe('history and receipts', () => {
  it('records each change of an engram, oldest first', async () => {
    const a = await learn(store, { statement: 'Use feature branches' }, ctx);
    await learn(store, { statement: 'use feature branches.' }, ctx);
    await feedback(store, [{ id: a.engram.id, signal: 'positive' }], ctx);
    await pin(store, a.engram.id, true, ctx);
    await forget(store, { target: a.engram.id, reason: 'trunk-based now' }, ctx);
    const events = await history(store, a.engram.id);
    expect(events.map((e) => e.action)).toEqual(['created', 'deduplicated', 'feedback', 'pinned', 'retired']);
    expect(events[2]!.details).toEqual({ signal: 'positive' });
    expect(events[4]!.details).toEqual({ reason: 'trunk-based now' });
    expect(events[1]!.changed).toEqual(expect.arrayContaining(['reference_count', 'sources']));
    await expect(history(store, 'ENG-NOPE-2026-0101-001')).rejects.toThrow(/no engram/);
  });

  it('tells what was injected, when, and whether it was used', async () => {
    const a = await learn(store, { statement: 'Prefer composition over inheritance in components' }, ctx);
    const b = await learn(store, { statement: 'Component names use PascalCase' }, ctx);
    const r = await inject(store, 'write a new component', { fast: true });
    await recordInjection(store, r, { session: 'SES-7', at: ctx.now() });
    await feedback(store, [{ id: a.engram.id, signal: 'positive' }], { ...ctx, sessionId: 'SES-7' });
    const [receipt] = await receipts(store, { session: 'SES-7' });
    expect(receipt!.engram_ids.sort()).toEqual([a.engram.id, b.engram.id].sort());
    expect(receipt!.used).toEqual({ [a.engram.id]: 'positive', [b.engram.id]: null });
    expect(receipt!.task).toBe('write a new component');
    expect((await receipts(store, { engram_id: b.engram.id })).length).toBe(1);
    expect((await store.stats()).injection_events).toBe(1);
  });
});
