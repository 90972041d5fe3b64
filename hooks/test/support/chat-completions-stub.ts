import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from './messages-api-stub.js';

// A loopback stand-in for an OpenAI-compatible Chat Completions API (POST /v1/chat/completions,
// streamed as server-sent events when asked), enough for GitHub Copilot CLI to run whole sessions
// offline with a custom provider. Every request is recorded. It answers with one short message,
// or, when the newest message (user or tool) holds a text the test registered with `callOn`, with
// a call of that tool; the request that carries the tool's result gets the next answer.

export interface ToolCall {
  /** The tool's name as the host lists it (Copilot: `svc-svc_recall`). */
  name: string;
  arguments: Record<string, unknown>;
}

export interface ChatCompletionsStub {
  url: string;
  requests: RecordedRequest[];
  /** Answer the first request whose newest message contains `trigger` with `call`. */
  callOn(trigger: string, call: ToolCall): void;
  close(): Promise<void>;
}

const REPLY = 'Noted.';

type Message = { role?: unknown; content?: unknown };

/** The text of one message: a string, or the text parts of an array. */
function textOf(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return (m.content as Record<string, unknown>[]).map((p) => String(p.text ?? '')).join('');
  return '';
}

/** The text of every message of a request (system, user, assistant, tool), in order. */
export function messageTexts(r: RecordedRequest): string[] {
  const messages = Array.isArray(r.body.messages) ? (r.body.messages as Message[]) : [];
  return messages.map(textOf);
}

/** The names of the tools a request offered the model. */
export function toolNames(r: RecordedRequest): string[] {
  const tools = Array.isArray(r.body.tools) ? (r.body.tools as Record<string, any>[]) : []; // eslint-disable-line @typescript-eslint/no-explicit-any
  return tools.map((t) => String(t.function?.name ?? t.name ?? ''));
}

export async function startChatCompletionsStub(): Promise<ChatCompletionsStub> {
  const requests: RecordedRequest[] = [];
  const calls: { trigger: string; call: ToolCall; used: boolean }[] = [];
  const server: Server = createServer((req, res) => {
    readBody(req).then((text) => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end('{"error":{"message":"not here","type":"invalid_request_error"}}');
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // recorded as sent
      }
      requests.push({ url: req.url, body });
      const n = requests.length;
      const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
      // The newest message (the prompt, a hook's reason, or a tool's result) decides.
      const last = messages[messages.length - 1];
      const lastText = last ? textOf(last) : '';
      const pending = calls.find((c) => !c.used && lastText.includes(c.trigger));
      if (pending) pending.used = true;
      const call = pending
        ? { id: `call_${n}`, type: 'function', function: { name: pending.call.name, arguments: JSON.stringify(pending.call.arguments) } }
        : undefined;
      const id = `chatcmpl-${n}`;
      const model = typeof body.model === 'string' ? body.model : 'stand-in';
      const created = Math.floor(Date.now() / 1000);
      const usage = { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
      const finish = call ? 'tool_calls' : 'stop';

      if (body.stream !== true) {
        const message = call ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: REPLY };
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finish }], usage }),
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (choices: unknown[], extra: object = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
      const delta = call
        ? { role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] }
        : { role: 'assistant', content: REPLY };
      chunk([{ index: 0, delta, finish_reason: null }]);
      chunk([{ index: 0, delta: {}, finish_reason: finish }]);
      chunk([], { usage });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    callOn: (trigger, call) => calls.push({ trigger, call, used: false }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => resolve(text));
    req.on('error', () => resolve(text));
  });
}
