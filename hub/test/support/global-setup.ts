import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../data/database.js';
import { migrateHub } from '../../data/migrate.js';
import { adminQuery, serverReachable, SERVER } from './pg-server.js';
import { credentialsLogged } from './log-sweep.js';

// Once per test run: one migrated PGlite data folder (a fresh PGlite initdb costs seconds, ~20 s
// on a loaded machine) and one migrated PostgreSQL template database. Each hub test file then
// copies the folder or runs CREATE DATABASE ... TEMPLATE, which takes milliseconds.

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
    /** Absent when the server is unreachable. */
    postgresTemplate?: string;
    postgresReachable: boolean;
    /** Where the run's in-process test hubs write their logs (log-sweep.ts). */
    hubLogDir: string;
  }
}

/** What one run prepares; both vitest projects (fast, slow) share it, and the last one out drops it. */
interface Templates {
  pgliteTemplate: string;
  logDir: string;
  template: string | undefined;
  reachable: boolean;
  users: number;
  teardown: () => Promise<void>;
}
/** Templates to copy rather than migrate ($SVC_TEST_COPY_TEMPLATES, JSON). */
export interface TemplateSources {
  pglite: string;
  postgres?: string;
}
const SHARED = Symbol.for('svc.hub-test-templates');
type Holder = { [SHARED]?: Promise<Templates> };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // vitest calls a globalSetup once per project, in one process: migrate once, not per project.
  const holder = globalThis as Holder;
  const shared = await (holder[SHARED] ??= prepare());
  shared.users += 1;
  project.provide('pgliteTemplate', shared.pgliteTemplate);
  project.provide('postgresReachable', shared.reachable);
  project.provide('hubLogDir', shared.logDir);
  if (shared.template) project.provide('postgresTemplate', shared.template);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete holder[SHARED];
    // The whole run's hub logs, swept for credentials before the folder goes.
    const leaks = credentialsLogged(shared.logDir);
    await shared.teardown();
    if (leaks.length > 0) throw new Error(`the test hubs logged credentials:\n${leaks.join('\n')}`);
  };
}

async function prepare(): Promise<Templates> {
  const root = mkdtempSync(join(tmpdir(), 'svc-hub-template-'));
  const pgliteTemplate = join(root, 'data');
  const logDir = join(root, 'logs');
  mkdirSync(logDir);
  // teardown-signals.test.ts runs this setup in child processes to interrupt it; its subject is
  // the cleanup, so it hands over the run's own templates to copy instead of migrating anew.
  const from = process.env.SVC_TEST_COPY_TEMPLATES ? (JSON.parse(process.env.SVC_TEST_COPY_TEMPLATES) as TemplateSources) : undefined;
  if (from) cpSync(from.pglite, pgliteTemplate, { recursive: true });
  else {
    const db = await openDatabase({ dataDir: pgliteTemplate, shortLived: true });
    await migrateHub(db);
    await db.close();
  }

  const reachable = await serverReachable();
  let template: string | undefined;
  if (reachable) {
    template = `svc_tpl_${process.pid}_${Date.now().toString(36)}`;
    if (from?.postgres) await adminQuery(`CREATE DATABASE ${template} TEMPLATE ${from.postgres}`);
    else {
      await adminQuery(`CREATE DATABASE ${template}`);
      const u = new URL(SERVER);
      u.pathname = `/${template}`;
      const pg = await openDatabase({ url: u.toString(), poolSize: 1 });
      await migrateHub(pg);
      await pg.close();
    }
  }
  let done: Promise<void> | undefined;
  const drop = (): Promise<void> =>
    (done ??= (async () => {
      rmSync(root, { recursive: true, force: true });
      if (template) await adminQuery(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    })());
  // Ctrl-C or a kill of the test run ends vitest without its teardown: the template database
  // stayed behind. Drop it on the way out; the workers' IPC channel closes with this process,
  // and browser.ts closes their browsers then.
  const onSignal = (signal: NodeJS.Signals): void => {
    void drop()
      .catch(() => undefined)
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const teardown = async (): Promise<void> => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await drop();
  };
  return { pgliteTemplate, logDir, template, reachable, users: 0, teardown };
}
