import { invalid } from '../errors.js';
import { ChatClient, type ChatClientOptions } from './chat.js';

// Which LLM endpoint, key and model a command uses. Flags win over the environment:
//
//   base URL  --llm-base-url, else SVC_LLM_BASE_URL, else OPENAI_BASE_URL, else https://api.openai.com/v1
//   API key   --llm-api-key, else SVC_LLM_API_KEY, else OPENAI_API_KEY
//   model     --model, else SVC_LLM_MODEL, else gpt-4o-mini
//   timeout   SVC_LLM_TIMEOUT_MS per attempt (default 60000); retries SVC_LLM_MAX_RETRIES (default 3)
//
// OPENAI_API_KEY is only ever sent to OpenAI's address or to OPENAI_BASE_URL (the pair the
// OpenAI SDKs use): a custom --llm-base-url or SVC_LLM_BASE_URL needs its own key, so a
// hosted key never leaks to an endpoint it was not issued for. Empty variables count as unset.

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_LLM_MODEL = 'gpt-4o-mini';

export interface LlmFlags {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
}

export interface LlmSettings {
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Where the base URL came from, for messages. */
  baseFrom: 'flag' | 'SVC_LLM_BASE_URL' | 'OPENAI_BASE_URL' | 'default';
  timeoutMs?: number;
  maxRetries?: number;
}

export const LLM_HELP = `needs an OpenAI-compatible chat-completions endpoint: set OPENAI_API_KEY (hosted), or pass --llm-base-url with --llm-api-key (or set SVC_LLM_BASE_URL and SVC_LLM_API_KEY)`;

const val = (v: string | undefined): string | undefined => (v !== undefined && v.trim() !== '' ? v.trim() : undefined);

/** Resolves the endpoint or throws an `invalid` error naming what is missing; `what` names the caller. */
export function resolveLlmSettings(flags: LlmFlags, env: NodeJS.ProcessEnv = process.env, what = 'the LLM'): LlmSettings {
  const tuning = {
    ...optionalInt(env, 'SVC_LLM_TIMEOUT_MS', 1, 'timeoutMs'),
    ...optionalInt(env, 'SVC_LLM_MAX_RETRIES', 0, 'maxRetries'),
  };
  const model = val(flags.model) ?? val(env.SVC_LLM_MODEL) ?? DEFAULT_LLM_MODEL;
  const flagBase = val(flags.baseUrl);
  const svcBase = val(env.SVC_LLM_BASE_URL);
  const ownKey = val(flags.apiKey) ?? val(env.SVC_LLM_API_KEY);
  if (flagBase || svcBase) {
    const baseUrl = (flagBase ?? svcBase)!;
    const baseFrom = flagBase ? 'flag' : 'SVC_LLM_BASE_URL';
    if (!ownKey) {
      throw invalid(
        `${what} has a base URL (${baseFrom === 'flag' ? '--llm-base-url' : 'SVC_LLM_BASE_URL'}) but no API key: pass --llm-api-key or set SVC_LLM_API_KEY`,
      );
    }
    return { baseUrl, apiKey: ownKey, model, baseFrom, ...tuning };
  }
  const openaiBase = val(env.OPENAI_BASE_URL);
  const apiKey = ownKey ?? val(env.OPENAI_API_KEY);
  if (!apiKey) throw invalid(`${what} ${LLM_HELP}`);
  return { baseUrl: openaiBase ?? OPENAI_BASE_URL, apiKey, model, baseFrom: openaiBase ? 'OPENAI_BASE_URL' : 'default', ...tuning };
}

export function chatClientFor(settings: LlmSettings, extra: Omit<ChatClientOptions, 'baseUrl' | 'apiKey' | 'model'> = {}): ChatClient {
  return new ChatClient({
    baseUrl: settings.baseUrl,
    apiKey: settings.apiKey,
    model: settings.model,
    ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
    ...(settings.maxRetries !== undefined ? { maxRetries: settings.maxRetries } : {}),
    ...extra,
  });
}

function optionalInt<K extends string>(env: NodeJS.ProcessEnv, name: string, min: number, key: K): Partial<Record<K, number>> {
  const raw = val(env[name]);
  if (raw === undefined) return {};
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw invalid(`${name} must be a whole number of at least ${min} (got "${raw}")`);
  return { [key]: n } as Partial<Record<K, number>>;
}
