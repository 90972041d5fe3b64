import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import type { OpContext } from '../ops/context.js';
import type { EngramDoc } from '../model/engram-types.js';
import { SvcError } from '../errors.js';
import { ChatClient, LlmError, chatCompletionsUrl } from '../llm/chat.js';
import { DEFAULT_LLM_MODEL, OPENAI_BASE_URL, chatClientFor, resolveLlmSettings } from '../llm/settings.js';
import {
  confirmTension,
  daysApart,
  dismissTension,
  listTensions,
  purgeTensions,
  resolveTension,
  scanTensions,
  temporalFactor,
  tensionConfig,
} from '../ops/tensions/tensions.js';
import { LocalTensionStore } from '../store/tension-records.js';
import { candidatePairs, linkedBySupersedes } from '../ops/tensions/candidates.js';
import { contentTokens } from '../search/text-overlap.js';
import { judgePrompt, llmJudge, parseJudgements, type PairJudgement, type TensionJudge } from '../ops/tensions/judge.js';
import { TENSION_TOOLS } from '../mcp/tension-tools.js';
import { invokeTool } from '../mcp/dispatch.js';
import type { ToolContext } from '../mcp/types.js';
import { freePort } from './support/free-port.js';

// ------------------------------------------------------------------ a chat-completions server

type Handler = (
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any,
  req: IncomingMessage,
) => { status?: number; headers?: Record<string, string>; body?: unknown; raw?: string; hang?: boolean };

let server: Server;
let base = '';
let handler: Handler;
const requests: Array<{ body: any; auth?: string; url?: string }> = []; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c as Buffer));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : undefined;
      requests.push({ body, auth: req.headers.authorization, url: req.url });
      const out = handler(body, req);
      if (out.hang) return; // never answers
      res.writeHead(out.status ?? 200, { 'content-type': 'application/json', ...out.headers });
      res.end(out.raw ?? JSON.stringify(out.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  requests.length = 0;
  handler = () => ({ body: completion('{}') });
});

const completion = (content: string) => ({
  id: 'x',
  model: 'served-model',
  choices: [{ index: 0, message: { role: 'assistant', content } }],
});
const client = (extra: Partial<ConstructorParameters<typeof ChatClient>[0]> = {}) =>
  new ChatClient({ baseUrl: base, apiKey: 'k-1', model: 'm-1', retryBaseMs: 1, ...extra });

async function caught(p: Promise<unknown>): Promise<LlmError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(LlmError);
    return err as LlmError;
  }
  throw new Error('expected a failure');
}

// ------------------------------------------------------------------ the client

