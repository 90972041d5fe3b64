import { sendJson, startEventStream, startRecordingServer, type RecordedRequest, type RecordingServer } from './recording-server.js';

// A loopback stand-in for an OpenAI-compatible Chat Completions API (POST /v1/chat/completions,
// streamed as server-sent events when asked), enough for GitHub Copilot CLI (a custom provider)
// and opencode (its bundled openai-compatible provider) to run whole sessions offline. Every
// request is recorded. It answers with one short message, or, when the newest message (the
// prompt, a hook's reason, a tool's result) holds a text the test registered with `callOn` and
// the request lists that tool, with a call of it; the request carrying the result gets the next answer.

export interface ToolCall {
  /** The tool's name as the host lists it (Copilot: `svc-svc_recall`; opencode: `svc_svc_recall`). */
  name: string;
  arguments: Record<string, unknown>;
}

export type { RecordedRequest } from './recording-server.js';

export interface ChatCompletionsStub extends RecordingServer {
  /** Answer the first request listing the tool whose newest message contains `trigger` with `call`. */
  callOn(trigger: string, call: ToolCall): void;
}

const REPLY = 'Noted.';

interface Message {
  role?: string;
  content?: unknown;
}

/** The text of a message's content (a string, or the text parts of an array). */
function messageText(m: Message): string {
  if (typeof m.content === 'string') return m.content;
  if (!Array.isArray(m.content)) return '';
  return (m.content as Record<string, unknown>[]).map((p) => String(p.text ?? '')).join('\n');
}

/** The texts of a request's messages with `role` (of every message without one), in order. */
export function texts(r: RecordedRequest, role?: string): string[] {
  const messages = Array.isArray(r.body.messages) ? (r.body.messages as Message[]) : [];
  return messages.filter((m) => !role || m.role === role).map(messageText);
}

/** The names of the tools a request offered the model. */
export function toolNames(r: RecordedRequest): string[] {
  const tools = Array.isArray(r.body.tools) ? (r.body.tools as { name?: string; function?: { name?: string } }[]) : [];
  return tools.map((t) => String(t.function?.name ?? t.name ?? ''));
}

export async function startChatCompletionsStub(): Promise<ChatCompletionsStub> {
  const calls: { trigger: string; call: ToolCall; used: boolean }[] = [];
  const server = await startRecordingServer((request, res, record) => {
    const { method, url, body } = request;
    if (method !== 'POST' || !url.endsWith('/chat/completions')) {
      return sendJson(res, 404, '{"error":{"message":"not here","type":"invalid_request_error"}}');
    }
    const n = record();
    const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
    const last = messages.at(-1);
    const lastText = last ? messageText(last) : '';
    const offered = toolNames(request);
    // Only a request that lists the tool (opencode's title request carries the prompt, no tools).
    const pending = calls.find((c) => !c.used && lastText.includes(c.trigger) && offered.includes(c.call.name));
    if (pending) pending.used = true;
    const call = pending
      ? { id: `call_${n}`, type: 'function', function: { name: pending.call.name, arguments: JSON.stringify(pending.call.arguments) } }
      : undefined;
    const base = {
      id: `chatcmpl-${n}`,
      created: Math.floor(Date.now() / 1000),
      model: typeof body.model === 'string' ? body.model : 'stand-in',
    };
    const usage = { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
    const finish = call ? 'tool_calls' : 'stop';
    if (body.stream !== true) {
      const message = call ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: REPLY };
      return sendJson(res, 200, { ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage });
    }
    const chunk = (data: object) => res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', ...data })}\n\n`);
    const delta = call ? { role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] } : { role: 'assistant', content: REPLY };
    startEventStream(res);
    chunk({ choices: [{ index: 0, delta, finish_reason: null }] });
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: finish }] });
    chunk({ choices: [], usage });
    res.end('data: [DONE]\n\n');
  });
  return {
    ...server,
    url: `${server.url}/v1`,
    callOn: (trigger, call) => void calls.push({ trigger, call, used: false }),
  };
}
