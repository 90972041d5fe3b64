import { describe, it, expect, afterAll } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { okIn, runIn, tempStore, type RunOptions, type SvcRun } from '../../engine/test/support/run-svc.js';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { claudeProjectKey } from '../../engine/ops/host-memory.js';

// `svc tensions` and `svc audit` end to end: the compiled CLI as a child process, its LLM a real
// HTTP server in this process that speaks the OpenAI chat-completions API.

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

// ------------------------------------------------------------------ the fake LLM

const KEY = 'test-key-123';

interface Verdict {
  contradiction: boolean;
  confidence: number;
  explanation: string;
}

interface Call {
  pairs: Array<{ n: number; a: string; b: string }>;
  prompt: string;
  model: string;
  status: number;
}

/**
 * One chat-completions endpoint per test (its own port), so concurrent tests never share state.
 * It checks the bearer key, reads the numbered pairs out of the prompt and answers each with the
 * canned verdict for its two statements.
 */
class FakeLlm {
  readonly calls: Call[] = [];
  /** Answer 429 to this many requests first (Retry-After: 0). */
  rateLimited = 0;
  /** Answer 500 to every request. */
  broken = false;
  /** A batch holding a statement matching this gets prose instead of JSON. */
  garbleWhen?: RegExp;
  /** A batch holding a statement matching this gets JSON that leaves that pair out. */
  omitWhen?: RegExp;
  private server!: Server;
  url = '';

  constructor(private readonly verdicts: Array<{ a: RegExp; b: RegExp; verdict: Verdict }>) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Pairs sent to the judge over all calls, as "statement A || statement B". */
  judgedPairs(): string[] {
    return this.calls.flatMap((c) => c.pairs.map((p) => `${p.a} || ${p.b}`));
  }

  private verdictFor(a: string, b: string): Verdict {
    for (const v of this.verdicts) {
      if ((v.a.test(a) && v.b.test(b)) || (v.a.test(b) && v.b.test(a))) return v.verdict;
    }
    return { contradiction: false, confidence: 0.85, explanation: 'They are about different things.' };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
      return send(404, { error: { message: `no route ${req.method} ${req.url}` } });
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      model: string;
      messages: Array<{ role: string; content: string }>;
    };
    const prompt = body.messages.find((m) => m.role === 'user')?.content ?? '';
    const pairs = [...prompt.matchAll(/Pair (\d+)\nA \(([^,]+), scope [^)]*\): (.*)\nB \(([^,]+), scope [^)]*\): (.*)/g)].map((m) => ({
      n: Number(m[1]),
      a: m[3]!,
      b: m[5]!,
    }));
    const call: Call = { pairs, prompt, model: body.model, status: 200 };
    this.calls.push(call);
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      call.status = 401;
      return send(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } });
    }
    if (this.rateLimited > 0) {
      this.rateLimited -= 1;
      call.status = 429;
      return send(429, { error: { message: 'Rate limit reached for requests' } }, { 'retry-after': '0' });
    }
    if (this.broken) {
      call.status = 500;
      return send(500, { error: { message: 'The server had an error while processing your request' } });
    }
    const statements = pairs.flatMap((p) => [p.a, p.b]);
    let content: string;
    if (this.garbleWhen && statements.some((s) => this.garbleWhen!.test(s))) {
      content = 'I am sorry, but I cannot judge these statements without more context.';
    } else {
      const judgements = pairs
        .filter((p) => !(this.omitWhen && (this.omitWhen.test(p.a) || this.omitWhen.test(p.b))))
        .map((p) => ({ pair: p.n, ...this.verdictFor(p.a, p.b) }));
      // Wrapped in a code fence, as chat models like to do: the client must cope.
      content = '```json\n' + JSON.stringify({ judgements }) + '\n```';
    }
    send(200, {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    });
  }
}

const S = {
  pnpm: 'Use pnpm, not npm, for installing packages',
  npm: 'Use npm for installing packages in CI',
  tabs: 'Indent code with tabs',
  spaces: 'Indent code with two spaces',
  vitest: 'Run the unit tests with vitest',
  jest: 'Run the unit tests with jest',
  deploy: 'Deploy the staging server on Fridays',
  noDeploy: 'Never deploy the staging server on Fridays',
};

const VERDICTS = [
  {
    a: /pnpm/,
    b: /npm for installing packages in CI/,
    verdict: { contradiction: true, confidence: 0.92, explanation: 'One says pnpm, the other npm.' },
  },
  { a: /with tabs/, b: /two spaces/, verdict: { contradiction: true, confidence: 0.6, explanation: 'Tabs versus spaces.' } },
  { a: /with vitest/, b: /with jest/, verdict: { contradiction: true, confidence: 0.99, explanation: 'Two test runners.' } },
  {
    a: /^Deploy the staging/,
    b: /^Never deploy the staging/,
    verdict: { contradiction: true, confidence: 0.95, explanation: 'Deploy on Fridays or never.' },
  },
];

