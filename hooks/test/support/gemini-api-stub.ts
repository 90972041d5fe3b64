import { sendJson, startEventStream, startRecordingServer, type RecordedRequest, type RecordingServer } from './recording-server.js';

// A loopback stand-in for the Gemini API (generativelanguage v1beta), enough for Gemini CLI to run
// whole sessions offline with an API key and GOOGLE_GEMINI_BASE_URL: every model request is
// recorded and answered with one turn: a short text or, when the newest user turn (the prompt, or
// a tool's result) holds a text the test registered with `callOn`, a call of that tool; the
// request that carries the tool's result gets the next answer.

export type { RecordedRequest } from './recording-server.js';

export interface ToolCall {
  /** The tool's name as Gemini CLI declares it (`mcp_svc_svc_recall`). */
  name: string;
  args: Record<string, unknown>;
}

export interface GeminiApiStub extends RecordingServer {
  /** Answer the first request whose newest user turn contains `trigger` with `call` (once). */
  callOn(trigger: string, call: ToolCall): void;
}

const REPLY = 'Noted.';

interface Part {
  text?: string;
  functionCall?: unknown;
  functionResponse?: { name?: string; response?: Record<string, unknown> };
}

function reply(body: RecordedRequest['body'], n: number, calls: Array<{ trigger: string; call: ToolCall; used: boolean }>): object {
  const newest = JSON.stringify(lastUserParts({ url: '', body }));
  const due = calls.find((c) => !c.used && newest.includes(c.trigger));
  let out: object[];
  if (due) {
    due.used = true;
    out = [{ functionCall: { name: due.call.name, args: due.call.args } }];
  } else if (body.generationConfig?.responseMimeType === 'application/json') {
    out = [{ text: JSON.stringify({ next_speaker: 'user', reasoning: 'stub' }) }];
  } else out = [{ text: REPLY }];
  return {
    candidates: [{ content: { role: 'model', parts: out }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2, totalTokenCount: 12 },
    modelVersion: 'stub',
    responseId: `stub-${n}`,
  };
}

export async function startGeminiApiStub(): Promise<GeminiApiStub> {
  const calls: Array<{ trigger: string; call: ToolCall; used: boolean }> = [];
  const server = await startRecordingServer(({ method, url, body }, res, record) => {
    if (method === 'POST' && url.includes(':countTokens')) return sendJson(res, 200, '{"totalTokens":10}');
    const stream = url.includes(':streamGenerateContent');
    if (method !== 'POST' || !(stream || url.includes(':generateContent'))) {
      return sendJson(res, 404, '{"error":{"code":404,"message":"not here","status":"NOT_FOUND"}}');
    }
    const answer = JSON.stringify(reply(body, record(), calls));
    if (!stream) return sendJson(res, 200, answer);
    startEventStream(res);
    res.end(`data: ${answer}\r\n\r\n`);
  });
  return { ...server, callOn: (trigger, call) => void calls.push({ trigger, call, used: false }) };
}

/** The parts of the request's last user turn (the prompt, or a tool's result). */
export function lastUserParts(request: RecordedRequest): Part[] {
  const turns: Array<{ role?: string; parts?: Part[] }> = request.body.contents ?? [];
  const last = [...turns].reverse().find((t) => t.role === 'user');
  return last?.parts ?? [];
}

/** Every text part the model was given (system instruction and conversation), in order. */
export function textsOf(request: RecordedRequest): string[] {
  const out: string[] = [];
  for (const p of request.body.systemInstruction?.parts ?? []) if (typeof p?.text === 'string') out.push(p.text);
  for (const c of request.body.contents ?? []) for (const p of c.parts ?? []) if (typeof p?.text === 'string') out.push(p.text);
  return out;
}

/** The names of the functions declared to the model. */
export function toolNames(request: RecordedRequest): string[] {
  return (request.body.tools ?? []).flatMap((t: { functionDeclarations?: Array<{ name: string }> }) =>
    (t.functionDeclarations ?? []).map((d) => d.name),
  );
}