describe('ChatClient', () => {
  it('posts an OpenAI chat-completions request with the bearer key and returns the first choice', async () => {
    handler = () => ({ body: { ...completion('hello'), usage: { total_tokens: 7 } } });
    const r = await client().complete({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(r).toEqual({ content: 'hello', model: 'served-model', attempts: 1, usage: { total_tokens: 7 } });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe('/v1/chat/completions');
    expect(requests[0]!.auth).toBe('Bearer k-1');
    expect(requests[0]!.body).toEqual({
      model: 'm-1',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hi' },
      ],
      temperature: 0,
    });
  });

  it('joins the base URL and the route whatever the slashes', () => {
    expect(chatCompletionsUrl('https://api.example.com/v1')).toBe('https://api.example.com/v1/chat/completions');
    expect(chatCompletionsUrl('https://api.example.com/v1/')).toBe('https://api.example.com/v1/chat/completions');
    expect(chatCompletionsUrl('http://h:1/v1/chat/completions')).toBe('http://h:1/v1/chat/completions');
  });

  it('retries 429 (honouring Retry-After) and 5xx, then succeeds', async () => {
    let n = 0;
    handler = () => {
      n += 1;
      if (n === 1) return { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'slow down' } } };
      if (n === 2) return { status: 503, body: { error: { message: 'overloaded' } } };
      return { body: completion('ok') };
    };
    const r = await client().complete({ messages: [{ role: 'user', content: 'x' }] });
    expect(r.content).toBe('ok');
    expect(r.attempts).toBe(3);
  });

  it('gives up after maxRetries with the status and the server message', async () => {
    handler = () => ({ status: 502, body: { error: { message: 'bad gateway upstream' } } });
    const e = await caught(client({ maxRetries: 2 }).complete({ messages: [{ role: 'user', content: 'x' }] }));
    expect(requests).toHaveLength(3);
    expect(e.status).toBe(502);
    expect(e.message).toBe(`the LLM at ${base}/chat/completions answered 502: bad gateway upstream (gave up after 3 attempts)`);
    expect(e).toBeInstanceOf(SvcError);
  });

  it('does not retry 4xx and says what to check', async () => {
    handler = () => ({ status: 401, body: { error: { message: 'Incorrect API key provided' } } });
    const auth = await caught(client().complete({ messages: [{ role: 'user', content: 'x' }] }));
    expect(requests).toHaveLength(1);
    expect(auth.kind).toBe('invalid');
    expect(auth.message).toMatch(/refused the request with 401: Incorrect API key provided \(check the API key/);

    handler = () => ({ status: 404, raw: 'Not Found' });
    const missing = await caught(client().complete({ messages: [{ role: 'user', content: 'x' }] }));
    expect(missing.message).toMatch(/404: Not Found \(check --llm-base-url, which usually ends in \/v1/);
  });

  it('times out a silent server, and reports an unreachable one', async () => {
    handler = () => ({ hang: true });
    const slow = await caught(client({ timeoutMs: 150, maxRetries: 1 }).complete({ messages: [{ role: 'user', content: 'x' }] }));
    expect(slow.message).toMatch(/cannot reach the LLM at .*: no answer within 0 s \(gave up after 2 attempts\)/);
    expect(requests).toHaveLength(2);

    const port = await freePort();
    const closed = new ChatClient({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'k', model: 'm', maxRetries: 0 });
    const refused = await caught(closed.complete({ messages: [{ role: 'user', content: 'x' }] }));
    expect(refused.message).toBe(`cannot reach the LLM at http://127.0.0.1:${port}/v1/chat/completions: ECONNREFUSED`);
  });

  it('reports answers that are not chat completions', async () => {
    handler = () => ({ raw: '<html>proxy login</html>' });
    expect((await caught(client().complete({ messages: [] }))).message).toMatch(
      /answered with something that is not JSON: <html>proxy login<\/html>/,
    );
    handler = () => ({ body: { choices: [] } });
    expect((await caught(client().complete({ messages: [] }))).message).toMatch(/without choices\[0\]\.message\.content/);
  });

  it('refuses a bad base URL, an empty key or model', () => {
    expect(() => new ChatClient({ baseUrl: 'not a url', apiKey: 'k', model: 'm' })).toThrow(/not a URL/);
    expect(() => new ChatClient({ baseUrl: 'ftp://x/v1', apiKey: 'k', model: 'm' })).toThrow(/http or https/);
    expect(() => new ChatClient({ baseUrl: base, apiKey: ' ', model: 'm' })).toThrow(/API key is empty/);
    expect(() => new ChatClient({ baseUrl: base, apiKey: 'k', model: '' })).toThrow(/model name is empty/);
  });
});

describe('resolveLlmSettings', () => {
  it('prefers flags, then SVC_LLM_*, then the hosted OpenAI pair', () => {
    expect(
      resolveLlmSettings({ baseUrl: 'http://a/v1', apiKey: 'fk', model: 'fm' }, { SVC_LLM_BASE_URL: 'http://b/v1', SVC_LLM_API_KEY: 'sk' }),
    ).toMatchObject({
      baseUrl: 'http://a/v1',
      apiKey: 'fk',
      model: 'fm',
      baseFrom: 'flag',
    });
    expect(resolveLlmSettings({}, { SVC_LLM_BASE_URL: 'http://b/v1', SVC_LLM_API_KEY: 'sk', SVC_LLM_MODEL: 'sm' })).toMatchObject({
      baseUrl: 'http://b/v1',
      apiKey: 'sk',
      model: 'sm',
      baseFrom: 'SVC_LLM_BASE_URL',
    });
    expect(resolveLlmSettings({}, { OPENAI_API_KEY: 'ok' })).toMatchObject({
      baseUrl: OPENAI_BASE_URL,
      apiKey: 'ok',
      model: DEFAULT_LLM_MODEL,
      baseFrom: 'default',
    });
    expect(resolveLlmSettings({}, { OPENAI_API_KEY: 'ok', OPENAI_BASE_URL: 'http://proxy/v1' })).toMatchObject({
      baseUrl: 'http://proxy/v1',
      baseFrom: 'OPENAI_BASE_URL',
    });
  });

  it('never sends OPENAI_API_KEY to a custom base URL; empty variables are unset', () => {
    expect(() => resolveLlmSettings({ baseUrl: 'http://elsewhere/v1' }, { OPENAI_API_KEY: 'ok' })).toThrow(/no API key/);
    expect(() => resolveLlmSettings({}, { SVC_LLM_BASE_URL: 'http://elsewhere/v1', OPENAI_API_KEY: 'ok' })).toThrow(
      /SVC_LLM_BASE_URL\) but no API key/,
    );
    expect(() => resolveLlmSettings({}, { OPENAI_API_KEY: '  ' }, 'tensions --scan')).toThrow(
      /^tensions --scan needs an OpenAI-compatible chat-completions endpoint/,
    );
  });

  it('reads timeout and retries from the environment', () => {
    const s = resolveLlmSettings({}, { OPENAI_API_KEY: 'k', SVC_LLM_TIMEOUT_MS: '1500', SVC_LLM_MAX_RETRIES: '0' });
    expect(s).toMatchObject({ timeoutMs: 1500, maxRetries: 0 });
    expect(chatClientFor(s).model).toBe(DEFAULT_LLM_MODEL);
    expect(() => resolveLlmSettings({}, { OPENAI_API_KEY: 'k', SVC_LLM_MAX_RETRIES: 'lots' })).toThrow(
      /SVC_LLM_MAX_RETRIES must be a whole number/,
    );
  });
});

