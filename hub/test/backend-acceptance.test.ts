import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EngramBackend } from '../../engine/backend.js';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { MAX_SOURCES } from '../../engine/model/sources.js';
import { editEngram } from '../../engine/ops/edit.js';
import { recall } from '../../engine/ops/recall.js';
import { inject } from '../../engine/ops/inject.js';
import { forget } from '../../engine/ops/forget.js';
import { feedback } from '../../engine/ops/feedback.js';
import { promote } from '../../engine/ops/promote.js';
import { pin } from '../../engine/ops/pin.js';
import { batchDecay } from '../../engine/ops/decay.js';
import { capture, timeline } from '../../engine/ops/episodes.js';
import { endSession, startSession } from '../../engine/ops/sessions.js';
import { history } from '../../engine/ops/history.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';
import { loadEmbedder } from '../../engine/embed/fastembed-embedder.js';
import { modelFolder } from '../../engine/embed/model-layout.js';
import { createOrg } from '../data/organizations.js';
import { openOrgBackend } from '../data/pg-backend.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// One engine, two backends: the same operations, the same assertions, on the local store (YAML +
// SQLite) and on an organization's PostgreSQL schema (PGlite and a PostgreSQL server).

const ctx = (iso = '2026-03-01T10:00:00.000Z') => ({ now: () => new Date(iso), sessionId: null });

