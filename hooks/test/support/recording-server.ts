import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// The loopback server under every model API stand-in: it reads and parses each request's body,
// keeps the requests the stand-in records (the model calls, not a CLI's side requests) so a test
// can read exactly what a host sent, and closes even while a host keeps a connection open. Each
// stand-in adds only its protocol's routes and answer shapes.

export interface RecordedRequest {
  url: string;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A request as it arrived: its body parsed as JSON (`{}` when it is not JSON). */
export interface Received extends RecordedRequest {
  method: string;
}

/**
 * Answers one request on `res`. `record()` keeps it in `requests` (and wakes `waitFor`) and
 * returns how many are recorded, which the stand-ins use to number their answers' ids.
 */
export type Responder = (received: Received, res: ServerResponse, record: () => number) => void;

export interface RecordingServer {
  /** `http://127.0.0.1:<port>`, no path. */
  url: string;
  requests: RecordedRequest[];
  /** Resolves with the first recorded request (already here or to come) that `match` accepts. */
  waitFor(match: (r: RecordedRequest) => boolean): Promise<RecordedRequest>;
  close(): Promise<void>;
}

export async function startRecordingServer(respond: Responder): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const waiters: { match: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // recorded as sent: no JSON body
      }
      const received: Received = { method: req.method ?? '', url: req.url ?? '', body };
      const record = () => {
        const request = { url: received.url, body };
        requests.push(request);
        for (const w of waiters.filter((w) => w.match(request))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(request);
        }
        return requests.length;
      };
      respond(received, res, record);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    waitFor: (match) => {
      const found = requests.find(match);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ match, resolve }));
    },
    // A host may hold a keep-alive connection (or an unfinished stream) past its exit: drop them all.
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Replies with JSON (a string is sent as it is). */
export function sendJson(res: ServerResponse, status: number, body: object | string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** Starts a server-sent event stream. */
export function startEventStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => resolve(text));
    req.on('error', () => resolve(text));
  });
}
