import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError, type ErrorKind } from '../errors.js';

// A small client for OpenAI-compatible chat-completions APIs (OpenAI itself, and the many
// servers that speak its protocol: vLLM, llama.cpp, Ollama, LiteLLM, OpenRouter...), over
// Node's own fetch. POST {baseUrl}/chat/completions with a bearer key; a timeout per attempt;
// retries with exponential backoff on 429 and 5xx answers and on network failures, honouring
// Retry-After; every failure becomes one SvcError line that says what to check.

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatClientOptions {
  /** Base address of the API, usually ending in /v1 (e.g. https://api.openai.com/v1). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Per attempt (default 60 s). */
  timeoutMs?: number;
  /** Retries after the first attempt on 429, 5xx and network errors (default 3). */
  maxRetries?: number;
  /** First backoff delay; doubles on each retry, with jitter (default 500 ms). */
  retryBaseMs?: number;
  /** Upper bound of any wait between attempts, including a server's Retry-After (default 20 s). */
  maxRetryWaitMs?: number;
  /** For tests and custom transports. */
  fetch?: typeof fetch;
}

export interface ChatRequest {
  messages: ChatMessage[];
  temperature?: number;
  maxTokens?: number;
}

export interface ChatResponse {
  content: string;
  /** The model that answered, as the server names it. */
  model: string;
  /** HTTP attempts made (1 when the first one succeeded). */
  attempts: number;
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
}

/** A failure of the LLM endpoint; `status` is the HTTP status when there was one. */
export class LlmError extends SvcError {
  readonly status: number | undefined;
  constructor(kind: ErrorKind, message: string, status?: number) {
    super(kind, message);
    this.name = 'LlmError';
    this.status = status;
  }
}

export const DEFAULT_LLM_TIMEOUT_MS = 60_000;
export const DEFAULT_LLM_RETRIES = 3;

export function chatCompletionsUrl(baseUrl: string): string {
  const base = baseUrl.trim().replace(/\/+$/, '');
  return base.endsWith('/chat/completions') ? base : `${base}/chat/completions`;
}

/** Host and path of an address, never its credentials or query, for error messages. */
function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url;
  }
}

export class ChatClient {
  readonly url: string;
  readonly model: string;
  private readonly opts: Required<Omit<ChatClientOptions, 'fetch'>> & { fetch: typeof fetch };

  constructor(opts: ChatClientOptions) {
    let parsed: URL;
    try {
      parsed = new URL(opts.baseUrl);
    } catch {
      throw new LlmError('invalid', `the LLM base URL is not a URL: "${opts.baseUrl}"`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new LlmError('invalid', `the LLM base URL must be http or https (got "${opts.baseUrl}")`);
    }
    if (!opts.apiKey.trim()) throw new LlmError('invalid', 'the LLM API key is empty');
    if (!opts.model.trim()) throw new LlmError('invalid', 'the LLM model name is empty');
    this.url = chatCompletionsUrl(opts.baseUrl);
    this.model = opts.model.trim();
    this.opts = {
      baseUrl: opts.baseUrl,
      apiKey: opts.apiKey.trim(),
      model: this.model,
      timeoutMs: opts.timeoutMs ?? DEFAULT_LLM_TIMEOUT_MS,
      maxRetries: opts.maxRetries ?? DEFAULT_LLM_RETRIES,
      retryBaseMs: opts.retryBaseMs ?? 500,
      maxRetryWaitMs: opts.maxRetryWaitMs ?? 20_000,
      fetch: opts.fetch ?? fetch,
    };
  }

  /** One chat completion; returns the first choice's text. Throws LlmError. */
  async complete(req: ChatRequest): Promise<ChatResponse> {
    const body = JSON.stringify({
      model: this.model,
      messages: req.messages,
      temperature: req.temperature ?? 0,
      ...(req.maxTokens ? { max_tokens: req.maxTokens } : {}),
    });
    let attempt = 0;
    for (;;) {
      attempt += 1;
      const outcome = await this.attempt(body);
      if (outcome.ok) return { ...outcome.value, attempts: attempt };
      const { error, retryable, retryAfterMs } = outcome;
      if (!retryable || attempt > this.opts.maxRetries) {
        if (retryable && attempt > 1) {
          throw new LlmError(error.kind, `${error.message} (gave up after ${attempt} attempts)`, error.status);
        }
        throw error;
      }
      const backoff = this.opts.retryBaseMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5);
      await sleep(Math.min(this.opts.maxRetryWaitMs, Math.max(retryAfterMs ?? 0, backoff)));
    }
  }

  private async attempt(
    body: string,
  ): Promise<
    { ok: true; value: Omit<ChatResponse, 'attempts'> } | { ok: false; error: LlmError; retryable: boolean; retryAfterMs?: number }
  > {
    const at = where(this.url);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.opts.timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await this.opts.fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: `Bearer ${this.opts.apiKey}`,
        },
        body,
        signal: controller.signal,
      });
      text = await res.text();
    } catch (err) {
      const timedOut = controller.signal.aborted;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const reason = timedOut
        ? `no answer within ${Math.round(this.opts.timeoutMs / 1000)} s`
        : (cause?.code ?? cause?.message ?? (err as Error).message ?? String(err));
      return { ok: false, retryable: true, error: new LlmError('storage', `cannot reach the LLM at ${at}: ${reason}`) };
    } finally {
      clearTimeout(timer);
    }

    if (!res.ok) {
      const detail = errorDetail(text);
      const status = res.status;
      const suffix = detail ? `: ${detail}` : '';
      if (status === 429 || status >= 500) {
        return {
          ok: false,
          retryable: true,
          retryAfterMs: retryAfter(res.headers.get('retry-after')),
          error: new LlmError('storage', `the LLM at ${at} answered ${status}${status === 429 ? ' (rate limited)' : ''}${suffix}`, status),
        };
      }
      let hint = '';
      if (status === 401 || status === 403) hint = ' (check the API key: --llm-api-key, SVC_LLM_API_KEY or OPENAI_API_KEY)';
      else if (status === 404) hint = ' (check --llm-base-url, which usually ends in /v1, and the model name)';
      return {
        ok: false,
        retryable: false,
        error: new LlmError('invalid', `the LLM at ${at} refused the request with ${status}${suffix}${hint}`, status),
      };
    }

    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return {
        ok: false,
        retryable: false,
        error: new LlmError('storage', `the LLM at ${at} answered with something that is not JSON: ${preview(text)}`),
      };
    }
    const d = data as { model?: unknown; choices?: Array<{ message?: { content?: unknown } }>; usage?: ChatResponse['usage'] };
    const content = d?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') {
      return {
        ok: false,
        retryable: false,
        error: new LlmError('storage', `the LLM at ${at} answered without choices[0].message.content: ${preview(text)}`),
      };
    }
    return {
      ok: true,
      value: { content, model: typeof d.model === 'string' ? d.model : this.model, ...(d.usage ? { usage: d.usage } : {}) },
    };
  }
}

/** The server's own error message, from an OpenAI-style `{"error": {"message"}}` body or the raw text. */
function errorDetail(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === 'string' ? j.error : (j.error?.message ?? j.message);
    if (typeof m === 'string' && m.trim()) return preview(m);
  } catch {
    /* not JSON */
  }
  return text.trim() ? preview(text) : '';
}

function preview(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}...` : flat;
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
function retryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