const servers: FakeLlm[] = [];
async function fakeLlm(): Promise<FakeLlm> {
  const llm = await new FakeLlm(VERDICTS).start();
  servers.push(llm);
  return llm;
}
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

// ------------------------------------------------------------------ helpers

/** No LLM settings leak in from the machine running the tests. */
const CLEAN_ENV = {
  OPENAI_API_KEY: '',
  OPENAI_BASE_URL: '',
  SVC_LLM_API_KEY: '',
  SVC_LLM_BASE_URL: '',
  SVC_LLM_MODEL: '',
  SVC_LLM_MAX_RETRIES: '',
};

function run(store: string, args: string[], opts: RunOptions = {}): Promise<SvcRun> {
  return runIn(store, args, { ...opts, env: { ...CLEAN_ENV, ...opts.env } });
}

function ok(store: string, args: string[], opts: RunOptions = {}): Promise<Json> {
  return okIn(store, args, { ...opts, env: { ...CLEAN_ENV, ...opts.env } });
}

async function fails(store: string, args: string[], opts: RunOptions = {}): Promise<{ kind: string; message: string; run: SvcRun }> {
  const r = await run(store, args, opts);
  expect(r.code, `svc ${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(1);
  const lines = r.stderr.split('\n').filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  const { error } = JSON.parse(lines[0]!) as { error: { kind: string; message: string } };
  return { ...error, run: r };
}

const llmFlags = (llm: FakeLlm, ...more: string[]): string[] => [
  '--llm-base-url',
  llm.url,
  '--llm-api-key',
  KEY,
  '--model',
  'judge-1',
  ...more,
];
const scan = (store: string, llm: FakeLlm, ...more: string[]): Promise<Json> =>
  ok(store, ['tensions', '--scan', ...llmFlags(llm, ...more)]);

type Ids = Record<keyof typeof S, string>;

/**
 * A store with the eight statements, learned in-process so their dates can be set: the deploy
 * pair 200 days apart, everything else on one day; jest supersedes vitest.
 */
async function seededStore(): Promise<{ store: string; ids: Ids }> {
  const root = tempStore('tensions');
  const store = await LocalStore.open(root);
  const ids = {} as Ids;
  const at = (iso: string) => ({ now: () => new Date(iso) });
  try {
    for (const key of ['pnpm', 'npm', 'tabs', 'spaces', 'vitest'] as const) {
      ids[key] = (await learn(store, { statement: S[key] }, at('2026-03-01T10:00:00Z'))).engram.id;
    }
    ids.jest = (await learn(store, { statement: S.jest, supersedes: [ids.vitest] }, at('2026-03-01T11:00:00Z'))).engram.id;
    ids.deploy = (await learn(store, { statement: S.deploy }, at('2025-08-13T10:00:00Z'))).engram.id;
    ids.noDeploy = (await learn(store, { statement: S.noDeploy }, at('2026-03-01T10:00:00Z'))).engram.id;
  } finally {
    store.close();
  }
  return { store: root, ids };
}

const tensionFiles = (store: string): string[] =>
  existsSync(join(store, 'tensions')) ? readdirSync(join(store, 'tensions')).filter((f) => f.endsWith('.yaml')) : [];
const pairOf = (t: Json): string[] => t.engrams.map((s: Json) => s.id).sort();
const sorted = (...xs: string[]): string[] => [...xs].sort();
const readYaml = (path: string): Json => parse(readFileSync(path, 'utf8'));
const T_ID = /^T-\d{4}-\d{4}-\d{3,}$/;

// ------------------------------------------------------------------ tensions

describe.concurrent('svc tensions --scan', () => {
  it('fails with exit 1 and one clear line when there is no API key or base URL', async () => {
    const store = tempStore();
    const e = await fails(store, ['tensions', '--scan']);
    expect(e.kind).toBe('invalid');
    expect(e.message).toMatch(/OPENAI_API_KEY/);
    expect(e.message).toMatch(/--llm-base-url/);
    expect(existsSync(store)).toBe(false); // nothing was opened

    const noKey = await fails(store, ['tensions', '--scan', '--llm-base-url', 'http://127.0.0.1:9/v1']);
    expect(noKey.message).toMatch(/no API key.*--llm-api-key/);

    // A hosted key is never sent to a custom endpoint.
    const leak = await fails(store, ['tensions', '--scan', '--llm-base-url', 'http://127.0.0.1:9/v1'], {
      env: { OPENAI_API_KEY: 'sk-hosted' },
    });
    expect(leak.message).toMatch(/no API key/);

    const text = await run(store, ['tensions', '--scan', '--no-json']);
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^svc: tensions --scan needs an OpenAI-compatible chat-completions endpoint/);
  });

  it('flags contradictions at or above the threshold, persists them as T- records, never flags a supersedes pair', async () => {
    const { store, ids } = await seededStore();
    const llm = await fakeLlm();
    const r = await scan(store, llm);

    expect(r.persisted).toBe(true);
    expect(r.engrams).toBe(8);
    expect(r.candidates).toBe(3); // deploy pair, pnpm/npm, tabs/spaces; vitest/jest is linked by supersedes
    expect(r.judged).toBe(3);
    expect(r.calls).toBe(1); // batch size 5
    expect(r.model).toBe('judge-1');
    expect(llm.calls[0]!.model).toBe('judge-1');
    expect(llm.judgedPairs().some((p) => p.includes('vitest') || p.includes('jest'))).toBe(false);

    expect(r.flagged.map(pairOf)).toEqual([sorted(ids.deploy, ids.noDeploy), sorted(ids.pnpm, ids.npm)]); // highest confidence first
    expect(r.flagged.map((t: Json) => t.confidence)).toEqual([0.95, 0.92]);
    for (const t of r.flagged) expect(t.id).toMatch(T_ID);
    expect(r.below_threshold).toEqual([expect.objectContaining({ engrams: sorted(ids.tabs, ids.spaces), confidence: 0.6 })]);

    // The records are YAML files named by their id.
    const files = tensionFiles(store).sort();
    expect(files).toEqual(r.flagged.map((t: Json) => `${t.id}.yaml`).sort());
    const rec = readYaml(join(store, 'tensions', files[0]!));
    expect(rec).toMatchObject({ id: files[0]!.slice(0, -5), status: 'open', model: 'judge-1', temporal_discount: false });
    expect(rec.engrams[0]).toEqual(expect.objectContaining({ id: expect.stringMatching(/^ENG-/), statement: expect.any(String) }));
    const seqs = files.map((f) => Number(f.slice(-8, -5)));
    expect(seqs).toEqual([1, 2]);

    // The list shows them, unresolved by default.
    const list = await ok(store, ['tensions']);
    expect(list.status).toBe('unresolved');
    expect(list.count).toBe(2);
    expect(list.tensions.map(pairOf).sort()).toEqual([sorted(ids.deploy, ids.noDeploy), sorted(ids.pnpm, ids.npm)].sort());
    expect(list.tensions[0].engrams[0].status).toBe('active');

    // A second scan does not record the same pairs again, nor ask about them.
    const again = await scan(store, llm);
    expect(again.suppressed).toBe(2);
    expect(again.judged).toBe(1);
    expect(again.flagged).toEqual([]);
    expect(tensionFiles(store)).toHaveLength(2);
  });

  it('batches pairs per LLM call: --batch-size 1 is one call per pair', async () => {
    const { store } = await seededStore();
    const llm = await fakeLlm();
    const one = await scan(store, llm, '--batch-size', '1', '--no-persist');
    expect(one.calls).toBe(3);
    expect(llm.calls.map((c) => c.pairs.length)).toEqual([1, 1, 1]);

    llm.calls.length = 0;
    const two = await scan(store, llm, '--batch-size', '2', '--no-persist');
    expect(two.calls).toBe(2);
    expect(llm.calls.map((c) => c.pairs.length)).toEqual([2, 1]);

    llm.calls.length = 0;
    const five = await scan(store, llm, '--no-persist');
    expect(five.calls).toBe(1);
    expect(llm.calls.map((c) => c.pairs.length)).toEqual([3]);
    // The same verdicts whatever the batching.
    expect(one.flagged.map(pairOf)).toEqual(five.flagged.map(pairOf));

    // --max-pairs takes the highest overlap first: the deploy pair (0.8), then pnpm/npm.
    llm.calls.length = 0;
    const capped = await scan(store, llm, '--max-pairs', '2', '--batch-size', '1', '--no-persist');
    expect(capped.judged).toBe(2);
    expect(llm.judgedPairs()).toEqual([`${S.deploy} || ${S.noDeploy}`, `${S.pnpm} || ${S.npm}`]);
  });

  it('filters by --min-confidence', async () => {
    const { store, ids } = await seededStore();
    const llm = await fakeLlm();
    const low = await scan(store, llm, '--min-confidence', '0.5', '--no-persist');
    expect(low.flagged.map(pairOf)).toEqual([sorted(ids.deploy, ids.noDeploy), sorted(ids.pnpm, ids.npm), sorted(ids.tabs, ids.spaces)]);
    expect(low.min_confidence).toBe(0.5);
    const high = await scan(store, llm, '--min-confidence', '0.93', '--no-persist');
    expect(high.flagged.map(pairOf)).toEqual([sorted(ids.deploy, ids.noDeploy)]);
    expect(high.below_threshold).toHaveLength(2);
    await fails(store, ['tensions', '--scan', ...llmFlags(llm, '--min-confidence', '1.5')]);
  });

  it('discounts confidence by days apart with --temporal-discount (0.5^(days/90)), off by default or by config', async () => {
    const { store, ids } = await seededStore();
    const llm = await fakeLlm();
    const plain = await scan(store, llm, '--no-persist');
    expect(plain.temporal_discount).toBe(false);
    expect(plain.flagged.map(pairOf)).toContainEqual(sorted(ids.deploy, ids.noDeploy));

    const discounted = await scan(store, llm, '--temporal-discount', '--no-persist');
    expect(discounted.temporal_discount).toBe(true);
    expect(discounted.half_life_days).toBe(90);
    // pnpm/npm were learned the same day: no discount.
    expect(discounted.flagged).toEqual([expect.objectContaining({ confidence: 0.92, judge_confidence: 0.92, days_apart: 0 })]);
    // The deploy pair is 200 days apart: 0.95 x 0.5^(200/90) = 0.2035.
    const deploy = discounted.below_threshold.find((b: Json) => b.engrams.includes(ids.deploy));
    expect(deploy).toMatchObject({ judge_confidence: 0.95, days_apart: 200 });
    expect(deploy.confidence).toBeCloseTo(0.95 * Math.pow(0.5, 200 / 90), 3);

    // The store's config.yaml can turn it on; --no-temporal-discount turns it off again.
    writeFileSync(join(store, 'config.yaml'), 'store_version: 1\ntensions:\n  temporal_discount: true\n');
    const byConfig = await scan(store, llm, '--no-persist');
    expect(byConfig.temporal_discount).toBe(true);
    expect(byConfig.flagged).toHaveLength(1);
    const off = await scan(store, llm, '--no-temporal-discount', '--no-persist');
    expect(off.temporal_discount).toBe(false);
    expect(off.flagged).toHaveLength(2);
  });

  it('--no-persist writes nothing and ignores the recorded-pair suppress list', async () => {
    const { store } = await seededStore();
    const llm = await fakeLlm();
    const dry = await scan(store, llm, '--no-persist');
    expect(dry.persisted).toBe(false);
    expect(dry.flagged).toHaveLength(2);
    for (const t of dry.flagged) expect(t.id).toBeNull();
    expect(tensionFiles(store)).toEqual([]);
    expect(existsSync(join(store, 'tensions'))).toBe(false);
    expect((await ok(store, ['tensions'])).count).toBe(0);

    const text = await run(store, ['tensions', '--scan', '--no-json', ...llmFlags(llm, '--no-persist')]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('dry run: nothing written');
    expect(text.stdout).toContain('(not recorded)');

    // After a real scan recorded the pairs, a dry run still judges them.
    await scan(store, llm);
    const dismissed = (await ok(store, ['tensions'])).tensions[0].id;
    await ok(store, ['tensions', 'dismiss', dismissed]);
    const before = tensionFiles(store).map((f) => readFileSync(join(store, 'tensions', f), 'utf8'));
    const dryAgain = await scan(store, llm, '--no-persist');
    expect(dryAgain.suppressed).toBe(0);
    expect(dryAgain.judged).toBe(3);
    expect(dryAgain.flagged).toHaveLength(2);
    expect(tensionFiles(store).map((f) => readFileSync(join(store, 'tensions', f), 'utf8'))).toEqual(before);
  });

  it('dismiss suppresses the pair in later scans; purge lets it be flagged again', async () => {
    const { store, ids } = await seededStore();
    const llm = await fakeLlm();
    const first = await scan(store, llm);
    const pnpm = first.flagged.find((t: Json) => pairOf(t).includes(ids.pnpm)).id;
    const d = await ok(store, ['tensions', 'dismiss', pnpm, '--reason', 'CI really uses npm']);
    expect(d).toMatchObject({
      action: 'dismissed',
      changed: true,
      tension: { id: pnpm, status: 'dismissed', reason: 'CI really uses npm' },
    });
    expect((await ok(store, ['tensions', 'dismiss', pnpm])).changed).toBe(false);

    llm.calls.length = 0;
    const later = await scan(store, llm);
    expect(llm.judgedPairs().some((p) => p.includes(S.pnpm))).toBe(false);
    expect(later.flagged).toEqual([]);

    const unresolved = await ok(store, ['tensions']);
    expect(unresolved.tensions.map((t: Json) => t.id)).not.toContain(pnpm);
    const all = await ok(store, ['tensions', '--status', 'all']);
    expect(all.tensions.find((t: Json) => t.id === pnpm).status).toBe('dismissed');

    const purged = await ok(store, ['tensions', 'purge']);
    expect(purged).toMatchObject({ status: 'closed', purged: 1, ids: [pnpm] });
    const again = await scan(store, llm);
    expect(again.flagged.map(pairOf)).toEqual([sorted(ids.pnpm, ids.npm)]);
    expect(again.flagged[0].id).not.toBe(pnpm); // ids are never reused
  });

  it('confirm links the engrams as conflicts; resolve keeps the winner and retires the loser with history', async () => {
    const { store, ids } = await seededStore();
    const llm = await fakeLlm();
    const first = await scan(store, llm);
    const pnpm = first.flagged.find((t: Json) => pairOf(t).includes(ids.pnpm)).id;
    const deploy = first.flagged.find((t: Json) => pairOf(t).includes(ids.deploy)).id;

    const c = await ok(store, ['tensions', 'confirm', pnpm]);
    expect(c).toMatchObject({ action: 'confirmed', changed: true, tension: { status: 'confirmed' } });
    expect(readYaml(join(store, 'engrams', `${ids.pnpm}.yaml`)).relations.conflicts).toEqual([ids.npm]);
    expect(readYaml(join(store, 'engrams', `${ids.npm}.yaml`)).relations.conflicts).toEqual([ids.pnpm]);
    expect((await ok(store, ['tensions', '--status', 'confirmed'])).tensions.map((t: Json) => t.id)).toEqual([pnpm]);

    const wrong = await fails(store, ['tensions', 'resolve', pnpm, '--winner', ids.tabs]);
    expect(wrong.message).toMatch(/--winner must be one of/);
    expect((await fails(store, ['tensions', 'resolve', pnpm])).message).toMatch(/--winner/);

    const r = await ok(store, ['tensions', 'resolve', pnpm, '--winner', ids.pnpm]);
    expect(r).toMatchObject({
      action: 'resolved',
      changed: true,
      winner: ids.pnpm,
      loser: ids.npm,
      loser_action: 'retired',
      tension: { status: 'resolved' },
    });
    const loser = readYaml(join(store, 'engrams', `${ids.npm}.yaml`));
    expect(loser.status).toBe('retired');
    expect(loser.retirement.reason).toContain(pnpm);
    expect(readYaml(join(store, 'engrams', `${ids.pnpm}.yaml`)).status).toBe('active');
    const history = await run(store, ['forget', ids.npm]);
    expect(JSON.parse(history.stdout).action).toBe('already_retired'); // still stored, retired

    // Resolved is final; resolving the same way again changes nothing.
    expect((await ok(store, ['tensions', 'resolve', pnpm, '--winner', ids.pnpm])).changed).toBe(false);
    expect((await fails(store, ['tensions', 'resolve', pnpm, '--winner', ids.npm])).message).toMatch(/already resolved/);
    expect((await fails(store, ['tensions', 'dismiss', pnpm])).kind).toBe('conflict');

    // List filters: unresolved (default), all, one status.
    expect((await ok(store, ['tensions'])).tensions.map((t: Json) => t.id)).toEqual([deploy]);
    expect((await ok(store, ['tensions', '--status', 'all'])).tensions.map((t: Json) => t.id).sort()).toEqual([deploy, pnpm].sort());
    expect((await ok(store, ['tensions', '--status', 'resolved'])).tensions.map((t: Json) => t.id)).toEqual([pnpm]);
    await fails(store, ['tensions', '--status', 'bogus']);

    const text = await run(store, ['tensions', '--status', 'all', '--no-json']);
    expect(text.stdout).toContain(`${pnpm}  resolved`);
    expect(text.stdout).toContain(`kept ${ids.pnpm}, retired ${ids.npm}`);
    expect(text.stdout).toContain(`${ids.npm} (retired)`);

    expect((await fails(store, ['tensions', 'confirm', 'T-2020-0101-999'])).kind).toBe('not_found');
    expect((await fails(store, ['tensions', 'confirm', 'nonsense'])).message).toMatch(/not a tension id/);
  });

  it('retries on 429 and gives up on a server that keeps failing, with a clear error', async () => {
    const { store } = await seededStore();
    const llm = await fakeLlm();
    llm.rateLimited = 2;
    const r = await scan(store, llm, '--no-persist');
    expect(r.calls).toBe(1);
    expect(llm.calls.map((c) => c.status)).toEqual([429, 429, 200]);
    expect(r.flagged).toHaveLength(2);

    const broken = await fakeLlm();
    broken.broken = true;
    const e = await fails(store, ['tensions', '--scan', ...llmFlags(broken)], { env: { SVC_LLM_MAX_RETRIES: '1' } });
    expect(e.message).toMatch(/answered 500.*server had an error.*gave up after 2 attempts/);
    expect(broken.calls).toHaveLength(2);
    expect(tensionFiles(store)).toEqual([]);

    // A wrong key is not retried.
    const auth = await fakeLlm();
    const denied = await fails(store, ['tensions', '--scan', '--llm-base-url', auth.url, '--llm-api-key', 'wrong']);
    expect(denied.message).toMatch(/refused the request with 401: Incorrect API key provided \(check the API key/);
    expect(auth.calls).toHaveLength(1);
  });

  it('reports malformed judge output per pair instead of crashing', async () => {
    const { store, ids } = await seededStore();
    const llm = await fakeLlm();
    llm.garbleWhen = /two spaces/;
    const r = await scan(store, llm, '--batch-size', '1');
    expect(r.judged).toBe(3);
    expect(r.malformed).toEqual([
      expect.objectContaining({
        engrams: sorted(ids.tabs, ids.spaces),
        error: 'the judge did not answer with JSON',
        raw: expect.stringContaining('I am sorry'),
      }),
    ]);
    expect(r.flagged).toHaveLength(2);

    // In one batch, a pair the answer leaves out is reported; the others still count.
    const omit = await fakeLlm();
    omit.omitWhen = /^Deploy the staging/;
    const o = await scan(store, omit, '--no-persist');
    expect(o.malformed).toEqual([
      expect.objectContaining({ engrams: sorted(ids.deploy, ids.noDeploy), error: 'the judge gave no judgement for this pair' }),
    ]);

    // The text mode says so on stderr, and still exits 0.
    const text = await run(store, ['tensions', '--scan', '--no-json', ...llmFlags(llm, '--no-persist', '--batch-size', '1')]);
    expect(text.code).toBe(0);
    expect(text.stderr, text.stdout).toMatch(/svc: warning: could not read the judgement of .* the judge did not answer with JSON/);
    expect(text.stdout).toContain('1 unreadable judgement');
  });

  it('records each pair once when several processes scan the same store at once', async () => {
    const { store } = await seededStore();
    const llm = await fakeLlm();
    const runs = await Promise.all([1, 2, 3].map(() => scan(store, llm, '--batch-size', '1')));
    const recorded = runs.flatMap((r) => r.flagged.map((t: Json) => t.id)).filter(Boolean);
    expect(recorded).toHaveLength(2);
    expect(new Set(recorded).size).toBe(2);
    expect(tensionFiles(store).sort()).toEqual(recorded.map((id: string) => `${id}.yaml`).sort());
    expect((await ok(store, ['tensions'])).count).toBe(2);
  });

  it('narrows the scan with --scope and --domain, and rejects flags outside their subcommand', async () => {
    const { store } = await seededStore();
    const llm = await fakeLlm();
    const none = await scan(store, llm, '--scope', 'project:other', '--no-persist');
    expect(none).toMatchObject({ engrams: 0, candidates: 0, calls: 0 });
    const global = await scan(store, llm, '--scope', 'global', '--no-persist');
    expect(global.engrams).toBe(8);
    const domain = await scan(store, llm, '--domain', 'lang', '--no-persist');
    expect(domain.engrams).toBe(0);

    expect((await fails(store, ['tensions', '--max-pairs', '3'])).message).toMatch(/--max-pairs only applies with --scan/);
    expect((await fails(store, ['tensions', '--no-persist'])).message).toMatch(/--no-persist only applies with --scan/);
    expect((await fails(store, ['tensions', 'frob'])).message).toMatch(/unknown tensions subcommand/);
    expect((await fails(store, ['tensions', '--scan', ...llmFlags(llm, '--batch-size', '0')])).message).toMatch(/--batch-size/);
  });
});

// ------------------------------------------------------------------ audit

describe.concurrent('svc audit', () => {
  const CLAUDE_MD = `# CLAUDE.md

This file provides guidance to Claude Code (claude.ai/code) when working with code in this repository.

## Build and test

\`\`\`sh
npm run build
npm test
\`\`\`

## Conventions

- Use npm for installing dependencies.
- Indent with 4 spaces.
- Always run the linter before committing.
- Never commit directly to main; open a pull request instead.
- Durable writes go through \`writeFileDurable()\` in \`src/store/durable-write.ts\`.
- Configuration lives in \`src/config/settings.ts\`.
- Call \`LegacyStore.open()\` to get a store handle.

## Current state

- Currently migrating the search index to SQLite 3.45.0.
- As of 2025-03-14 the staging deploy is broken.

<!-- notes for humans are not memory -->
@docs/missing-notes.md
`;

  /** A project (git root) with a few real files, a CLAUDE.md, a home with user and auto memory, and a store. */
  async function world(): Promise<{ project: string; home: string; store: string; ids: Record<string, string> }> {
    const base = mkdtempSync(join(tmpdir(), 'svc-audit-'));
    const project = join(base, 'project');
    const home = join(base, 'home');
    mkdirSync(join(project, '.git'), { recursive: true });
    mkdirSync(join(project, 'src', 'store'), { recursive: true });
    writeFileSync(
      join(project, 'src', 'store', 'durable-write.ts'),
      'export function writeFileDurable(target: string, data: string): void {}\n',
    );
    writeFileSync(join(project, 'package.json'), '{"name": "demo"}\n');
    writeFileSync(join(project, 'CLAUDE.md'), CLAUDE_MD);
    mkdirSync(join(home, '.claude'), { recursive: true });
    writeFileSync(join(home, '.claude', 'CLAUDE.md'), '# Me\n\n- Prefer small, focused commits with a descriptive message.\n');
    const memDir = join(home, '.claude', 'projects', claudeProjectKey(project), 'memory');
    mkdirSync(memDir, { recursive: true });
    writeFileSync(join(memDir, 'MEMORY.md'), '- The release branch is frozen this week.\n');

    const store = join(base, 'store');
    const s = await LocalStore.open(store);
    const ids: Record<string, string> = {};
    try {
      const ctx = { now: () => new Date() };
      ids.pnpm = (await learn(s, { statement: 'Use pnpm, not npm, for installing dependencies' }, ctx)).engram.id;
      ids.indent = (await learn(s, { statement: 'Indent with 2 spaces' }, ctx)).engram.id;
      ids.lint = (await learn(s, { statement: 'Always run the linter before committing.' }, ctx)).engram.id;
    } finally {
      s.close();
    }
    return { project, home, store, ids };
  }

  const auditIn = (w: { project: string; home: string; store: string }, args: string[] = [], opts: RunOptions = {}) =>
    ok(w.store, ['audit', '--fast', ...args], { cwd: w.project, env: { HOME: w.home, CLAUDE_CONFIG_DIR: '' }, ...opts });

  /** The one finding whose text matches (exactly one must), with its class and next step. */
  const classOf = (r: Json, text: RegExp): Json => {
    const found = r.findings.filter((x: Json) => text.test(x.text));
    expect(
      found.map((x: Json) => x.text),
      `findings matching ${text}`,
    ).toHaveLength(1);
    expect(found[0]).toMatchObject({
      class: expect.stringMatching(/^(conflict|duplicate|snapshot|orphan|durable)$/),
      action: expect.any(String),
    });
    return found[0];
  };

  it("classifies each entry of Claude Code's memory files with a next step", async () => {
    const w = await world();
    const r = await auditIn(w);
    expect(r.source).toBe('claude-code');
    expect(r.files).toEqual([
      join(w.home, '.claude', 'CLAUDE.md'),
      join(w.project, 'CLAUDE.md'),
      join(w.home, '.claude', 'projects', claudeProjectKey(w.project), 'memory', 'MEMORY.md'),
    ]);
    // The boilerplate line, headings, the code block and the comment are not entries.
    expect(r.entries).toBe(12);
    expect(r.findings.some((f: Json) => /provides guidance|npm test|notes for humans/.test(f.text))).toBe(false);

    const npm = classOf(r, /^Use npm/);
    expect(npm).toMatchObject({
      class: 'conflict',
      action: 'supersede or delete',
      engram: { id: w.ids.pnpm },
      file: join(w.project, 'CLAUDE.md'),
      line: 14,
    });
    expect(npm.command).toBe(`svc learn "Use npm for installing dependencies." --supersedes ${w.ids.pnpm}`);
    expect(classOf(r, /^Indent with 4/)).toMatchObject({ class: 'conflict', engram: { id: w.ids.indent } });

    expect(classOf(r, /^Always run the linter/)).toMatchObject({
      class: 'duplicate',
      action: 'delete from memory',
      engram: { id: w.ids.lint },
    });

    const snap = classOf(r, /^As of 2025-03-14/);
    expect(snap).toMatchObject({ class: 'snapshot', action: 'delete from memory' });
    expect(snap.command).toMatch(/^svc capture /);
    expect(classOf(r, /^Currently migrating/).class).toBe('snapshot');
    expect(classOf(r, /release branch is frozen this week/).class).toBe('snapshot'); // from auto memory

    expect(classOf(r, /src\/config\/settings\.ts/)).toMatchObject({
      class: 'orphan',
      missing: ['src/config/settings.ts'],
      action: 'fix or delete',
    });
    expect(classOf(r, /LegacyStore/)).toMatchObject({ class: 'orphan', missing: ['LegacyStore'] });
    expect(classOf(r, /^@docs\/missing-notes\.md$/)).toMatchObject({ class: 'orphan', missing: ['docs/missing-notes.md'] });

    const durable = classOf(r, /writeFileDurable/); // the file and the symbol exist
    expect(durable).toMatchObject({ class: 'durable', action: 'learn' });
    expect(durable.command).toBe("svc learn 'Durable writes go through `writeFileDurable()` in `src/store/durable-write.ts`.'");
    expect(classOf(r, /^Never commit directly/)).toMatchObject({
      class: 'durable',
      command: 'svc learn "Never commit directly to main; open a pull request instead."',
    });
    expect(classOf(r, /^Prefer small, focused commits/)).toMatchObject({ class: 'durable', file: join(w.home, '.claude', 'CLAUDE.md') });

    expect(r.counts).toEqual({ conflict: 2, duplicate: 1, snapshot: 3, orphan: 3, durable: 3 });
    expect(r.findings.every((f: Json) => f.related.length <= 5)).toBe(true);

    const text = await run(w.store, ['audit', '--fast', '--no-json'], { cwd: w.project, env: { HOME: w.home } });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('2 conflict, 1 duplicate, 3 snapshot, 3 orphan, 3 durable');
    expect(text.stdout).toContain('CLAUDE.md:14  Use npm for installing dependencies.');
    expect(text.stdout).toContain('next: svc learn "Never commit directly to main; open a pull request instead."');
  });

  it('--limit sets the engrams recalled per entry (default 5)', async () => {
    const w = await world();
    const r = await auditIn(w, ['--limit', '1']);
    expect(r.findings.every((f: Json) => f.related.length <= 1)).toBe(true);
    await fails(w.store, ['audit', '--limit', '0'], { cwd: w.project, env: { HOME: w.home } });
  });

  it('reads --from-json for the stub hosts, which need it', async () => {
    const w = await world();
    const e = await fails(w.store, ['audit', '--source', 'cursor'], { cwd: w.project, env: { HOME: w.home } });
    expect(e.message).toMatch(/--source cursor .*--from-json/);
    expect((await fails(w.store, ['audit', '--source', 'vim'])).message).toMatch(
      /--source must be one of claude-code, cursor, claude-desktop/,
    );

    const json = join(w.project, 'memories.json');
    writeFileSync(
      json,
      JSON.stringify([
        'Use npm for installing dependencies.',
        { id: 'm2', text: 'Always run the linter before committing.' },
        { text: 'Name React components in PascalCase.' },
      ]),
    );
    for (const source of ['cursor', 'claude-desktop', 'claude-code']) {
      const r = await auditIn(w, ['--source', source, '--from-json', json]);
      expect(r.source).toBe(source);
      expect(r.entries).toBe(3);
      expect(r.findings.map((f: Json) => f.class)).toEqual(['conflict', 'duplicate', 'durable']);
      expect(r.findings[1].id).toBe('m2');
    }
    writeFileSync(json, JSON.stringify([{ nope: 1 }]));
    const bad = await fails(w.store, ['audit', '--from-json', json], { cwd: w.project, env: { HOME: w.home } });
    expect(bad.message).toMatch(/--from-json .* has entries audit cannot read/);
  });

  it('says where it looked when the host has no memory', async () => {
    const w = await world();
    const empty = mkdtempSync(join(tmpdir(), 'svc-empty-'));
    mkdirSync(join(empty, '.git'));
    const r = await ok(w.store, ['audit', '--fast'], { cwd: empty, env: { HOME: empty } });
    expect(r.entries).toBe(0);
    expect(r.looked_in).toContain(join(empty, 'CLAUDE.md'));
    const text = await run(w.store, ['audit', '--fast', '--no-json'], { cwd: empty, env: { HOME: empty } });
    expect(text.stdout).toMatch(/^No claude-code memory found\. Looked in:/);
  });
});