describe.each(['local', ...DATABASES] as const)('the engine on the %s backend', (kind) => {
  let backend: EngramBackend;
  let close: () => Promise<void>;

  beforeAll(async () => {
    if (kind === 'local') {
      const store = await LocalStore.open(join(mkdtempSync(join(tmpdir(), 'svc-accept-')), 'store'));
      backend = store;
      close = async () => store.close();
    } else {
      const t: TestDatabase = await freshDatabase(kind);
      backend = openOrgBackend(t.db, await createOrg(t.db, 'accept'), null);
      close = () => t.close();
    }
  }, 60_000);
  afterAll(async () => close?.());

  it('learns with content-hash dedup: reference count at one scope, recurrence across scopes', async () => {
    const a = await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:web', tags: ['build'] }, ctx());
    expect(a.action).toBe('created');
    const again = await learn(backend, { statement: '  use PNPM, never npm. ', scope: 'project:web' }, ctx());
    expect(again).toMatchObject({ action: 'deduplicated', engram: { id: a.engram.id, reference_count: 2 } });
    const other = await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:api' }, ctx());
    expect(other.action).toBe('created');
    expect(other.recurrences).toEqual([a.engram.id]);
    expect((await backend.get(a.engram.id))!.recurrence_count).toBe(1);
    expect((await backend.findByHash(a.engram.content_hash!)).map((e) => e.id).sort()).toEqual([a.engram.id, other.engram.id].sort());
  });

  it('guards secrets by the backend\'s policy, and links supersessions both ways', async () => {
    const secret = { statement: 'The staging token is ghp_abcdefghijklmnopqrstuvwxyz0123456789', scope: 'project:web' };
    if (kind === 'local') {
      // The local store keeps it, on this machine only.
      const s = await learn(backend, secret, ctx());
      expect(s.engram.scope).toBe('local');
      expect(s.warnings.join()).toMatch(/secret/);
    } else {
      // The hub keeps none: refused, nothing written.
      const before = (await backend.stats()).engrams;
      await expect(learn(backend, secret, ctx())).rejects.toThrow(/holds a secret \(github-token|this store does not keep secrets/);
      expect((await backend.stats()).engrams).toBe(before);
    }
    const old = await learn(backend, { statement: 'Deploy with the old script', scope: 'project:web' }, ctx());
    const next = await learn(backend, { statement: 'Deploy with the pipeline', scope: 'project:web', supersedes: [old.engram.id] }, ctx());
    expect((await backend.get(old.engram.id))!.relations?.superseded_by).toEqual([next.engram.id]);
    expect(next.engram.relations?.supersedes).toEqual([old.engram.id]);
  });

  it('edits in place: a material statement change is a new version, a cosmetic one is not', async () => {
    const e = await learn(backend, { statement: 'Always tag releases', scope: 'project:web' }, ctx());
    const cosmetic = await editEngram(backend, e.engram.id, { statement: 'always tag releases.' }, ctx('2026-03-01T11:00:00.000Z'));
    expect(cosmetic).toMatchObject({ statement: 'always tag releases.', engram_version: 1, content_hash: e.engram.content_hash });
    const changed = await editEngram(backend, e.engram.id, { statement: 'Never tag releases by hand', commitment: 'locked', domain: 'release' }, ctx('2026-03-01T12:00:00.000Z'));
    expect(changed).toMatchObject({
      engram_version: 2,
      polarity: 'dont',
      domain: 'release',
      locked_at: '2026-03-01T12:00:00.000Z',
      previous_version_ref: { event_id: `${e.engram.id}@1`, changed_at: '2026-03-01T12:00:00.000Z' },
    });
    expect(changed.content_hash).not.toBe(e.engram.content_hash);
    expect(await backend.findByHash(changed.content_hash!)).toEqual([expect.objectContaining({ id: e.engram.id })]);
    expect((await editEngram(backend, e.engram.id, { domain: null }, ctx())).domain).toBeUndefined();
    await expect(editEngram(backend, e.engram.id, { statement: 'token ghp_abcdefghijklmnopqrstuvwxyz0123456789' }, ctx())).rejects.toThrow(/holds a secret/);
    await expect(editEngram(backend, e.engram.id, { tags: ['x'] }, ctx(), { authorize: () => { throw new Error('refused by the caller'); } })).rejects.toThrow(/refused by the caller/);
    expect((await backend.get(e.engram.id))!.tags).toEqual([]);
    await forget(backend, { target: e.engram.id }, ctx());
    await expect(editEngram(backend, e.engram.id, { tags: ['x'] }, ctx())).rejects.toThrow(/is retired/);
  });

  it('keeps sources bounded: the first and the newest writes, the rest counted', async () => {
    for (let i = 0; i < 30; i++) await learn(backend, { statement: 'Bounded sources rule', scope: 'project:web' }, ctx(`2026-03-02T10:00:${String(i).padStart(2, '0')}.000Z`));
    const [e] = await backend.findByHash((await learn(backend, { statement: 'Bounded sources rule', scope: 'project:web' }, ctx('2026-03-02T10:01:00.000Z'))).engram.content_hash!);
    expect(e!.reference_count).toBe(31);
    expect(e!.sources).toHaveLength(MAX_SOURCES);
    expect(e!.sources_omitted).toBe(31 - MAX_SOURCES);
    expect(e!.sources![0]!.stored_at).toBe('2026-03-02T10:00:00.000Z');
    expect(e!.sources!.at(-1)!.stored_at).toBe('2026-03-02T10:01:00.000Z');
  });

  it('recalls by BM25 with the lifecycle applied, and injects within a budget', async () => {
    await learn(backend, { statement: 'Run the database migrations before each deploy', scope: 'project:web', domain: 'db' }, ctx());
    const r = await recall(backend, 'database migrations deploy', { limit: 5, fast: true, now: new Date('2026-03-02T00:00:00Z') });
    expect(r.legs.bm25).toBe('ran');
    expect(r.hits[0]!.engram.statement).toBe('Run the database migrations before each deploy');
    const inj = await inject(backend, 'deploy the database migrations', { budget: 200, fast: true, now: new Date('2026-03-02T00:00:00Z') });
    expect(inj.tokens).toBeLessThanOrEqual(200);
    expect(inj.text).toContain('Run the database migrations before each deploy');
  });

  it('retires without deleting, counts feedback, promotes candidates (never retired ones), pins', async () => {
    const c = await learn(backend, { statement: 'Prefer table-driven tests', scope: 'project:web', status: 'candidate' }, ctx());
    expect((await promote(backend, c.engram.id, ctx())).status).toBe('active');
    const [fb] = await feedback(backend, [{ id: c.engram.id, signal: 'positive' }], ctx());
    expect(fb!.feedback_signals).toMatchObject({ positive: 1, negative: 0 });
    expect((await pin(backend, c.engram.id, true, ctx())).pinned).toBe(true);
    const f = await forget(backend, { target: c.engram.id, reason: 'obsolete' }, ctx());
    expect(f.action).toBe('retired');
    const retired = await backend.get(c.engram.id);
    expect(retired).toMatchObject({ status: 'retired', reference_count: 0 });
    await expect(promote(backend, c.engram.id, ctx())).rejects.toThrow(/retired/);
    expect((await recall(backend, 'table-driven tests', { fast: true })).hits.map((h) => h.engram.id)).not.toContain(c.engram.id);
    const h = await history(backend, c.engram.id);
    expect(h.map((e) => e.action)).toEqual(['created', 'promoted', 'feedback', 'pinned', 'retired']);
  });

  it('decays unused engrams to dormant, once per period', async () => {
    const d = await learn(backend, { statement: 'An old habit nobody uses', scope: 'project:old' }, ctx('2024-01-01T00:00:00.000Z'));
    const first = await batchDecay(backend, {}, ctx('2026-06-01T00:00:00.000Z'));
    expect(first.decayed).toBeGreaterThan(0);
    expect((await backend.get(d.engram.id))!.status).toBe('dormant');
    const second = await batchDecay(backend, {}, ctx('2026-06-01T00:00:00.000Z'));
    expect(second.decayed).toBe(0);
  });

  it('captures episodes, filters the timeline, and runs sessions with their learnings', async () => {
    const e1 = await capture(backend, { summary: 'Moved CI to the new runners', agent: 'claude', channel: 'ci' }, ctx('2026-03-01T10:00:00.000Z'));
    await capture(backend, { summary: 'Reviewed the pricing page', agent: 'cursor' }, ctx('2026-03-02T10:00:00.000Z'));
    expect((await timeline(backend, { query: 'runners' })).map((e) => e.id)).toEqual([e1.id]);
    expect((await timeline(backend, { agent: 'cursor' })).map((e) => e.summary)).toEqual(['Reviewed the pricing page']);
    expect(await timeline(backend, { from: '2026-03-02T00:00:00.000Z' })).toHaveLength(1);
    const s = await startSession(backend, { task: 'deploy the database', agent: 'claude', scope: 'project:web', fast: true }, ctx());
    expect(s.session.status).toBe('open');
    const end = await endSession(backend, s.session.id, { summary: 'done', learnings: [{ statement: 'Snapshot the database before deploys', scope: 'project:web' }] }, ctx());
    expect(end.session.status).toBe('ended');
    expect(end.learned[0]!.engram.sources?.[0]?.session_id).toBe(s.session.id);
    expect((await backend.getSession(s.session.id))!.engram_ids).toContain(end.learned[0]!.engram.id);
  });

  it('runs the dense leg: embeds what is pending, finds by meaning, fuses with BM25', async () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-accept-model-'));
    writeTinyModel(modelFolder(root, 'bge-small-en-v1.5'), { synonyms: [['automobile', 'car'], ['physician', 'doctor']] });
    const state = await loadEmbedder(root, { download: false, progress: false, env: {} });
    expect(state.state).toBe('ready');
    if (state.state !== 'ready') return;
    const car = await learn(backend, { statement: 'Park the car in the back lot', scope: 'project:dense' }, ctx());
    await learn(backend, { statement: 'Ask a doctor before changing the dose', scope: 'project:dense' }, ctx());
    if (kind !== 'local') {
      const { PgBackend } = await import('../data/pg-backend.js');
      const path = await (backend as InstanceType<typeof PgBackend>).vectorPath();
      // PGlite has pgvector; this machine's PostgreSQL server does not (either path must be right).
      if (kind === 'pglite') expect(path).toBe('pgvector');
      console.log(`hub backend on ${kind}: vectors through ${path}`);
    }
    expect(await backend.embedPending(state.embedder)).toBeGreaterThan(2);
    expect(await backend.embedPending(state.embedder)).toBe(0);
    const vector = await state.embedder.embedQuery('automobile');
    const [top] = await backend.searchVector(vector, 3, state.model);
    expect(top!.engram.id).toBe(car.engram.id);
    const r = await recall(backend, 'automobile', { limit: 3, embedder: state });
    expect(r.legs.vector).toBe('ran');
    expect(r.hits[0]!.engram.id).toBe(car.engram.id);
    expect(r.hits[0]!.found_by).toEqual(['vector']);
    // A retired engram is never a vector hit.
    await forget(backend, { target: car.engram.id }, ctx());
    expect((await backend.searchVector(vector, 10, state.model)).map((h) => h.engram.id)).not.toContain(car.engram.id);
  });

  it('counts what it holds', async () => {
    const st = await backend.stats();
    expect(st.engrams).toBeGreaterThan(8);
    expect(st.by_status.retired).toBeGreaterThanOrEqual(1);
    // Two captured, and the session's start and end.
    expect(st.episodes).toBe(4);
    expect(st.sessions).toBe(1);
  });
});
