import { createServer, type AddressInfo } from 'node:net';

/** A loopback port nothing listens on (a server opened and closed on it): for a server a test starts later, or for nothing at all. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((done) => probe.close(done));
  return port;
}