// ------------------------------------------------------------------ candidates and the judge

const doc = (id: string, statement: string, extra: Partial<EngramDoc> = {}): EngramDoc =>
  ({ id, statement, status: 'active', type: 'behavioral', scope: 'global', content_hash: `h-${statement}`, ...extra }) as EngramDoc;

describe('candidate pairs', () => {
  it('keeps content words, folded, without stop words, with light plural stemming', () => {
    expect([...contentTokens('Use the Packages, not the npm CLI; 2 spaces! Status: Analysis')]).toEqual([
      'use',
      'package',
      'npm',
      'cli',
      '2',
      'space',
      'status',
      'analysis',
    ]);
    // "Always" and "always" fold alike, whatever the stem.
    expect(contentTokens('Always')).toEqual(contentTokens('always'));
  });

  it('orders pairs by overlap, drops weak ones, supersedes-linked ones (either side) and identical statements', () => {
    const a = doc('ENG-A', 'Indent code with tabs');
    const b = doc('ENG-B', 'Indent code with two spaces');
    const c = doc('ENG-C', 'Deploy the staging server on Fridays');
    const d = doc('ENG-D', 'Never deploy the staging server on Fridays');
    const e = doc('ENG-E', 'Run the unit tests with vitest', { relations: { superseded_by: ['ENG-F'] } });
    const f = doc('ENG-F', 'Run the unit tests with jest');
    const g = doc('ENG-G', 'Indent code with tabs', { content_hash: 'h-Indent code with tabs', scope: 'project:x' });
    const h = doc('ENG-H', 'Bananas are yellow');
    const pairs = candidatePairs([a, b, c, d, e, f, g, h]);
    expect(pairs.map((p) => p.key)).toEqual(['ENG-C|ENG-D', 'ENG-A|ENG-B', 'ENG-B|ENG-G']);
    expect(pairs[0]!.overlap).toBe(0.8);
    expect(linkedBySupersedes(e, f)).toBe(true);
    expect(linkedBySupersedes(f, e)).toBe(true);
    expect(linkedBySupersedes(doc('X', 'x', { relations: { supersedes: ['Y'] } }), doc('Y', 'y'))).toBe(true);
    expect(linkedBySupersedes(a, b)).toBe(false);
  });

  it('measures days apart between learned_at dates and discounts by half every 90 days', () => {
    const x = doc('X', 'x', { temporal: { learned_at: '2026-01-01T00:00:00Z' } });
    const y = doc('Y', 'y', { temporal: { learned_at: '2026-04-01T00:00:00Z' } });
    expect(daysApart(x, y)).toBe(90);
    expect(daysApart(x, doc('Z', 'z'))).toBe(0);
    expect(temporalFactor(0)).toBe(1);
    expect(temporalFactor(90)).toBe(0.5);
    expect(temporalFactor(180)).toBe(0.25);
    expect(temporalFactor(30, 30)).toBe(0.5);
  });
});

