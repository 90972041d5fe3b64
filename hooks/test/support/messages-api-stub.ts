import { sendJson, startEventStream, startRecordingServer, type RecordedRequest, type RecordingServer } from './recording-server.js';

// A loopback stand-in for the Anthropic Messages API, enough for Claude Code to run whole
// sessions offline: every POST /v1/messages is recorded and answered with one short text turn
// (streamed when asked), so a test can read exactly what the CLI sent to the model.

export type { RecordedRequest } from './recording-server.js';

export type MessagesApiStub = RecordingServer;

const REPLY = 'Noted.';

export function startMessagesApiStub(): Promise<MessagesApiStub> {
  return startRecordingServer(({ method, url, body }, res, record) => {
    if (method !== 'POST' || !url.startsWith('/v1/messages')) {
      // Claude Code probes the base URL with HEAD: that one is answered, the rest are not here.
      if (method === 'HEAD') return void res.writeHead(200, { 'content-type': 'application/json' }).end();
      return sendJson(res, 404, '{"type":"error","error":{"type":"not_found_error","message":"not here"}}');
    }
    if (url.startsWith('/v1/messages/count_tokens')) return sendJson(res, 200, '{"input_tokens":10}');
    const n = record();
    const message = {
      id: `msg_${n}`,
      type: 'message',
      role: 'assistant',
      model: typeof body.model === 'string' ? body.model : 'claude',
      content: [{ type: 'text', text: REPLY }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 2 },
    };
    if (body.stream !== true) return sendJson(res, 200, message);
    startEventStream(res);
    const event = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event('message_start', { message: { ...message, content: [], stop_reason: null } });
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: REPLY } });
    event('content_block_stop', { index: 0 });
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } });
    event('message_stop', {});
    res.end();
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
