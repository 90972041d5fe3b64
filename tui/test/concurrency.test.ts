import { describe, it, expect } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CLI, svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';
import { validateEngram } from '../../engine/model/validate-engram.js';

// Real processes on one store: concurrent writers and writers killed with SIGKILL.

const engramFiles = (store: string): string[] =>
  readdirSync(join(store, 'engrams')).filter((f) => f.endsWith('.yaml') && !f.startsWith('.tmp-'));

/** What `node <args>` prints, once it exits 0. */
function nodeOutput(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`node exited ${code}: ${err}`))));
  });
}

function idsOnDisk(store: string): string[] {
  return engramFiles(store)
    .map((f) => {
      const doc = parse(readFileSync(join(store, 'engrams', f), 'utf8'));
      expect(validateEngram(doc).ok, `${f} is a valid engram`).toBe(true);
      expect(`${doc.id}.yaml`).toBe(f);
      return doc.id as string;
    })
    .sort();
}

async function listIds(store: string): Promise<string[]> {
  const { run, data } = await svcJson(['list', '--limit', '100000'], { store });
  expect(run.code).toBe(0);
  return (data.engrams as { id: string }[]).map((e) => e.id).sort();
}

describe('several processes on one store', () => {
  it('8 processes learning 20 engrams each leave exactly 160 engrams with 160 distinct ids', async () => {
    const store = tempStore('conc');
    await svc(['status'], { store }); // the store exists before the race, as it would for a user
    const worker = async (w: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const { run, data } = await svcJson(['learn', `Worker ${w} rule ${i}: keep token w${w}n${i} in shared fixture`], { store });
        expect(run.code, run.stderr).toBe(0);
        ids.push(data.id);
      }
      return ids;
    };
    const printed = (await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)))).flat();
    expect(printed).toHaveLength(160);
    expect(new Set(printed).size).toBe(160);

    const onDisk = idsOnDisk(store);
    expect(onDisk).toEqual([...printed].sort());
    expect(await listIds(store)).toEqual(onDisk);
    const { data } = await svcJson(['recall', 'shared fixture', '--limit', '1000'], { store });
    expect((data.results as { id: string }[]).map((r) => r.id).sort()).toEqual(onDisk);
    const one = await svcJson(['recall', 'w5n17'], { store });
    expect(one.data.results[0].statement).toBe('Worker 5 rule 17: keep token w5n17 in shared fixture');
  }, 240_000);

  it('writers killed with SIGKILL at random moments lose no acknowledged write, and the index converges', async () => {
    const store = tempStore('kill');
    await svc(['status'], { store });
    // Aim the kills across a whole learn, whatever this machine's speed and load: time one first,
    // then follow the learns that ran to their end (four at once run slower than one alone, and a
    // probe timed while the machine was busier would aim the kills after most learns ended). Every
    // third learn is never shot: those time the span without bias (the learns that outran their
    // kill are the fast ones, and following them alone shrank the span until nearly every learn
    // was killed), and each run has acknowledged writes to check.
    const t0 = performance.now();
    await svc(['learn', 'Timing probe'], { store });
    let span = performance.now() - t0;
    const acknowledged: string[] = [];
    let killed = 0;
    let n = 0;
    const learnMaybeKilled = (text: string, shoot: boolean): Promise<void> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [CLI, 'learn', text], {
          env: { ...process.env, SVC_PATH: store },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        const started = performance.now();
        let shot = false;
        // The kill lands anywhere from start-up to past a whole learn: before, during and after the write.
        const timer = shoot
          ? setTimeout(
              () => {
                shot = child.kill('SIGKILL');
                if (shot) killed++;
              },
              span * (0.1 + 1.4 * Math.random()),
            )
          : undefined;
        child.on('close', () => {
          clearTimeout(timer);
          if (!shoot) span = (span + (performance.now() - started)) / 2;
          // An id counts as acknowledged once the process printed it, killed afterwards or not.
          const line = out.trim();
          if (line.endsWith('}')) acknowledged.push(JSON.parse(line).id);
          resolve();
        });
      });
    const loop = async (w: number): Promise<void> => {
      for (let i = 0; i < 15; i++) await learnMaybeKilled(`Killable writer ${w} note ${i} with marker k${w}x${n++}`, i % 3 !== 2);
    };
    await Promise.all([0, 1, 2, 3].map(loop));
    expect(killed).toBeGreaterThan(10);
    // Every learn left alone acknowledged its write, whatever was killed beside it (20 of them).
    expect(acknowledged.length).toBeGreaterThanOrEqual(20);

    const onDisk = idsOnDisk(store);
    for (const id of acknowledged) expect(onDisk).toContain(id);
    expect(new Set(acknowledged).size).toBe(acknowledged.length);
    // The next command reconciles: the index holds exactly the files.
    expect(await listIds(store)).toEqual(onDisk);
    const status = await svcJson(['status'], { store });
    expect(status.data.engrams).toBe(onDisk.length);
    expect(status.data.quarantined).toEqual([]);
    // Writing still works and does not reuse an id.
    const after = await svcJson(['learn', 'After the massacre, a calm write'], { store });
    expect(onDisk).not.toContain(after.data.id);
  }, 240_000);

  it('concurrent captures from many processes lose nothing', async () => {
    const store = tempStore('capture');
    await svc(['status'], { store });
    const worker = async (w: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const { run, data } = await svcJson(['capture', `worker ${w} step ${i}`, '--agent', `agent-${w}`], { store });
        expect(run.code, run.stderr).toBe(0);
        ids.push(data.id);
      }
      return ids;
    };
    const printed = (await Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)))).flat();
    const { data } = await svcJson(['timeline', '--limit', '1000'], { store });
    expect((data.episodes as { id: string }[]).map((e) => e.id).sort()).toEqual([...printed].sort());
    const logLines = readdirSync(join(store, 'episodes'))
      .flatMap((f) =>
        readFileSync(join(store, 'episodes', f), 'utf8')
          .trimEnd()
          .split('\n'),
      )
      .map((l) => JSON.parse(l).id);
    expect(logLines.sort()).toEqual([...printed].sort());
    const one = await svcJson(['timeline', '--agent', 'agent-3'], { store });
    expect(one.data.count).toBe(8);
  }, 240_000);

  it('processes opening a new store at the same moment all open it', async () => {
    // Each child opens one new store a round, all children at the same instant (a shared start
    // time, spun to), where first hooks of a new machine or the captures above race by chance.
    const root = mkdtempSync(join(tmpdir(), 'svc-open-race-'));
    const localStore = new URL('../../dist/engine/store/local-store.js', import.meta.url).href;
    const child = `const { LocalStore } = await import(${JSON.stringify(localStore)});
      const [root, start] = [process.argv[1], Number(process.argv[2])];
      const failures = [];
      for (let round = 0; round < 25; round++) {
        while (Date.now() < start + round * 60);
        try { (await LocalStore.open(root + '/' + round, 'fast')).close(); } catch (err) { failures.push(err.message); }
      }
      process.stdout.write(JSON.stringify(failures));`;
    const start = Date.now() + 2_000;
    const failures = await Promise.all(
      Array.from({ length: 6 }, () =>
        nodeOutput(['--input-type=module', '-e', child, root, String(start)]).then((out) => JSON.parse(out) as string[]),
      ),
    );
    expect(failures.flat()).toEqual([]);
  }, 120_000);
});