describe('parseJudgements', () => {
  const ok = (contradiction: boolean, confidence: number, explanation = ''): PairJudgement => ({
    ok: true,
    contradiction,
    confidence,
    explanation,
  });

  it('reads the requested shape, in or out of code fences and prose', () => {
    const json = JSON.stringify({
      judgements: [
        { pair: 2, contradiction: false, confidence: 0.3, explanation: 'fine' },
        { pair: 1, contradiction: true, confidence: 0.9, explanation: 'no' },
      ],
    });
    expect(parseJudgements(json, 2)).toEqual([ok(true, 0.9, 'no'), ok(false, 0.3, 'fine')]);
    expect(parseJudgements('```json\n' + json + '\n```', 2)).toEqual([ok(true, 0.9, 'no'), ok(false, 0.3, 'fine')]);
    expect(parseJudgements(`Here you go:\n${json}\nHope this helps.`, 2)).toEqual([ok(true, 0.9, 'no'), ok(false, 0.3, 'fine')]);
  });

  it('tolerates a bare array, other keys, strings and percentages', () => {
    expect(
      parseJudgements('[{"contradiction": "true", "confidence": "85%"}, {"contradiction": "no", "confidence": 70, "reason": "x"}]', 2),
    ).toEqual([ok(true, 0.85), ok(false, 0.7, 'x')]);
    expect(parseJudgements('{"results": [{"pair": "Pair 1", "contradiction": false, "confidence": 1}]}', 1)).toEqual([ok(false, 1)]);
    expect(parseJudgements('{"contradiction": true, "confidence": 0.75, "explanation": "one pair, bare"}', 1)).toEqual([
      ok(true, 0.75, 'one pair, bare'),
    ]);
  });

  it('turns what it cannot read into per-pair errors', () => {
    const prose = parseJudgements('I cannot help with that.', 2);
    expect(prose).toEqual([
      { ok: false, error: 'the judge did not answer with JSON', raw: 'I cannot help with that.' },
      { ok: false, error: 'the judge did not answer with JSON', raw: 'I cannot help with that.' },
    ]);
    expect(parseJudgements('{"verdict": "yes"}', 1)[0]).toMatchObject({
      ok: false,
      error: 'the judge answered JSON without a list of judgements',
    });
    const partial = parseJudgements(
      '{"judgements": [{"pair": 1, "contradiction": true, "confidence": 0.9}, {"pair": 1, "contradiction": false, "confidence": 0.1}, {"pair": 3, "contradiction": "maybe", "confidence": 0.5}, {"pair": 4, "contradiction": true, "confidence": 7}]}',
      4,
    );
    expect(partial[0]).toEqual(ok(true, 0.9)); // the first judgement of a pair wins
    expect(partial[1]).toMatchObject({ ok: false, error: 'the judge gave no judgement for this pair' });
    expect(partial[2]).toMatchObject({ ok: false, error: 'the judgement has no boolean "contradiction"' });
    expect(partial[3]).toMatchObject({ ok: true, confidence: 0.07 });
    expect(parseJudgements('{"judgements": [{"pair": 1, "contradiction": true, "confidence": 150}]}', 1)[0]).toMatchObject({
      ok: false,
      error: expect.stringMatching(/outside 0\.\.1/),
    });
    expect(parseJudgements('{"judgements": [{"pair": 1, "contradiction": true}]}', 1)[0]).toMatchObject({
      ok: false,
      error: 'the judgement has no numeric "confidence"',
    });
  });

  it('prompts with numbered pairs, and the LLM judge sends one call per batch', async () => {
    const pairs = [
      { a: doc('ENG-1', 'Use tabs'), b: doc('ENG-2', 'Use  spaces\nalways') },
      { a: doc('ENG-3', 'Ship on Fridays'), b: doc('ENG-4', 'Never ship on Fridays') },
    ];
    const prompt = judgePrompt(pairs);
    expect(prompt).toContain('Pair 1\nA (ENG-1, scope global): Use tabs\nB (ENG-2, scope global): Use spaces always');
    expect(prompt).toContain('Pair 2\nA (ENG-3, scope global): Ship on Fridays');
    handler = () => ({
      body: completion(
        '{"judgements": [{"pair": 1, "contradiction": true, "confidence": 0.8, "explanation": "tabs vs spaces"}, {"pair": 2, "contradiction": true, "confidence": 0.9, "explanation": "ship or not"}]}',
      ),
    });
    const judge = llmJudge(client());
    expect(judge.model).toBe('m-1');
    expect(await judge.judge(pairs)).toEqual([ok(true, 0.8, 'tabs vs spaces'), ok(true, 0.9, 'ship or not')]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body.messages[0].content).toMatch(/strict JSON only/);
    expect(requests[0]!.body.messages[1].content).toBe(prompt);
  });
});

