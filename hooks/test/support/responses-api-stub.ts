import { startEventStream, sendJson, startRecordingServer, type RecordedRequest, type RecordingServer } from './recording-server.js';

// A loopback stand-in for OpenAI's Responses API (POST /v1/responses, streamed as server-sent
// events), enough for Codex CLI to run whole sessions offline. Every request is recorded. It
// answers with one short message, or, when a prompt holds a word the test registered with
// `callOn`, first with a call of that tool (in the namespace Codex gives an MCP server's tools);
// the request that carries the call's output then gets the message.

export type { RecordedRequest } from './recording-server.js';

export interface ToolCall {
  /** The function's namespace as Codex lists it (`mcp__svc`), or none for a plain function. */
  namespace?: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ResponsesApiStub extends RecordingServer {
  /** Answer the first request whose user text contains `trigger` with `call`. */
  callOn(trigger: string, call: ToolCall): void;
}

const REPLY = 'Noted.';

/** The text of every message item of a request's input (Codex sends developer, user and tool items). */
export function inputTexts(r: RecordedRequest): string[] {
  const items = Array.isArray(r.body.input) ? (r.body.input as Record<string, unknown>[]) : [];
  return items.flatMap((item) => {
    if (item.type === 'function_call_output') return [String(item.output)];
    if (!Array.isArray(item.content)) return [];
    return (item.content as Record<string, unknown>[]).map((c) => String(c.text ?? ''));
  });
}

export async function startResponsesApiStub(): Promise<ResponsesApiStub> {
  const calls: { trigger: string; call: ToolCall; used: boolean }[] = [];
  const server = await startRecordingServer(({ method, url, body }, res, record) => {
    if (method !== 'POST' || !url.startsWith('/v1/responses')) return sendJson(res, 404, '{"error":{"message":"not here"}}');
    const n = record();
    const items = Array.isArray(body.input) ? (body.input as Record<string, unknown>[]) : [];
    const answersCall = items.some((i) => i.type === 'function_call_output');
    const userText = items
      .filter((i) => i.role === 'user')
      .flatMap((i) => (Array.isArray(i.content) ? (i.content as Record<string, unknown>[]) : []))
      .map((c) => String(c.text ?? ''))
      .join('\n');
    const pending = answersCall ? undefined : calls.find((c) => !c.used && userText.includes(c.trigger));
    if (pending) pending.used = true;
    const item = pending
      ? {
          type: 'function_call',
          id: `fc_${n}`,
          call_id: `call_${n}`,
          name: pending.call.name,
          ...(pending.call.namespace ? { namespace: pending.call.namespace } : {}),
          arguments: JSON.stringify(pending.call.arguments),
        }
      : { type: 'message', id: `msg_${n}`, role: 'assistant', content: [{ type: 'output_text', text: REPLY }] };
    startEventStream(res);
    const event = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event('response.created', { response: { id: `resp_${n}` } });
    event('response.output_item.done', { item });
    event('response.completed', { response: { id: `resp_${n}`, usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 } } });
    res.end();
  });
  return {
    ...server,
    url: `${server.url}/v1`,
    callOn: (trigger, call) => void calls.push({ trigger, call, used: false }),
  };
}
