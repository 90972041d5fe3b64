import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHub, type HubOptions, type Hub } from './app.js';
import type { Database } from './contracts.js';
import { preloadOpenApi } from './openapi/spec.js';
import { answerStarting, unreadySeconds } from './monitor/ready.js';
import { packageVersion } from '../engine/package-info.js';

// Listening: one HTTP server on one port; close() turns /ready to 503, serves on for
// SVC_HUB_UNREADY_SECONDS (a load balancer sees it and stops sending), stops accepting, closes
// the audit writer within its drain window, and leaves the database to its owner.

export interface RunningHub {
  url: string;
  port: number;
  hub: Hub;
  db: Database;
  /** Stops listening, then closes the hub (its audit writer drains for at most drainMs). */
  close(drainMs?: number): Promise<void>;
}

export interface StartOptions extends Omit<HubOptions, 'db'> {
  /** The database, or how to open it once the port is ours (`svc hub`: opening PGlite the first time takes seconds). */
  db: Database | (() => Promise<Database>);
  port?: number;
  host?: string;
  unreadyMs?: number;
}

export async function startHub(opts: StartOptions): Promise<RunningHub> {
  // How long close() serves on while /ready says 503 (default SVC_HUB_UNREADY_SECONDS, else 0).
  const unreadyMs = opts.unreadyMs ?? unreadySeconds(opts.env ?? process.env) * 1000;
  // The port first: a busy one is the only thing said (no database opened, no hub built, no
  // warnings, nothing to stop). A request that comes before the hub is built waits for it.
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let built: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (built = resolve));
  // Until then /ready says so at once (a balancer must not wait on it).
  const server: Server = createServer((req, res) =>
    handle ? handle(req, res) : req.url === '/ready' ? answerStarting(res) : void ready.then(() => handle!(req, res)),
  );
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  let hub: Hub;
  let db: Database;
  try {
    db = typeof opts.db === 'function' ? await opts.db() : opts.db;
    hub = await createHub({ ...opts, db });
  } catch (err) {
    server.close();
    server.closeAllConnections();
    throw err;
  }
  handle = hub.app.callback();
  built();
  preloadOpenApi();
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  hub.log.info(
    { event: 'start', url: `http://${host}:${port}`, database: db.kind, version: packageVersion(), node: process.version },
    `svc hub listening on http://${host}:${port}`,
  );
  return {
    url: `http://${host}:${port}`,
    port,
    hub,
    db,
    async close(drainMs?: number) {
      const stopping = performance.now();
      hub.log.info({ event: 'drain', drain_ms: drainMs ?? null }, 'stopping: no new connections; draining');
      hub.readiness.drain();
      if (unreadyMs > 0) await sleep(unreadyMs);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await hub.close(drainMs);
      hub.log.info({ event: 'stopped', took_ms: Math.round(performance.now() - stopping) }, 'stopped');
    },
  };
}
