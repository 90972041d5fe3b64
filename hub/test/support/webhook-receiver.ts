import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

// A webhook receiver on loopback, as a team would run one: it checks both signatures of every
// delivery (X-SVC-Signature by hand, the Standard Webhooks headers with that standard's own
// library) and answers with whatever `answer` says: a status, or 'hang' to hold the request.

export interface Received {
  id: string;
  type: string;
  data: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** Whether both signatures held. */
  verified: boolean;
  /** What the receiver answered. */
  answered: number | 'hang';
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Accepted (2xx) deliveries of a type. */
  accepted(type?: string): Received[];
  answer: (r: Received) => number | 'hang';
  secret: string;
  /** Waits until `test` holds of what was received, or fails after `ms`. */
  until(test: (all: Received[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<() => void>();
  const r: Receiver = {
    url: '',
    received,
    secret: '',
    answer: () => 200,
    accepted: (type) =>
      received.filter((x) => typeof x.answered === 'number' && x.answered < 300 && (type === undefined || x.type === type)),
    async until(test, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!test(received)) {
        if (Date.now() > deadline)
          throw new Error(
            `the receiver did not get what the test waits for in ${ms} ms; it got: ${received.map((x) => `${x.type}:${x.answered}`).join(', ')}`,
          );
        await new Promise((done) => setTimeout(done, 25));
      }
    },
    close: () =>
      new Promise((done) => {
        for (const release of hanging) release();
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body = JSON.parse(raw) as { id: string; type: string; data: Record<string, unknown> };
      const svcOk = req.headers['x-svc-signature'] === `sha256=${createHmac('sha256', r.secret).update(raw).digest('hex')}`;
      let standardOk = false;
      try {
        new Webhook(r.secret).verify(raw, req.headers as Record<string, string>);
        standardOk = true;
      } catch {
        standardOk = false;
      }
      const entry: Received = {
        id: body.id,
        type: body.type,
        data: body.data,
        headers: req.headers,
        verified: svcOk && standardOk && req.headers['x-svc-event-id'] === body.id,
        answered: 200,
      };
      entry.answered = entry.verified ? r.answer(entry) : 401;
      received.push(entry);
      if (entry.answered === 'hang') {
        hanging.add(() => res.destroy());
        return;
      }
      res.statusCode = entry.answered;
      res.end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return r;
}
