import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, type RecordedRequest } from './messages-api-stub.js';

// A loopback stand-in for OpenAI's Chat Completions API (POST /v1/chat/completions, streamed as
// server-sent events), enough for opencode's bundled `@ai-sdk/openai-compatible` provider to run
// whole sessions offline. Every request is recorded. It answers with one short message, or, when
// the last user message holds a text the test registered with `callOn`, first with a call of that
// tool; the request that carries the tool's result then gets the message.

export interface ChatCompletionsStub {
  url: string;
  requests: RecordedRequest[];
  /** Answer the first request listing `tool` whose last user message contains `trigger` with a call of it. */
  callOn(trigger: string, tool: string, args: Record<string, unknown>): void;
  /** Resolves with the first request (already here or to come) that `match` accepts. */
  waitFor(match: (r: RecordedRequest) => boolean): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const REPLY = 'Noted.';

interface Message {
  role?: string;
  content?: unknown;
}

/** The text of a message's content (a string, or an array of parts). */
export function messageText(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return (m.content as Record<string, unknown>[]).map((p) => String(p.text ?? '')).join('\n');
}

/** The texts of a request's messages with `role` (every message without one). */
export function texts(r: RecordedRequest, role?: string): string[] {
  const messages = Array.isArray(r.body.messages) ? (r.body.messages as Message[]) : [];
  return messages.filter((m) => !role || m.role === role).map(messageText);
}

export async function startChatCompletionsStub(): Promise<ChatCompletionsStub> {
  const requests: RecordedRequest[] = [];
  const calls: { trigger: string; tool: string; args: Record<string, unknown>; used: boolean }[] = [];
  const waiters: { match: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }[] = [];

  const server: Server = createServer((req, res) => {
    readBody(req).then((text) => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end('{"error":{"message":"not here"}}');
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // recorded as sent
      }
      const request = { url: req.url, body };
      requests.push(request);
      const n = requests.length;
      const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
      const last = messages.at(-1);
      const userText = last?.role === 'user' ? messageText(last) : '';
      const tools = Array.isArray(body.tools) ? (body.tools as { function?: { name?: string } }[]).map((t) => t.function?.name) : [];
      // Only a request that lists the tool (opencode's title request carries the prompt, no tools).
      const pending = calls.find((c) => !c.used && userText.includes(c.trigger) && tools.includes(c.tool));
      if (pending) pending.used = true;
      const delta = pending
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [
              { index: 0, id: `call_${n}`, type: 'function', function: { name: pending.tool, arguments: JSON.stringify(pending.args) } },
            ],
          }
        : { role: 'assistant', content: REPLY };
      const base = { id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model };
      const chunk = (data: object) => res.write(`data: ${JSON.stringify({ ...base, ...data })}\n\n`);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      chunk({ choices: [{ index: 0, delta, finish_reason: null }] });
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: pending ? 'tool_calls' : 'stop' }] });
      chunk({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } });
      res.end('data: [DONE]\n\n');
      for (const w of waiters.filter((w) => w.match(request))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(request);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    callOn: (trigger, tool, args) => calls.push({ trigger, tool, args, used: false }),
    waitFor: (match) => {
      const found = requests.find(match);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ match, resolve }));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
