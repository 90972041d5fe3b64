import { describe, expect, it } from 'vitest';
import { existsSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { migratedDataFolder, startHubProcess } from './support/hub-process.js';
import { svc } from '../../engine/test/support/run-svc.js';

// Two `svc hub` on one PGlite folder both started, both answered 201, and after a restart half
// the writes were gone (issue 25, item 20): PGlite keeps the database in each process's memory.
// The folder is locked now: a second server, or any command that opens the folder beside a
// running server, says who holds it in one line and exits 1. Real child processes.

describe('the PGlite data folder of svc hub', () => {
  it('is held by one process at a time', async () => {
    const data = migratedDataFolder('hub-lock');
    const env = { DATABASE_URL: '', SVC_PATH: join(data, '..', 'store') };
    const made = await svc(['hub', 'org', 'create', 'acme', '--admin', 'alice', '--data', data, '--json'], { env });
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(join(data, 'svc-hub.lock'))).toBe(false);

    const hub = await startHubProcess(env, ['--data', data]);
    const pid = hub.child.pid!;
    try {
      const second = await svc(['hub', '--port', '0', '--data', data, '--no-json'], { env });
      expect(second.stderr).toBe(
        `svc: svc hub (pid ${pid}) is already running on the data folder ${data}: stop it first, or give this hub another --data\n`,
      );
      expect(second.code).toBe(1);
      // Only what the running hub can do instead is offered; the rest needs it stopped.
      const through = ', or do this through the running hub (GET /api/v1/admin/audit/verify, or the admin pages)';
      for (const [args, alternative] of [
        [['org', 'create', 'beta', '--admin', 'bob'], ''],
        [['org', 'list'], ''],
        [['audit', 'verify', '--org', 'acme'], through],
        [['migrate'], ''],
      ] as Array<[string[], string]>) {
        const r = await svc(['hub', ...args, '--data', data, '--no-json'], { env });
        expect(r.stderr, args.join(' ')).toBe(
          `svc: svc hub (pid ${pid}) is running on the data folder ${data}: stop it first${alternative}\n`,
        );
        expect(r.code).toBe(1);
      }
      const key = JSON.parse(made.stdout).api_key as string;
      const learn = await fetch(`${hub.url}/api/v1/engrams`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement: 'One process holds the folder', scope: 'org:acme' }),
      });
      expect(learn.status).toBe(201);
    } finally {
      expect(await hub.stop()).toBe(0);
    }
    expect(existsSync(join(data, 'svc-hub.lock'))).toBe(false);

    // A lock left by a process that is gone (killed, crashed) is stale: the next opener takes it.
    const gone = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
    writeFileSync(join(data, 'svc-hub.lock'), JSON.stringify({ pid: gone, holder: 'svc hub' }));
    const listed = await svc(['hub', 'org', 'list', '--data', data, '--json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).orgs.map((o: { slug: string }) => o.slug)).toEqual(['acme']);
  }, 120_000);
});