describe('reads never wait for another process that holds the write lock', () => {
  it('recall answers from the committed index while a long write (a rebuild, say) holds the lock', async () => {
    const store = tempStore('locked');
    await svcJson(['learn', 'Rebuilds must not block recall'], { store });
    const { default: Database } = await import('better-sqlite3');
    const { writeFileSync } = await import('node:fs');
    const { stringify } = await import('yaml');
    // Another process mid-write: the index's write lock taken and held.
    const holder = new Database(join(store, 'index.db'), { timeout: 1000 });
    holder.exec('BEGIN IMMEDIATE');
    try {
      // A file the index does not know yet, so the recall would like to catch up.
      writeFileSync(
        join(store, 'engrams', 'ENG-2026-0101-001.yaml'),
        stringify({
          id: 'ENG-2026-0101-001',
          status: 'active',
          type: 'behavioral',
          scope: 'global',
          statement: 'Written by hand meanwhile',
        }),
      );
      const r = await svcJson(['recall', 'rebuilds block recall', '--fast'], { store });
      expect(r.run.code, r.run.stderr).toBe(0);
      expect(r.data.results[0].statement).toBe('Rebuilds must not block recall');
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // Once the lock is free, the next read catches up.
    const later = await svcJson(['recall', 'written by hand', '--fast'], { store });
    expect(later.data.results.map((x: { statement: string }) => x.statement)).toContain('Written by hand meanwhile');
  }, 30_000);
});
