import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EngramBackend } from '../../backend.js';
import { learn } from '../../ops/learn.js';
import { MAX_SOURCES } from '../../model/sources.js';
import { editEngram } from '../../ops/edit.js';
import { recall } from '../../ops/recall.js';
import { inject } from '../../ops/inject.js';
import { forget } from '../../ops/forget.js';
import { feedback } from '../../ops/feedback.js';
import { promote } from '../../ops/promote.js';
import { pin } from '../../ops/pin.js';
import { batchDecay } from '../../ops/decay.js';
import { capture, timeline } from '../../ops/episodes.js';
import { endSession, startSession } from '../../ops/sessions.js';
import { history } from '../../ops/history.js';
import { writeTinyModel } from '../../embed/tiny-model.js';
import { loadEmbedder } from '../../embed/fastembed-embedder.js';
import { modelFolder } from '../../embed/model-layout.js';

// The engine's contract (engine/backend.ts) as a suite any backend runs: the same operations, the
// same assertions, whatever keeps the engrams. Modelled on automerge-repo's
// runStorageAdapterTests (the suite is exported, each backend's test file calls it with a setup)
// and on hono's common test cases (a backend that cannot run a case says which and why).
//
//   runBackendContract('the local store', async () => {
//     const store = await LocalStore.open(freshFolder());
//     return { backend: store, teardown: async () => store.close() };
//   });
//
// Every case gets a fresh backend from `setup` and hands it to `teardown` after, so cases never
// depend on each other and any of them can be skipped. Callers: engine/test/backend-contract.test.ts
// (the local store, the multi-store, the in-memory reference backend) and
// hub/test/backend-acceptance.test.ts (the hub's PostgreSQL backend on PGlite and PostgreSQL).

export interface ContractSubject {
  backend: EngramBackend;
  teardown(): Promise<void>;
}

/** The cases, by key: a backend skips one by naming it with the reason. */
export const CONTRACT_CASES = {
  dedup: 'learns with content-hash dedup: reference count at one scope, recurrence across scopes',
  secrets: "guards secrets by the backend's policy, and links supersessions both ways",
  edit: 'edits in place: a material statement change is a new version, a cosmetic one is not',
  sources: 'keeps sources bounded: the first and the newest writes, the rest counted',
  recall: 'recalls by BM25 with the lifecycle applied, and injects within a budget',
  lifecycle: 'retires without deleting, counts feedback, promotes candidates (never retired ones), pins',
  decay: 'decays unused engrams to dormant, once per period',
  records: 'captures episodes, filters the timeline, and runs sessions with their learnings',
  dense: 'runs the dense leg: embeds what is pending, finds by meaning, fuses with BM25',
  stats: 'counts what it holds',
  atomic: 'applies a unit of work whole or not at all, with fresh ids',
  list: 'lists by scope, domain (and its subdomains), status and pinning, newest learned first',
  log: 'keeps the records: episodes and sessions by id, change events oldest first (the newest when limited)',
} as const;

export type ContractCase = keyof typeof CONTRACT_CASES;

export interface ContractOptions {
  /** Cases this backend does not run, each with why; the reason is printed with the skipped case. */
  skip?: Partial<Record<ContractCase, string>>;
  /** Called in the dense case once engrams exist, before they are embedded (the hub reports its vector path). */
  beforeEmbedding?(backend: EngramBackend): Promise<void>;
  /** Per case, setup included (default 30 s). */
  timeout?: number;
}

const ctx = (iso = '2026-03-01T10:00:00.000Z') => ({ now: () => new Date(iso), sessionId: null });

