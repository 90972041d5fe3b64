import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildEngram } from '../ops/learn.js';
import { changeStatement } from '../ops/edit.js';
import type { EngramDoc } from '../model/engram-types.js';
import { MAX_SOURCES } from '../model/sources.js';
import { stringifyEngram } from '../store/engram-yaml.js';
import { mergeEngramDocs, planMerge, type MergeEntry } from '../store/sync-merge.js';
import { otherVersion, type ConflictRecord } from '../store/sync-conflicts.js';

// The sync merge as a plan, with no git and no disk: every rule on its own.

const AT = '2026-03-01T10:00:00.000Z';
const base = (): EngramDoc => ({
  ...buildEngram({ statement: 'Releases come from main', scope: 'global', visibility: 'private', tags: ['release'] }, AT, {
    scope: 'global',
    session_id: null,
    stored_at: AT,
  }),
  id: 'ENG-AAAA-2026-0301-001',
});
const file = (e: EngramDoc | null): Buffer | null => (e ? Buffer.from(stringifyEngram(e)) : null);
const ctx = { localIds: new Set<string>(), remoteCommit: 'abcdef0123456789', now: new Date('2026-03-02T00:00:00Z'), machine: 'AAAA' };
const path = 'engrams/ENG-AAAA-2026-0301-001.yaml';
const entry = (b: EngramDoc | null, l: EngramDoc | null, r: EngramDoc | null): MergeEntry => ({
  path,
  base: file(b),
  local: file(l),
  remote: file(r),
});
const tweak = (e: EngramDoc, f: (x: EngramDoc) => void): EngramDoc => {
  const x = structuredClone(e);
  f(x);
  return x;
};

describe('merging two versions of an engram', () => {
  it('adds up counters both machines raised, keeps the later timestamp, unites lists', () => {
    const b = base();
    const l = tweak(b, (x) => {
      x.feedback_signals = { positive: 1, negative: 0, neutral: 0 };
      x.reference_count = 3;
      x.tags = ['release', 'git'];
      x.activation = { ...x.activation!, frequency: 2, last_accessed: '2026-03-01T12:00:00.000Z' };
    });
    const r = tweak(b, (x) => {
      x.feedback_signals = { positive: 1, negative: 1, neutral: 0 };
      x.reference_count = 2;
      x.tags = ['release', 'tags'];
      x.activation = { ...x.activation!, frequency: 1, last_accessed: '2026-03-01T15:00:00.000Z' };
    });
    const { doc, clash } = mergeEngramDocs(b, l, r);
    expect(clash).toEqual([]);
    expect(doc.feedback_signals).toEqual({ positive: 2, negative: 1, neutral: 0 });
    expect(doc.reference_count).toBe(4);
    expect(doc.tags).toEqual(['release', 'git', 'tags']);
    expect(doc.activation).toMatchObject({ frequency: 3, last_accessed: '2026-03-01T15:00:00.000Z' });
  });

  it('adds up the counters of two machines that made the very same change (byte-identical files)', () => {
    const b = base();
    const both = tweak(b, (x) => {
      x.feedback_signals = { positive: 1, negative: 0, neutral: 0 };
      x.activation = { ...x.activation!, frequency: 1, last_accessed: '2026-03-01T12:00:00.000Z' };
    });
    const plan = planMerge([entry(b, both, structuredClone(both))], ctx);
    const written = plan.write.find((w) => w.path === path) ?? plan.stage.find((s) => s.path === path);
    const doc = parse(String((written as { data: Buffer }).data)) as EngramDoc;
    expect(doc.feedback_signals).toEqual({ positive: 2, negative: 0, neutral: 0 });
    expect(doc.activation!.frequency).toBe(2);
    expect(plan.conflicts).toEqual([]);
  });

  it('takes a field changed on one side, and calls a field both changed differently a clash, keeping the local value', () => {
    const b = base();
    const l = tweak(b, (x) => changeStatement(x, 'Releases come from tags', AT));
    const r = tweak(b, (x) => {
      changeStatement(x, 'Releases come from release branches', AT);
      x.domain = 'release.process';
    });
    const { doc, clash } = mergeEngramDocs(b, l, r);
    expect(clash).toEqual(['statement']);
    expect(doc).toMatchObject({ statement: 'Releases come from tags', content_hash: l.content_hash, domain: 'release.process' });
  });

  it('bounds the union of two sources lists as learn does', () => {
    const b = base();
    const src = (i: number) => ({
      scope: 'global',
      session_id: null,
      stored_at: `2026-03-0${1 + (i % 2)}T10:${String(i).padStart(2, '0')}:00.000Z`,
    });
    const l = tweak(b, (x) => (x.sources = [...x.sources!, ...Array.from({ length: 15 }, (_, i) => src(i))]));
    const r = tweak(b, (x) => (x.sources = [...x.sources!, ...Array.from({ length: 15 }, (_, i) => src(i + 20))]));
    const { doc } = mergeEngramDocs(b, l, r);
    expect(doc.sources).toHaveLength(MAX_SOURCES);
    expect(doc.sources![0]).toEqual(b.sources![0]);
    expect(doc.sources_omitted).toBe(31 - MAX_SOURCES);
  });
});

