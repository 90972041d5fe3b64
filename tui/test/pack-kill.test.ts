import { describe, it, expect } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CLI, svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { systemContext } from '../../engine/ops/context.js';
import { exportPack, FilePackKeys } from '../../engine/ops/packs/packs.js';

// `svc packs install` and `uninstall` killed with SIGKILL at any moment never leave engrams of
// a pack installed without a record of the pack: the record is written (marked installing, with
// every id the install may write) before the first engram. `packs list` reports an interrupted
// install, and install or uninstall finish the job.

const NAME = 'killable';
const COUNT = 300;

interface EngramFile {
  id: string;
  pack?: string;
  status: string;
  provenance?: { chain?: string[] };
}

/** The pack's live engrams as the files say (a killed writer leaves the index behind, not the files). */
function liveOnDisk(store: string): EngramFile[] {
  const dir = join(store, 'engrams');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && !f.startsWith('.tmp-'))
    .map((f) => parse(readFileSync(join(dir, f), 'utf8')) as EngramFile)
    .filter((e) => e.pack === NAME && e.status !== 'retired');
}

const engramFiles = (store: string): number =>
  existsSync(join(store, 'engrams'))
    ? readdirSync(join(store, 'engrams')).filter((f) => f.endsWith('.yaml') && !f.startsWith('.tmp-')).length
    : 0;

function record(store: string): { ids: string[]; state?: string } | null {
  const path = join(store, 'packs', NAME, 'pack.yaml');
  return existsSync(path) ? parse(readFileSync(path, 'utf8')) : null;
}

/** The invariant: every live engram of the pack is named by the pack's record. */
function expectRecorded(store: string, when: string): void {
  const live = liveOnDisk(store);
  if (live.length === 0) return;
  const r = record(store);
  expect(r, `${when}: ${live.length} engram(s) of the pack are live but the pack has no record`).not.toBeNull();
  const named = new Set(r!.ids);
  const missing = live.filter((e) => !named.has(e.id)).map((e) => e.id);
  expect(missing, `${when}: live engrams the record does not name`).toEqual([]);
}

/** Runs `svc packs <args>` and kills it after `ms`, or once `until` holds (polled every 5 ms). */
function runKilled(store: string, args: string[], ms: number, until?: () => boolean): Promise<{ killed: boolean; took: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'packs', ...args], { env: { ...process.env, SVC_PATH: store }, stdio: 'ignore' });
    let killed = false;
    const kill = (): void => {
      if (child.exitCode === null && child.kill('SIGKILL')) killed = true;
    };
    const timer = setTimeout(kill, ms);
    const poll = until ? setInterval(() => until() && kill(), 5) : undefined;
    child.on('close', () => {
      clearTimeout(timer);
      if (poll) clearInterval(poll);
      resolve({ killed, took: performance.now() - t0 });
    });
  });
}

describe('pack install killed with SIGKILL', () => {
  it('never leaves engrams installed without a record; list reports an interrupted install; install and uninstall finish the job', async () => {
    // A signed pack of 300 engrams, and a target store that trusts its key.
    const src = await LocalStore.open(tempStore('pack-src'));
    const target = tempStore('pack-dst');
    let packDir: string;
    try {
      for (let i = 0; i < COUNT; i++)
        await learn(src, { statement: `Killable rule ${i}: keep fixture k${i} stable`, visibility: 'public' }, systemContext);
      const keys = new FilePackKeys(src.root);
      packDir = (await exportPack(src, { name: NAME, output: join(src.root, '..', 'pack') }, systemContext, await keys.signer())).path;
      // The target store exists before its keys are trusted (a read-only command no longer makes one).
      (await LocalStore.open(target)).close();
      await new FilePackKeys(target).trust((await keys.signer()).publicKey, 'source', new Date());
    } finally {
      src.close();
    }
    const install = ['install', packDir];

    // Deterministic first: killed as soon as the first engram of the pack is on disk.
    const first = await runKilled(target, install, 60_000, () => engramFiles(target) > 0);
    expect(first.killed).toBe(true);
    expect(engramFiles(target)).toBeGreaterThan(0);
    expectRecorded(target, 'killed as its first engrams were written');
    const listed = await svcJson(['packs', 'list'], { store: target });
    expect(listed.data.packs).toEqual([expect.objectContaining({ name: NAME, state: 'installing' })]);
    expect(listed.run.stderr).toContain(
      `the install of pack ${NAME} v1 did not finish (interrupted?): run svc packs install ${packDir} again, or svc packs uninstall ${NAME}`,
    );

    // Then at random moments from start-up to past the end, alternating install and uninstall
    // so that every round has engrams to write.
    let t0 = performance.now();
    await svc(['packs', 'list'], { store: target });
    const startup = performance.now() - t0;
    t0 = performance.now();
    expect((await svc(['packs', ...install], { store: target })).code).toBe(0);
    let span = performance.now() - t0;
    let killed = 0;
    // Until six kills landed. The span was timed once: when the machine is quieter later, a run ends
    // before its random moment, so a run that finished unkilled shortens the span aimed at.
    for (let round = 0; round < 40 && killed < 6; round++) {
      const args = round % 2 === 0 ? ['uninstall', NAME] : install;
      const r = await runKilled(target, args, startup * 0.8 + (span - startup * 0.8) * Math.random());
      if (r.killed) killed++;
      else span = Math.max(startup, Math.min(span, r.took));
      expectRecorded(target, `round ${round} (${args[0]}${r.killed ? ', killed' : ''})`);
    }
    expect(killed).toBeGreaterThan(3);

    // Install finishes the job: every pack engram once, all named by a complete record.
    const done = await svcJson(['packs', ...install], { store: target });
    expect(done.run.code, done.run.stderr).toBe(0);
    const live = liveOnDisk(target);
    expect(live).toHaveLength(COUNT);
    expect(new Set(live.map((e) => e.provenance?.chain?.at(-1))).size).toBe(COUNT);
    expect(record(target)).not.toHaveProperty('state');
    expect(new Set(record(target)!.ids)).toEqual(new Set(live.map((e) => e.id)));
    const after = await svcJson(['packs', 'list'], { store: target });
    expect(after.data.packs).toEqual([expect.objectContaining({ name: NAME, state: 'installed', engram_count: COUNT })]);
    expect(after.run.stderr).toBe('');

    // So does uninstall, from an interrupted install (a reinstall after an uninstall rewrites every engram).
    expect((await svc(['packs', 'uninstall', NAME], { store: target })).code).toBe(0);
    expect((await runKilled(target, install, 60_000, () => record(target)?.state === 'installing')).killed).toBe(true);
    expectRecorded(target, 'reinstall killed while installing');
    const un = await svcJson(['packs', 'uninstall', NAME], { store: target });
    expect(un.run.code, un.run.stderr).toBe(0);
    expect(liveOnDisk(target)).toEqual([]);
    expect(record(target)).toBeNull();
    expect((await svcJson(['packs', 'list'], { store: target })).data).toMatchObject({ count: 0 });
  }, 300_000);
});
