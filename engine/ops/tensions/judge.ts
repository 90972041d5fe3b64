// The tension judge: asks an LLM, a batch of pairs per call, whether two engrams contradict each
// other, and reads its strict-JSON answer (tolerantly: a malformed judgement becomes an error for
// its pair, never an exception).

import type { EngramDoc } from '../../model/engram-types.js';
import type { ChatClient } from '../../llm/chat.js';
import { oneLine } from '../../text.js';

export type PairJudgement =
  { ok: true; contradiction: boolean; confidence: number; explanation: string } | { ok: false; error: string; raw?: string };

/** Judges pairs; one call judges one batch. */
export interface TensionJudge {
  readonly model: string;
  judge(pairs: Array<{ a: EngramDoc; b: EngramDoc }>): Promise<PairJudgement[]>;
}

export const JUDGE_SYSTEM_PROMPT = `You check an AI agent's long-term memory for contradictions. You get numbered pairs of stored statements (A and B).
Two statements contradict when an agent cannot follow both in the same situation: one requires what the other forbids, or they state incompatible facts (e.g. "Use tabs for indentation" vs "Indent with spaces").
They do not contradict when they are about different things, when one is a compatible refinement or special case of the other, or when they merely differ in wording or detail.
Answer with strict JSON only: no prose, no markdown, no code fences. The shape:
{"judgements": [{"pair": 1, "contradiction": true, "confidence": 0.9, "explanation": "one short sentence"}]}
Give exactly one judgement per pair, using the pair's number. confidence is a number from 0 to 1: how sure you are of your answer about contradiction.`;

export function judgePrompt(pairs: Array<{ a: EngramDoc; b: EngramDoc }>): string {
  const blocks = pairs.map(
    ({ a, b }, i) =>
      `Pair ${i + 1}\nA (${a.id}, scope ${a.scope}): ${oneLine(a.statement)}\nB (${b.id}, scope ${b.scope}): ${oneLine(b.statement)}`,
  );
  return `Judge these ${pairs.length} pair${pairs.length === 1 ? '' : 's'}:\n\n${blocks.join('\n\n')}\n\nAnswer with the JSON object only.`;
}

/** The judge backed by an OpenAI-compatible chat API. */
export function llmJudge(client: ChatClient): TensionJudge {
  return {
    model: client.model,
    async judge(pairs) {
      const res = await client.complete({
        messages: [
          { role: 'system', content: JUDGE_SYSTEM_PROMPT },
          { role: 'user', content: judgePrompt(pairs) },
        ],
        temperature: 0,
      });
      return parseJudgements(res.content, pairs.length);
    },
  };
}

/**
 * Reads the judge's answer for `count` pairs. Tolerates code fences, prose around the JSON, a bare
 * array, other list keys, string booleans and numbers, and percentages; anything it cannot read
 * becomes an error for the pairs concerned, never an exception.
 */
export function parseJudgements(content: string, count: number): PairJudgement[] {
  const raw = content.length > 500 ? `${content.slice(0, 500)}...` : content;
  const fail = (error: string): PairJudgement[] => Array.from({ length: count }, () => ({ ok: false as const, error, raw }));
  const value = extractJson(content);
  if (value === undefined) return fail('the judge did not answer with JSON');
  let items: unknown[] | undefined;
  if (Array.isArray(value)) items = value;
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const list = ['judgements', 'judgments', 'results', 'pairs', 'items', 'answers'].map((k) => o[k]).find(Array.isArray);
    if (list) items = list as unknown[];
    else if ('contradiction' in o) items = [o];
  }
  if (!items) return fail('the judge answered JSON without a list of judgements');

  const out: Array<PairJudgement | undefined> = Array.from({ length: count }, () => undefined);
  items.forEach((item, position) => {
    if (!item || typeof item !== 'object') return;
    const o = item as Record<string, unknown>;
    const index = pairIndex(o.pair ?? o.index ?? o.id ?? o.pair_id) ?? (items!.length === count ? position + 1 : undefined);
    if (index === undefined || index < 1 || index > count || out[index - 1]) return;
    out[index - 1] = readJudgement(o, raw);
  });
  return out.map((j) => j ?? { ok: false, error: 'the judge gave no judgement for this pair', raw });
}

function readJudgement(o: Record<string, unknown>, raw: string): PairJudgement {
  const c = o.contradiction ?? o.contradicts ?? o.is_contradiction;
  const contradiction = c === true || c === 'true' || c === 'yes' ? true : c === false || c === 'false' || c === 'no' ? false : undefined;
  if (contradiction === undefined) return { ok: false, error: 'the judgement has no boolean "contradiction"', raw };
  let confidence = typeof o.confidence === 'string' ? Number(o.confidence.replace(/%$/, '')) : o.confidence;
  if (typeof confidence !== 'number' || !Number.isFinite(confidence))
    return { ok: false, error: 'the judgement has no numeric "confidence"', raw };
  if (confidence > 1 && confidence <= 100) confidence /= 100;
  if (confidence < 0 || confidence > 1) return { ok: false, error: `the judgement's confidence ${confidence} is outside 0..1`, raw };
  const e = o.explanation ?? o.reason ?? o.rationale;
  return { ok: true, contradiction, confidence, explanation: typeof e === 'string' ? oneLine(e) : '' };
}

function pairIndex(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string') {
    const m = /(\d+)/.exec(v);
    if (m) return Number(m[1]);
  }
  return undefined;
}

function extractJson(content: string): unknown {
  const text = content.replace(/```(?:json)?/gi, '').trim();
  try {
    return JSON.parse(text);
  } catch {
    /* look for the JSON inside */
  }
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = text.indexOf(open);
    const end = text.lastIndexOf(close);
    if (start >= 0 && end > start) {
      try {
        return JSON.parse(text.slice(start, end + 1));
      } catch {
        /* try the other shape */
      }
    }
  }
  return undefined;
}