/** Registers the contract's cases in a `describe` named after the backend. */
export function runBackendContract(name: string, setup: () => Promise<ContractSubject>, options: ContractOptions = {}): void {
  describe(`the engine contract on ${name}`, () => {
    let subject: ContractSubject | undefined;
    let backend: EngramBackend;
    const timeout = options.timeout ?? 30_000;

    beforeEach(async () => {
      subject = await setup();
      backend = subject.backend;
    }, timeout);
    afterEach(async () => {
      await subject?.teardown();
      subject = undefined;
    });

    const test = (key: ContractCase, fn: () => Promise<void>) => {
      const reason = options.skip?.[key];
      if (reason) it.skip(`${CONTRACT_CASES[key]} (skipped: ${reason})`, fn);
      else it(CONTRACT_CASES[key], fn, timeout);
    };

    test('dedup', async () => {
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

    test('secrets', async () => {
      const secret = { statement: 'The staging token is ghp_abcdefghijklmnopqrstuvwxyz0123456789', scope: 'project:web' };
      if ((backend.secretPolicy ?? 'keep-local') === 'keep-local') {
        // Kept, on this machine only.
        const s = await learn(backend, secret, ctx());
        expect(s.engram.scope).toBe('local');
        expect(s.warnings.join()).toMatch(/secret/);
      } else {
        // Refused, nothing written.
        const before = (await backend.stats()).engrams;
        await expect(learn(backend, secret, ctx())).rejects.toThrow(/holds a secret \(github-token|this store does not keep secrets/);
        expect((await backend.stats()).engrams).toBe(before);
      }
      const old = await learn(backend, { statement: 'Deploy with the old script', scope: 'project:web' }, ctx());
      const next = await learn(
        backend,
        { statement: 'Deploy with the pipeline', scope: 'project:web', supersedes: [old.engram.id] },
        ctx(),
      );
      expect((await backend.get(old.engram.id))!.relations?.superseded_by).toEqual([next.engram.id]);
      expect(next.engram.relations?.supersedes).toEqual([old.engram.id]);
    });

    test('edit', async () => {
      const e = await learn(backend, { statement: 'Always tag releases', scope: 'project:web' }, ctx());
      const cosmetic = await editEngram(backend, e.engram.id, { statement: 'always tag releases.' }, ctx('2026-03-01T11:00:00.000Z'));
      expect(cosmetic).toMatchObject({ statement: 'always tag releases.', engram_version: 1, content_hash: e.engram.content_hash });
      const changed = await editEngram(
        backend,
        e.engram.id,
        { statement: 'Never tag releases by hand', commitment: 'locked', domain: 'release' },
        ctx('2026-03-01T12:00:00.000Z'),
      );
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
      await expect(
        editEngram(backend, e.engram.id, { statement: 'token ghp_abcdefghijklmnopqrstuvwxyz0123456789' }, ctx()),
      ).rejects.toThrow(/holds a secret/);
      await expect(
        editEngram(backend, e.engram.id, { tags: ['x'] }, ctx(), {
          authorize: () => {
            throw new Error('refused by the caller');
          },
        }),
      ).rejects.toThrow(/refused by the caller/);
      expect((await backend.get(e.engram.id))!.tags).toEqual([]);
      await forget(backend, { target: e.engram.id }, ctx());
      await expect(editEngram(backend, e.engram.id, { tags: ['x'] }, ctx())).rejects.toThrow(/is retired/);
    });

    test('sources', async () => {
      for (let i = 0; i < 30; i++)
        await learn(
          backend,
          { statement: 'Bounded sources rule', scope: 'project:web' },
          ctx(`2026-03-02T10:00:${String(i).padStart(2, '0')}.000Z`),
        );
      const [e] = await backend.findByHash(
        (await learn(backend, { statement: 'Bounded sources rule', scope: 'project:web' }, ctx('2026-03-02T10:01:00.000Z'))).engram
          .content_hash!,
      );
      expect(e!.reference_count).toBe(31);
      expect(e!.sources).toHaveLength(MAX_SOURCES);
      expect(e!.sources_omitted).toBe(31 - MAX_SOURCES);
      expect(e!.sources![0]!.stored_at).toBe('2026-03-02T10:00:00.000Z');
      expect(e!.sources!.at(-1)!.stored_at).toBe('2026-03-02T10:01:00.000Z');
    });

    test('recall', async () => {
      // Others around it, so that BM25 has something to rank against.
      await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:web' }, ctx());
      await learn(backend, { statement: 'Deploy with the pipeline', scope: 'project:web' }, ctx());
      await learn(backend, { statement: 'Run the database migrations before each deploy', scope: 'project:web', domain: 'db' }, ctx());
      const r = await recall(backend, 'database migrations deploy', { limit: 5, fast: true, now: new Date('2026-03-02T00:00:00Z') });
      expect(r.legs.bm25).toBe('ran');
      expect(r.hits[0]!.engram.statement).toBe('Run the database migrations before each deploy');
      const inj = await inject(backend, 'deploy the database migrations', {
        budget: 200,
        fast: true,
        now: new Date('2026-03-02T00:00:00Z'),
      });
      expect(inj.tokens).toBeLessThanOrEqual(200);
      expect(inj.text).toContain('Run the database migrations before each deploy');
    });

    test('lifecycle', async () => {
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

    test('decay', async () => {
      const d = await learn(backend, { statement: 'An old habit nobody uses', scope: 'project:old' }, ctx('2024-01-01T00:00:00.000Z'));
      const first = await batchDecay(backend, {}, ctx('2026-06-01T00:00:00.000Z'));
      expect(first.decayed).toBeGreaterThan(0);
      expect((await backend.get(d.engram.id))!.status).toBe('dormant');
      const second = await batchDecay(backend, {}, ctx('2026-06-01T00:00:00.000Z'));
      expect(second.decayed).toBe(0);
    });

    test('records', async () => {
      const e1 = await capture(
        backend,
        { summary: 'Moved CI to the new runners', agent: 'claude', channel: 'ci' },
        ctx('2026-03-01T10:00:00.000Z'),
      );
      await capture(backend, { summary: 'Reviewed the pricing page', agent: 'cursor' }, ctx('2026-03-02T10:00:00.000Z'));
      expect((await timeline(backend, { query: 'runners' })).map((e) => e.id)).toEqual([e1.id]);
      expect((await timeline(backend, { agent: 'cursor' })).map((e) => e.summary)).toEqual(['Reviewed the pricing page']);
      expect(await timeline(backend, { from: '2026-03-02T00:00:00.000Z' })).toHaveLength(1);
      await learn(backend, { statement: 'Run the database migrations before each deploy', scope: 'project:web' }, ctx());
      const s = await startSession(backend, { task: 'deploy the database', agent: 'claude', scope: 'project:web', fast: true }, ctx());
      expect(s.session.status).toBe('open');
      const end = await endSession(
        backend,
        s.session.id,
        { summary: 'done', learnings: [{ statement: 'Snapshot the database before deploys', scope: 'project:web' }] },
        ctx(),
      );
      expect(end.session.status).toBe('ended');
      expect(end.learned[0]!.engram.sources?.[0]?.session_id).toBe(s.session.id);
      expect((await backend.getSession(s.session.id))!.engram_ids).toContain(end.learned[0]!.engram.id);
    });

    test('dense', async () => {
      const root = mkdtempSync(join(tmpdir(), 'svc-contract-model-'));
      writeTinyModel(modelFolder(root, 'bge-small-en-v1.5'), {
        synonyms: [
          ['automobile', 'car'],
          ['physician', 'doctor'],
        ],
      });
      const state = await loadEmbedder(root, { download: false, progress: false, env: {} });
      expect(state.state).toBe('ready');
      if (state.state !== 'ready') return;
      const car = await learn(backend, { statement: 'Park the car in the back lot', scope: 'project:dense' }, ctx());
      await learn(backend, { statement: 'Ask a doctor before changing the dose', scope: 'project:dense' }, ctx());
      await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:web' }, ctx());
      await options.beforeEmbedding?.(backend);
      expect(await backend.embedPending(state.embedder)).toBe(3);
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

    test('stats', async () => {
      await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:web' }, ctx());
      const gone = await learn(backend, { statement: 'Deploy with the old script', scope: 'project:web' }, ctx());
      await forget(backend, { target: gone.engram.id }, ctx());
      await capture(backend, { summary: 'Moved CI to the new runners', agent: 'claude' }, ctx());
      await capture(backend, { summary: 'Reviewed the pricing page', agent: 'cursor' }, ctx());
      const s = await startSession(backend, { task: 'deploy', agent: 'claude', scope: 'project:web', fast: true }, ctx());
      await endSession(
        backend,
        s.session.id,
        { summary: 'done', learnings: [{ statement: 'Snapshot the database before deploys', scope: 'project:web' }] },
        ctx(),
      );
      const st = await backend.stats();
      expect(st.engrams).toBe(3);
      expect(st.by_status).toEqual({ active: 2, retired: 1 });
      // Two captured, and the session's start and end.
      expect(st.episodes).toBe(4);
      expect(st.sessions).toBe(1);
    });

    test('atomic', async () => {
      const now = new Date('2026-03-01T10:00:00.000Z');
      const base = (await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:web' }, ctx())).engram;
      // Two ids in one unit of work differ, and differ from what exists.
      const ids = await backend.write(async (tx) => [
        await tx.allocateId('ENG', now, 'project:web'),
        await tx.allocateId('ENG', now, 'project:web'),
      ]);
      expect(new Set([...ids, base.id]).size).toBe(3);
      // What a failing unit of work put is never seen, not even its history.
      const eventsBefore = (await backend.listEvents({})).length;
      await expect(
        backend.write(async (tx) => {
          await tx.put({ ...base, tags: ['changed'] });
          expect((await tx.get(base.id))!.tags).toEqual(['changed']);
          throw new Error('the caller gave up');
        }),
      ).rejects.toThrow(/the caller gave up/);
      expect((await backend.get(base.id))!.tags ?? []).toEqual([]);
      expect(await backend.listEvents({})).toHaveLength(eventsBefore);
      // A unit of work that returns is applied, with its event.
      const result = await backend.write(async (tx) => {
        await tx.put({ ...(await tx.get(base.id))!, tags: ['kept'] });
        return 'done';
      });
      expect(result).toBe('done');
      expect((await backend.get(base.id))!.tags).toEqual(['kept']);
      expect((await backend.listEvents({ engram_id: base.id })).map((e) => e.action)).toEqual(['created', 'updated']);
    });

    test('list', async () => {
      const at = (day: number) => ctx(`2026-03-0${day}T10:00:00.000Z`);
      const a = await learn(backend, { statement: 'Index the orders table by customer', scope: 'project:web', domain: 'db' }, at(1));
      const b = await learn(
        backend,
        { statement: 'Vacuum the events table weekly', scope: 'project:web', domain: 'db.maintenance' },
        at(2),
      );
      const c = await learn(backend, { statement: 'Prefer small pull requests', scope: 'project:api', domain: 'dbx' }, at(3));
      const d = await learn(backend, { statement: 'Review the on-call rota', scope: 'project:api' }, at(4));
      await pin(backend, c.engram.id, true, at(4));
      await forget(backend, { target: d.engram.id }, at(4));
      const ids = async (f: Parameters<EngramBackend['list']>[0]) => (await backend.list(f)).map((e) => e.id);
      expect(await ids({})).toEqual([c.engram.id, b.engram.id, a.engram.id]);
      expect(await ids({ includeRetired: true })).toEqual([d.engram.id, c.engram.id, b.engram.id, a.engram.id]);
      expect(await ids({ status: 'retired' })).toEqual([d.engram.id]);
      expect(await ids({ scope: 'project:web' })).toEqual([b.engram.id, a.engram.id]);
      expect(await ids({ domain: 'db' })).toEqual([b.engram.id, a.engram.id]);
      expect(await ids({ pinned: true })).toEqual([c.engram.id]);
      expect(await ids({ pinned: false })).toEqual([b.engram.id, a.engram.id]);
      expect(await ids({ limit: 2 })).toEqual([c.engram.id, b.engram.id]);
      expect(await ids({ idPrefix: a.engram.id })).toEqual([a.engram.id]);
    });

    test('log', async () => {
      expect(await backend.getEpisode('EP-NONE-2026-0301-00000000')).toBeNull();
      expect(await backend.getSession('SES-NONE-2026-0301-00000000')).toBeNull();
      const now = new Date('2026-03-01T10:00:00.000Z');
      const id = backend.recordId('EP', now);
      expect(id).toMatch(/^EP-[A-Z][A-Z0-9]+-2026-0301-[0-9a-f]{8}$/);
      expect(backend.recordId('EP', now)).not.toBe(id);
      await backend.appendEpisodes([{ id, at: now.toISOString(), summary: 'Tried the new runners', agent: 'claude' }]);
      expect(await backend.getEpisode(id)).toMatchObject({ id, summary: 'Tried the new runners', agent: 'claude' });
      const e = await learn(backend, { statement: 'Use pnpm, never npm', scope: 'project:web' }, ctx('2026-03-01T10:00:00.000Z'));
      await pin(backend, e.engram.id, true, ctx('2026-03-01T11:00:00.000Z'));
      await pin(backend, e.engram.id, false, ctx('2026-03-01T12:00:00.000Z'));
      await backend.appendEvents([{ at: '2026-03-01T13:00:00.000Z', action: 'injected', engram_ids: [e.engram.id], session: 'SES-X' }]);
      const actions = async (f: Parameters<EngramBackend['listEvents']>[0]) => (await backend.listEvents(f)).map((x) => x.action);
      expect(await actions({ engram_id: e.engram.id })).toEqual(['created', 'pinned', 'unpinned', 'injected']);
      expect(await actions({ engram_id: e.engram.id, limit: 2 })).toEqual(['unpinned', 'injected']);
      expect(await actions({ action: 'pinned' })).toEqual(['pinned']);
      expect(await actions({ session: 'SES-X' })).toEqual(['injected']);
      expect((await backend.stats()).injection_events).toBe(1);
    });
  });
}