describe('the merge plan', () => {
  it('takes a file changed remotely only, and keeps one changed locally only', () => {
    const b = base();
    const r = tweak(b, (x) => (x.domain = 'ops'));
    const plan = planMerge([entry(b, b, r)], ctx);
    expect(plan.write.map((w) => w.path)).toEqual([path]);
    expect(plan.pulled).toEqual({ files: 1, engrams: 1, removed: 0 });
    expect(plan.tookRemote).toBe(true);
    const mine = planMerge(
      [
        entry(
          b,
          tweak(b, (x) => (x.domain = 'mine')),
          b,
        ),
      ],
      ctx,
    );
    expect(mine.write).toEqual([]);
    expect(mine.tookRemote).toBe(false);
  });

  it("writes a conflict record that keeps the other machine's statement, to be synced", () => {
    const b = base();
    const l = tweak(b, (x) => changeStatement(x, 'Releases come from tags', AT));
    const r = tweak(b, (x) => changeStatement(x, 'Releases come from release branches', AT));
    const plan = planMerge([entry(b, l, r)], ctx);
    expect(plan.conflicts).toEqual([
      expect.objectContaining({
        kind: 'edited-on-both',
        fields: ['statement'],
        record: expect.stringMatching(/^conflicts\/ENG-AAAA-2026-0301-001-[0-9a-f]{8}\.yaml$/),
      }),
    ]);
    const rec = plan.write.find((w) => w.path.startsWith('conflicts/'))!;
    expect(plan.stage.some((s) => s.path === rec.path)).toBe(true);
    const record = parse(rec.data.toString()) as ConflictRecord;
    expect(record).toMatchObject({
      engram_id: b.id,
      fields: ['statement'],
      other: { statement: 'Releases come from release branches' },
      kept: { statement: 'Releases come from tags' },
      detected_on: 'AAAA',
      other_commit: 'abcdef0',
    });
    expect(parse(otherVersion(record).toString()).statement).toBe('Releases come from release branches');
  });

  it('keeps a non-engram file changed on both sides, and records the other version whole', () => {
    const plan = planMerge(
      [{ path: 'config.yaml', base: Buffer.from('a: 1\n'), local: Buffer.from('a: 2\n'), remote: Buffer.from([0, 1, 2, 255]) }],
      ctx,
    );
    expect(plan.stage).toEqual([
      { path: 'config.yaml', data: Buffer.from('a: 2\n') },
      expect.objectContaining({ path: expect.stringMatching(/^conflicts\/config\.yaml-/) }),
    ]);
    const record = parse(plan.write[0]!.data.toString()) as ConflictRecord;
    expect(otherVersion(record)).toEqual(Buffer.from([0, 1, 2, 255]));
  });

  it('unites log lines, keeps a file deleted on one side and changed on the other, and never stages a local engram', () => {
    const log = 'episodes/2026-03-01.jsonl';
    const line = (s: string) => JSON.stringify({ at: AT, summary: s }) + '\n';
    const b = base();
    const b2 = { ...base(), id: 'ENG-AAAA-2026-0301-002' };
    const path2 = 'engrams/ENG-AAAA-2026-0301-002.yaml';
    const local = tweak(b2, (x) => (x.scope = 'local'));
    const plan = planMerge(
      [
        { path: log, base: Buffer.from(line('a')), local: Buffer.from(line('a') + line('b')), remote: Buffer.from(line('a') + line('c')) },
        entry(
          b,
          tweak(b, (x) => (x.domain = 'x')),
          null,
        ),
        { path: path2, base: file(b2), local: file(local), remote: file(tweak(b2, (x) => (x.domain = 'remote'))) },
      ],
      ctx,
    );
    expect(plan.merged_logs).toEqual([log]);
    expect(
      plan.write
        .find((w) => w.path === log)!
        .data.toString()
        .trim()
        .split('\n'),
    ).toHaveLength(3);
    expect(plan.conflicts.map((c) => c.kind)).toEqual(['deleted-remotely']);
    // The local engram's merge (its scope here, the remote's domain) is written here but stays out of the commit.
    expect(plan.merged_engrams).toEqual([b2.id]);
    expect(plan.stage.filter((s) => s.path === path2)).toEqual([{ path: path2, remove: true }]);
  });
});
