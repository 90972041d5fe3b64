import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHub, type HubOptions, type Hub } from './app.js';
import { preloadOpenApi } from '../openapi/spec.js';

// Listening: one HTTP server on one port; close() stops accepting, closes the audit writer
// within its drain window, and leaves the database to its owner.

export interface RunningHub {
  url: string;
  port: number;
  hub: Hub;
  /** Stops listening, then closes the hub (its audit writer drains for at most drainMs). */
  close(drainMs?: number): Promise<void>;
}

export async function startHub(opts: HubOptions & { port?: number; host?: string }): Promise<RunningHub> {
  const hub = await createHub(opts);
  const server: Server = createServer(hub.app.callback());
  server.keepAliveTimeout = 65_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
    });
  } catch (err) {
    // Its webhook worker listens on the database and polls: stopped, or the process never ends.
    await hub.close(0);
    throw err;
  }
  preloadOpenApi();
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    port,
    hub,
    async close(drainMs?: number) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await hub.close(drainMs);
    },
  };
}