// ------------------------------------------------------------------ scan, records and lifecycle

let root: string;
let store: LocalStore;
let tensions: LocalTensionStore;
const day = (iso: string): OpContext => ({ now: () => new Date(iso) });
const NOW = day('2026-05-10T12:00:00Z');

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-tensions-')), 'store');
  store = await LocalStore.open(root);
  tensions = new LocalTensionStore(store, root);
});
afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

/** A judge that says every pair contradicts with the confidence its rule gives, and counts its calls. */
function fakeJudge(confidenceOf: (a: string, b: string) => number | null = () => 0.9): TensionJudge & { calls: number[] } {
  const calls: number[] = [];
  return {
    model: 'fake-judge',
    calls,
    async judge(pairs) {
      calls.push(pairs.length);
      return pairs.map(({ a, b }) => {
        const c = confidenceOf(a.statement, b.statement);
        return c === null
          ? { ok: true, contradiction: false, confidence: 0.9, explanation: 'compatible' }
          : { ok: true, contradiction: true, confidence: c, explanation: 'clash' };
      });
    },
  };
}

async function seed(): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  const add = async (k: string, statement: string, at = '2026-05-01T10:00:00Z', more: Record<string, unknown> = {}) => {
    ids[k] = (await learn(store, { statement, ...more }, day(at))).engram.id;
  };
  await add('tabs', 'Indent code with tabs');
  await add('spaces', 'Indent code with two spaces');
  await add('deploy', 'Deploy the staging server on Fridays', '2025-10-03T10:00:00Z');
  await add('noDeploy', 'Never deploy the staging server on Fridays');
  await add('vitest', 'Run the unit tests with vitest');
  await add('jest', 'Run the unit tests with jest', '2026-05-01T10:00:00Z', { supersedes: [ids.vitest] });
  await add('other', 'Use the project scope for team conventions', '2026-05-01T10:00:00Z', { scope: 'project:web' });
  return ids;
}

