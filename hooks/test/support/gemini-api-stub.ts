import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A loopback stand-in for the Gemini API (generativelanguage v1beta), enough for Gemini CLI to run
// whole sessions offline with an API key and GOOGLE_GEMINI_BASE_URL: every model request is
// recorded and answered with one turn: a short text or, when the newest user turn (the prompt, or
// a tool's result) holds a text the test registered with `callOn`, a call of that tool; the
// request that carries the tool's result gets the next answer.

export interface RecordedRequest {
  url: string;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface ToolCall {
  /** The tool's name as Gemini CLI declares it (`mcp_svc_svc_recall`). */
  name: string;
  args: Record<string, unknown>;
}

export interface GeminiApiStub {
  url: string;
  requests: RecordedRequest[];
  /** Answer the first request whose newest user turn contains `trigger` with `call` (once). */
  callOn(trigger: string, call: ToolCall): void;
  close(): Promise<void>;
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
  const requests: RecordedRequest[] = [];
  const calls: Array<{ trigger: string; call: ToolCall; used: boolean }> = [];
  const server: Server = createServer((req, res) => {
    readBody(req).then((text) => {
      const url = req.url ?? '';
      if (req.method === 'POST' && url.includes(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"totalTokens":10}');
      }
      const stream = url.includes(':streamGenerateContent');
      if (req.method !== 'POST' || !(stream || url.includes(':generateContent'))) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end('{"error":{"code":404,"message":"not here","status":"NOT_FOUND"}}');
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // recorded as sent
      }
      requests.push({ url, body });
      const answer = JSON.stringify(reply(body, requests.length, calls));
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(answer);
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(`data: ${answer}\r\n\r\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    callOn: (trigger, call) => void calls.push({ trigger, call, used: false }),
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
