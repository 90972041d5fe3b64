import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A loopback stand-in for the Anthropic Messages API, enough for Claude Code to run whole
// sessions offline: every POST /v1/messages is recorded and answered with one short text turn
// (streamed when asked), so a test can read exactly what the CLI sent to the model.

export interface RecordedRequest {
  url: string;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface MessagesApiStub {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const REPLY = 'Noted.';

export async function startMessagesApiStub(): Promise<MessagesApiStub> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    readBody(req).then((text) => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
        res.writeHead(req.method === 'HEAD' ? 200 : 404, { 'content-type': 'application/json' });
        return res.end(req.method === 'HEAD' ? undefined : '{"type":"error","error":{"type":"not_found_error","message":"not here"}}');
      }
      if (req.url.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"input_tokens":10}');
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // recorded as sent
      }
      requests.push({ url: req.url, body });
      const message = {
        id: `msg_${requests.length}`,
        type: 'message',
        role: 'assistant',
        model: typeof body.model === 'string' ? body.model : 'claude',
        content: [{ type: 'text', text: REPLY }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 2 },
      };
      if (body.stream !== true) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(message));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const event = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      event('message_start', { message: { ...message, content: [], stop_reason: null } });
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: REPLY } });
      event('content_block_stop', { index: 0 });
      event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } });
      event('message_stop', {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => resolve(text));
    req.on('error', () => resolve(text));
  });
}

/** Every text the model was given in a request (system blocks and messages), in order. */
export function textsOf(request: RecordedRequest): string[] {
  const out: string[] = [];
  const system = request.body.system;
  if (typeof system === 'string') out.push(system);
  else if (Array.isArray(system)) for (const b of system) if (typeof b?.text === 'string') out.push(b.text);
  for (const m of request.body.messages ?? []) {
    if (typeof m.content === 'string') out.push(m.content);
    else for (const part of m.content ?? []) if (typeof part?.text === 'string') out.push(part.text);
  }
  return out;
}