describe('scanTensions', () => {
  it('judges candidates in batches, records contradictions at or above the threshold with dated ids', async () => {
    const ids = await seed();
    const judge = fakeJudge((a) => (a.startsWith('Indent') ? 0.65 : 0.9));
    const r = await scanTensions(tensions, { judge, batchSize: 1 }, NOW);
    expect(judge.calls).toEqual([1, 1]);
    expect(r).toMatchObject({ engrams: 7, candidates: 2, suppressed: 0, judged: 2, calls: 2, persisted: true, model: 'fake-judge' });
    expect(r.flagged).toHaveLength(1);
    expect(r.flagged[0]).toMatchObject({
      id: 'T-2026-0510-001',
      confidence: 0.9,
      judge_confidence: 0.9,
      days_apart: 210,
      temporal_discount: false,
      model: 'fake-judge',
    });
    expect(r.flagged[0]!.engrams.map((s) => s.id).sort()).toEqual([ids.deploy, ids.noDeploy].sort());
    expect(r.below_threshold).toEqual([
      { engrams: [ids.tabs, ids.spaces].sort(), confidence: 0.65, judge_confidence: 0.65, explanation: 'clash', days_apart: 0 },
    ]);

    const onDisk = parse(readFileSync(join(root, 'tensions', 'T-2026-0510-001.yaml'), 'utf8'));
    expect(onDisk).toMatchObject({
      id: 'T-2026-0510-001',
      status: 'open',
      detected_at: '2026-05-10T12:00:00.000Z',
      explanation: 'clash',
      overlap: 0.8,
    });
    expect(readFileSync(join(root, 'tensions', '.last-id'), 'utf8')).toBe('T-2026-0510-001\n');

    // The next record of the day takes the next number; a new day starts again at 001.
    const low = await scanTensions(tensions, { judge: fakeJudge(), minConfidence: 0.5 }, NOW);
    expect(low.suppressed).toBe(1);
    expect(low.flagged.map((t) => t.id)).toEqual(['T-2026-0510-002']);
    await purgeTensions(tensions, {}, NOW); // nothing closed yet
    expect((await listTensions(tensions)).records.map((t) => t.id)).toEqual(['T-2026-0510-002', 'T-2026-0510-001']);
  });

  it('discounts by days apart when asked, with a configurable half-life', async () => {
    await seed();
    const r = await scanTensions(tensions, { judge: fakeJudge(() => 0.95), temporalDiscount: true, persist: false }, NOW);
    expect(r.temporal_discount).toBe(true);
    expect(r.flagged.map((t) => t.confidence)).toEqual([0.95]); // tabs/spaces, same day
    expect(r.below_threshold[0]!.confidence).toBeCloseTo(0.95 * 0.5 ** (210 / 90), 4);
    const slow = await scanTensions(
      tensions,
      { judge: fakeJudge(() => 0.95), temporalDiscount: true, halfLifeDays: 10_000, persist: false },
      NOW,
    );
    expect(slow.flagged).toHaveLength(2);
  });

  it('writes nothing on a dry run and judges recorded pairs again', async () => {
    await seed();
    const dry = await scanTensions(tensions, { judge: fakeJudge(), persist: false }, NOW);
    expect(dry.flagged.map((t) => t.id)).toEqual([null, null]);
    expect(existsSync(join(root, 'tensions'))).toBe(false);
    await scanTensions(tensions, { judge: fakeJudge() }, NOW);
    const again = await scanTensions(tensions, { judge: fakeJudge(), persist: false }, NOW);
    expect(again).toMatchObject({ suppressed: 0, judged: 2 });
  });

  it('narrows by scope and domain, caps pairs, and validates its options', async () => {
    await seed();
    expect((await scanTensions(tensions, { judge: fakeJudge(), scope: 'project:web', persist: false }, NOW)).engrams).toBe(1);
    const capped = await scanTensions(tensions, { judge: fakeJudge(), maxPairs: 1, persist: false }, NOW);
    expect(capped.judged).toBe(1);
    expect(capped.flagged[0]!.overlap).toBe(0.8); // the highest overlap first
    await expect(scanTensions(tensions, { judge: fakeJudge(), minConfidence: 2 }, NOW)).rejects.toThrow(/between 0 and 1/);
    await expect(scanTensions(tensions, { judge: fakeJudge(), batchSize: 0 }, NOW)).rejects.toThrow(/batch size/);
  });

  it('records each pair once when two scans run at the same time', async () => {
    await seed();
    // Both scans pick their candidates before either records: the second sees the first's records under the lock.
    const [a, b] = await Promise.all([
      scanTensions(tensions, { judge: fakeJudge() }, NOW),
      scanTensions(new LocalTensionStore(store, root), { judge: fakeJudge() }, NOW),
    ]);
    const recorded = [...a.flagged, ...b.flagged].filter((t) => t.id !== null);
    expect(a.judged + b.judged).toBe(4);
    expect(recorded).toHaveLength(2);
    expect(new Set(recorded.map((t) => t.id)).size).toBe(2);
    expect(readdirSync(join(root, 'tensions')).filter((f) => f.endsWith('.yaml'))).toHaveLength(2);
  });
});

describe('tension lifecycle', () => {
  async function twoRecords(): Promise<{ ids: Record<string, string>; indent: string; deploy: string }> {
    const ids = await seed();
    const r = await scanTensions(tensions, { judge: fakeJudge() }, NOW);
    const of = (id: string) => r.flagged.find((t) => t.engrams.some((s) => s.id === id))!.id!;
    return { ids, indent: of(ids.tabs), deploy: of(ids.deploy) };
  }

  it('confirm links both engrams as conflicts; dismiss of a confirmed one unlinks them', async () => {
    const { ids, indent } = await twoRecords();
    const c = await confirmTension(tensions, indent, day('2026-05-11T00:00:00Z'), 'both are in the style guide');
    expect(c).toMatchObject({
      changed: true,
      record: { status: 'confirmed', confirmed_at: '2026-05-11T00:00:00.000Z', reason: 'both are in the style guide' },
    });
    expect((await store.get(ids.tabs))!.relations!.conflicts).toEqual([ids.spaces]);
    expect((await store.get(ids.spaces))!.relations!.conflicts).toEqual([ids.tabs]);
    expect((await confirmTension(tensions, indent, NOW)).changed).toBe(false);

    const d = await dismissTension(tensions, indent, NOW);
    expect(d.record.status).toBe('dismissed');
    expect(d.record.confirmed_at).toBe('2026-05-11T00:00:00.000Z'); // history of the record kept
    expect((await store.get(ids.tabs))!.relations!.conflicts).toEqual([]);
    // A dismissed pair is not judged again.
    const judge = fakeJudge();
    const later = await scanTensions(tensions, { judge }, NOW);
    expect(later).toMatchObject({ suppressed: 2, judged: 0 });
    expect(judge.calls).toEqual([]);
  });

  it('resolve retires the loser through forget, keeps the winner, and is final', async () => {
    const { ids, deploy, indent } = await twoRecords();
    await expect(resolveTension(tensions, deploy, ids.tabs, NOW)).rejects.toThrow(/--winner must be one of/);
    const r = await resolveTension(tensions, deploy, ids.noDeploy, day('2026-05-12T00:00:00Z'));
    expect(r).toMatchObject({ changed: true, winner: ids.noDeploy, loser: ids.deploy, loser_action: 'retired' });
    expect(r.record).toMatchObject({
      status: 'resolved',
      winner: ids.noDeploy,
      loser: ids.deploy,
      resolved_at: '2026-05-12T00:00:00.000Z',
    });
    const loser = (await store.get(ids.deploy))!;
    expect(loser.status).toBe('retired');
    expect(loser.retirement).toMatchObject({ reason: `tension ${deploy} resolved in favour of ${ids.noDeploy}` });
    const history = await store.listEvents({ engram_id: ids.deploy });
    expect(history.map((e) => e.action)).toEqual(['created', 'retired']);
    expect((await store.get(ids.noDeploy))!.status).toBe('active');

    expect((await resolveTension(tensions, deploy, ids.noDeploy, NOW)).changed).toBe(false);
    await expect(resolveTension(tensions, deploy, ids.deploy, NOW)).rejects.toThrow(/already resolved/);
    await expect(confirmTension(tensions, deploy, NOW)).rejects.toMatchObject({ kind: 'conflict' });
    await expect(dismissTension(tensions, deploy, NOW)).rejects.toMatchObject({ kind: 'conflict' });

    // A retired engram cannot win.
    await store.write(async (tx) => {
      const e = (await tx.get(ids.tabs))!;
      e.status = 'retired';
      await tx.put(e);
    });
    await expect(resolveTension(tensions, indent, ids.tabs, NOW)).rejects.toThrow(/is retired: it cannot win/);

    expect((await listTensions(tensions)).records.map((t) => t.id)).toEqual([indent]);
    expect((await listTensions(tensions, 'all')).records.map((t) => t.id)).toEqual([indent, deploy].sort().reverse());
    expect((await listTensions(tensions, 'resolved')).records.map((t) => t.id)).toEqual([deploy]);
  });

  it('refuses unknown and malformed ids', async () => {
    await twoRecords();
    await expect(confirmTension(tensions, 'T-2020-0101-001', NOW)).rejects.toMatchObject({ kind: 'not_found' });
    await expect(confirmTension(tensions, '../../etc', NOW)).rejects.toThrow(/not a tension id/);
    await expect(tensions.get('T-1-2')).rejects.toThrow(/not a tension id/);
  });

  it('purges closed records by status and age; their ids are never handed out again', async () => {
    const { indent, deploy } = await twoRecords();
    await dismissTension(tensions, indent, day('2026-05-01T00:00:00Z'));
    await dismissTension(tensions, deploy, day('2026-05-09T00:00:00Z'));
    expect((await purgeTensions(tensions, { status: 'resolved' }, NOW)).purged).toEqual([]);
    expect((await purgeTensions(tensions, { olderThanDays: 5 }, NOW)).purged).toEqual([indent]);
    expect((await purgeTensions(tensions, { status: 'dismissed' }, NOW)).purged).toEqual([deploy]);
    expect((await listTensions(tensions, 'all')).records).toEqual([]);
    const again = await scanTensions(tensions, { judge: fakeJudge() }, NOW);
    expect(again.flagged.map((t) => t.id).sort()).toEqual(['T-2026-0510-003', 'T-2026-0510-004']);
  });

  it('reports an unreadable record instead of dropping it silently or failing', async () => {
    await twoRecords();
    writeFileSync(join(root, 'tensions', 'T-2026-0510-009.yaml'), 'id: [broken');
    writeFileSync(join(root, 'tensions', 'T-2026-0510-010.yaml'), 'id: T-2026-0510-011\nstatus: open\n');
    const { records, warnings } = await listTensions(tensions, 'all');
    expect(records).toHaveLength(2);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/T-2026-0510-009\.yaml is unreadable/);
    expect(warnings[1]).toMatch(/T-2026-0510-010\.yaml is not a valid record/);
  });

  it('reads tensions.temporal_discount and half_life_days from the store config', async () => {
    expect(await tensionConfig(root)).toEqual({ temporal_discount: false, half_life_days: 90 });
    writeFileSync(join(root, 'config.yaml'), 'store_version: 1\ntensions:\n  temporal_discount: true\n  half_life_days: 30\n');
    expect(await tensionConfig(root)).toEqual({ temporal_discount: true, half_life_days: 30 });
    writeFileSync(join(root, 'config.yaml'), 'tensions: [oops');
    expect((await tensionConfig(root)).warning).toMatch(/not valid YAML/);
  });
});

// ------------------------------------------------------------------ MCP tools

describe('svc_tensions and svc_tensions_purge', () => {
  const [tensionsTool, purgeTool] = TENSION_TOOLS as [(typeof TENSION_TOOLS)[number], (typeof TENSION_TOOLS)[number]];
  const ctx = (): ToolContext => ({
    backend: store,
    embedder: {
      load: async () => ({ state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'test' }),
      peek: () => undefined,
      probe: async () => ({ state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'test' }),
    },
    now: () => new Date('2026-05-10T12:00:00Z'),
    local: { root, idPrefix: () => store.idPrefix(), quarantined: () => [], vectorStats: () => ({ vectors: 0, pending: 0 }) },
  });

  it('scan against the chat API, then list, confirm, resolve and purge', async () => {
    const ids = await seed();
    handler = (body) => {
      const prompt: string = body.messages[1].content;
      const n = [...prompt.matchAll(/^Pair (\d+)$/gm)].length;
      return {
        body: completion(
          JSON.stringify({
            judgements: Array.from({ length: n }, (_, i) => ({ pair: i + 1, contradiction: true, confidence: 0.8, explanation: 'clash' })),
          }),
        ),
      };
    };
    const scanned = (await invokeTool(tensionsTool, ctx(), {
      action: 'scan',
      llm_base_url: base,
      llm_api_key: 'k-1',
      model: 'm-2',
      batch_size: 1,
    })) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(scanned).toMatchObject({ calls: 2, model: 'm-2', persisted: true });
    expect(scanned.flagged.map((t: any) => t.id)).toEqual(['T-2026-0510-001', 'T-2026-0510-002']); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(requests.every((r) => r.auth === 'Bearer k-1' && r.body.model === 'm-2')).toBe(true);

    const listed = (await invokeTool(tensionsTool, ctx(), {})) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(listed).toMatchObject({ status: 'unresolved', count: 2 });
    expect(listed.tensions[0].engrams[0].status).toBe('active');

    const indent = scanned.flagged.find((t: any) => t.engrams.some((s: any) => s.id === ids.tabs)).id; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(await invokeTool(tensionsTool, ctx(), { action: 'confirm', tension_id: indent })).toMatchObject({
      action: 'confirmed',
      changed: true,
    });
    expect(await invokeTool(tensionsTool, ctx(), { action: 'resolve', tension_id: indent, winner: ids.spaces })).toMatchObject({
      action: 'resolved',
      loser: ids.tabs,
      loser_action: 'retired',
    });
    expect(((await invokeTool(tensionsTool, ctx(), { status: 'all' })) as any).count).toBe(2); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(await invokeTool(purgeTool, ctx(), { status: 'resolved' })).toEqual({ status: 'resolved', purged: 1, ids: [indent] });
  });

  it('validate their arguments and need a local store', async () => {
    await expect(invokeTool(tensionsTool, ctx(), { action: 'confirm' })).rejects.toThrow(/tension_id: is required for action "confirm"/);
    await expect(invokeTool(tensionsTool, ctx(), { action: 'resolve', tension_id: 'T-2026-0510-001' })).rejects.toThrow(
      /winner: is required/,
    );
    await expect(invokeTool(tensionsTool, ctx(), { action: 'scan', llm_base_url: base })).rejects.toThrow(
      /llm_api_key: is required with llm_base_url/,
    );
    const { local: _local, ...hub } = ctx();
    await expect(invokeTool(tensionsTool, hub, {})).rejects.toThrow(/need a local store/);
  });
});
