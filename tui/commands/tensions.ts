import { invalid } from '../../engine/errors.js';
import { systemContext } from '../../engine/ops/context.js';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_PAIRS,
  DEFAULT_MIN_CONFIDENCE,
  confirmTension,
  dismissTension,
  listTensions,
  purgeTensions,
  resolveTension,
  scanTensions,
  tensionConfig,
  withCurrentStatus,
  type PurgeStatus,
  type ScanResult,
  type TensionListStatus,
} from '../../engine/ops/tensions/tensions.js';
import { LocalTensionStore, TENSION_STATUSES, type TensionRecord } from '../../engine/store/tension-records.js';
import { llmJudge } from '../../engine/ops/tensions/judge.js';
import { chatClientFor, resolveLlmSettings } from '../../engine/llm/settings.js';
import { isTerminal } from '../../engine/cli/std-write.js';
import { checkScope } from '../../engine/model/scope.js';
import {
  globalFlags,
  makeOutput,
  openStore,
  parseArgs,
  positiveInt,
  type Output,
  type FlagSpecs,
  type ParsedFlags,
} from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc tensions [--status unresolved|all|open|confirmed|dismissed|resolved]
    svc tensions --scan [scan flags]
    svc tensions confirm <T-id> [--reason r]
    svc tensions dismiss <T-id> [--reason r]
    svc tensions resolve <T-id> --winner <engram id> [--reason r]
    svc tensions purge [--status dismissed|resolved|closed] [--older-than-days n]

  Contradictions between engrams, kept as tension records (T-YYYY-MMDD-NNN) in <store>/tensions.
  The list shows unresolved records (open and confirmed); --status all adds dismissed and resolved.
  confirm marks a real conflict; dismiss marks a false positive (the pair is not flagged again);
  resolve keeps the winner and retires the other engram (history kept); purge deletes closed
  records (their pairs may be flagged again).

  Scan flags
    --scan                     judge candidate pairs with an LLM (highest word overlap first)
    --max-pairs <n>            pairs judged (default ${DEFAULT_MAX_PAIRS})
    --batch-size <n>           pairs per LLM call; 1 = one call per pair (default ${DEFAULT_BATCH_SIZE})
    --min-confidence <x>       judge confidence threshold, 0..1 (default ${DEFAULT_MIN_CONFIDENCE})
    --temporal-discount        discount confidence by days apart: confidence x 0.5^(days/90)
    --no-temporal-discount     no discount (default, unless config.yaml sets tensions.temporal_discount)
    --no-persist               dry run: write nothing, judge recorded pairs again
    --scope <s>, --domain <d>  only engrams of this scope / domain
    --llm-base-url <url>       OpenAI-compatible endpoint, e.g. http://localhost:11434/v1
    --llm-api-key <key>        its key (required with --llm-base-url)
    --model <name>             model (default $SVC_LLM_MODEL, else gpt-4o-mini)

  The LLM: --llm-base-url and --llm-api-key, else SVC_LLM_BASE_URL and SVC_LLM_API_KEY, else the
  hosted OpenAI API with OPENAI_API_KEY (and OPENAI_BASE_URL if set); OPENAI_API_KEY is never sent
  to another endpoint. Without a key --scan fails. SVC_LLM_TIMEOUT_MS (default 60000) bounds each
  request; 429 and 5xx answers are retried SVC_LLM_MAX_RETRIES times (default 3) with backoff.
  Pairs linked by supersedes are never flagged. The discount: confidence x 0.5^(days apart / 90),
  days apart being the time between the two engrams' learned_at; config.yaml can set
  tensions.temporal_discount (true/false) and tensions.half_life_days.`;

const SCAN_ONLY = [
  'maxPairs',
  'batchSize',
  'minConfidence',
  'temporalDiscount',
  'persist',
  'scope',
  'domain',
  'llmBaseUrl',
  'llmApiKey',
  'model',
] as const;
const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());

const FLAGS = {
  scan: { type: 'boolean', default: false },
  status: { type: 'string' },
  winner: { type: 'string' },
  reason: { type: 'string' },
  olderThanDays: { type: 'number' },
  maxPairs: { type: 'number' },
  batchSize: { type: 'number' },
  minConfidence: { type: 'number' },
  temporalDiscount: { type: 'boolean' },
  persist: { type: 'boolean' },
  scope: { type: 'string' },
  domain: { type: 'string' },
  llmBaseUrl: { type: 'string' },
  llmApiKey: { type: 'string' },
  model: { type: 'string' },
} as const satisfies FlagSpecs;

type Flags = ParsedFlags<typeof FLAGS & typeof globalFlags>;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, FLAGS);
  const f = cli.flags;
  const out = makeOutput(f);
  const [sub = f.scan ? 'scan' : 'list', ...rest] = cli.input;
  if (f.scan && sub !== 'scan') throw invalid(`--scan cannot be combined with "${sub}"`);
  if (sub !== 'scan') {
    const stray = SCAN_ONLY.filter((k) => f[k] !== undefined);
    if (stray.length)
      throw invalid(
        `${stray.map((k) => (k === 'persist' ? '--no-persist' : `--${kebab(k)}`)).join(', ')} only appl${stray.length > 1 ? 'y' : 'ies'} with --scan`,
      );
  }
  if (f.winner !== undefined && sub !== 'resolve') throw invalid('--winner only applies to "resolve"');
  if (f.olderThanDays !== undefined && sub !== 'purge') throw invalid('--older-than-days only applies to "purge"');

  switch (sub) {
    case 'list':
    case 'scan': {
      if (rest.length) throw invalid(`unexpected argument "${rest[0]}"`);
      return sub === 'scan' ? scan(f, out) : list(f, out);
    }
    case 'confirm':
    case 'dismiss':
    case 'resolve':
      return change(sub, rest, f, out);
    case 'purge':
      return purge(rest, f, out);
    default:
      throw invalid(`unknown tensions subcommand "${sub}" (use confirm, dismiss, resolve, purge, or --scan)`);
  }
}

async function list(f: Flags, out: Output): Promise<number> {
  const status = (f.status ?? 'unresolved') as TensionListStatus;
  const allowed = ['unresolved', 'all', ...TENSION_STATUSES];
  if (!allowed.includes(status)) throw invalid(`--status must be one of ${allowed.join(', ')} (got "${f.status}")`);
  const store = await openStore(f, 'fast', out);
  try {
    const tensions = new LocalTensionStore(store, store.root);
    const { records, warnings } = await listTensions(tensions, status);
    for (const w of warnings) out.warn(w);
    const shown = await Promise.all(records.map((r) => withCurrentStatus(store, r)));
    out.result({ status, count: shown.length, tensions: shown }, () =>
      shown.length
        ? shown.map((r) => recordText(r)).join('\n\n')
        : status === 'unresolved'
          ? 'No unresolved tensions. (svc tensions --scan looks for them; --status all shows closed ones.)'
          : `No tensions with status ${status}.`,
    );
    return 0;
  } finally {
    store.close();
  }
}

async function scan(f: Flags, out: Output): Promise<number> {
  // Everything that can be wrong with the flags fails before the store is touched.
  const minConfidence = f.minConfidence ?? DEFAULT_MIN_CONFIDENCE;
  if (!(minConfidence >= 0 && minConfidence <= 1)) throw invalid(`--min-confidence must be between 0 and 1 (got ${f.minConfidence})`);
  const maxPairs = positiveInt(f.maxPairs, 'max-pairs', DEFAULT_MAX_PAIRS);
  const batchSize = positiveInt(f.batchSize, 'batch-size', DEFAULT_BATCH_SIZE);
  if (f.scope !== undefined) {
    const bad = checkScope(f.scope);
    if (bad) throw invalid(bad);
  }
  const settings = resolveLlmSettings({ baseUrl: f.llmBaseUrl, apiKey: f.llmApiKey, model: f.model }, process.env, 'tensions --scan');
  const judge = llmJudge(chatClientFor(settings));

  const store = await openStore(f, 'fast', out);
  try {
    const config = await tensionConfig(store.root);
    if (config.warning) out.warn(config.warning);
    const tensions = new LocalTensionStore(store, store.root);
    const progress = isTerminal(2) && !out.quiet;
    const result = await scanTensions(
      tensions,
      {
        judge,
        scope: f.scope,
        domain: f.domain,
        minConfidence,
        maxPairs,
        batchSize,
        persist: f.persist !== false,
        temporalDiscount: f.temporalDiscount ?? config.temporal_discount,
        halfLifeDays: config.half_life_days,
        onProgress: progress ? (done, total) => process.stderr.write(`\rjudged ${done}/${total} pairs`) : undefined,
      },
      systemContext,
    );
    if (progress && result.judged) process.stderr.write('\n');
    for (const m of result.malformed) out.warn(`could not read the judgement of ${m.engrams.join(' vs ')}: ${m.error}`);
    out.result(result, () => scanText(result));
    return 0;
  } finally {
    store.close();
  }
}

async function change(action: 'confirm' | 'dismiss' | 'resolve', rest: string[], f: Flags, out: Output): Promise<number> {
  const [id, ...extra] = rest;
  if (!id) throw invalid(`the tension id is missing: svc tensions ${action} <T-id>${action === 'resolve' ? ' --winner <engram id>' : ''}`);
  if (extra.length) throw invalid(`unexpected argument "${extra[0]}"`);
  if (action === 'resolve' && !f.winner) throw invalid('--winner <engram id> is required: the engram to keep (the other is retired)');
  const store = await openStore(f, 'fast', out);
  try {
    const tensions = new LocalTensionStore(store, store.root);
    if (action === 'resolve') {
      const r = await resolveTension(tensions, id, f.winner!, systemContext, f.reason);
      out.result(
        { action: 'resolved', changed: r.changed, winner: r.winner, loser: r.loser, loser_action: r.loser_action, tension: r.record },
        () =>
          r.changed
            ? `Resolved ${id}: kept ${r.winner}, ${r.loser_action === 'retired' ? 'retired' : 'already retired:'} ${r.loser} (history kept; svc history ${r.loser})`
            : `${id} was already resolved in favour of ${r.winner}`,
      );
      return 0;
    }
    const r =
      action === 'confirm'
        ? await confirmTension(tensions, id, systemContext, f.reason)
        : await dismissTension(tensions, id, systemContext, f.reason);
    const done = action === 'confirm' ? 'confirmed' : 'dismissed';
    out.result({ action: done, changed: r.changed, tension: r.record }, () => {
      if (!r.changed) return `${id} was already ${done}`;
      return action === 'confirm'
        ? `Confirmed ${id}: a real conflict. Resolve it with svc tensions resolve ${id} --winner <${r.record.engrams.map((s) => s.id).join('|')}>`
        : `Dismissed ${id}: later scans will not flag this pair again`;
    });
    return 0;
  } finally {
    store.close();
  }
}

async function purge(rest: string[], f: Flags, out: Output): Promise<number> {
  if (rest.length) throw invalid(`unexpected argument "${rest[0]}"`);
  const status = (f.status ?? 'closed') as PurgeStatus;
  if (!['dismissed', 'resolved', 'closed'].includes(status))
    throw invalid(`--status for purge must be dismissed, resolved or closed (got "${f.status}")`);
  if (f.olderThanDays !== undefined && !(Number.isInteger(f.olderThanDays) && f.olderThanDays >= 0)) {
    throw invalid('--older-than-days must be a whole number of days, 0 or more');
  }
  const store = await openStore(f, 'fast', out);
  try {
    const r = await purgeTensions(new LocalTensionStore(store, store.root), { status, olderThanDays: f.olderThanDays }, systemContext);
    out.result({ status, purged: r.purged.length, ids: r.purged }, () =>
      r.purged.length ? `Purged ${r.purged.length} tension record(s): ${r.purged.join(', ')}` : 'Nothing to purge.',
    );
    return 0;
  } finally {
    store.close();
  }
}

// ------------------------------------------------------------------------------ text output

function recordText(r: TensionRecord): string {
  const sides = (r.engrams as Array<TensionRecord['engrams'][number] & { status?: string }>).map(
    (s, i) => `    ${i === 0 ? 'A' : 'B'} ${s.id}${s.status && s.status !== 'active' ? ` (${s.status})` : ''}: ${s.statement}`,
  );
  const outcome = r.status === 'resolved' ? `  kept ${r.winner}, retired ${r.loser}` : '';
  return [
    `${r.id}  ${r.status}  confidence ${r.confidence}${outcome}`,
    ...sides,
    ...(r.explanation ? [`    why: ${r.explanation}`] : []),
  ].join('\n');
}

function scanText(r: ScanResult): string {
  const lines: string[] = [];
  const head = `Judged ${r.judged} of ${r.candidates} candidate pair${r.candidates === 1 ? '' : 's'} among ${r.engrams} engrams in ${r.calls} call${r.calls === 1 ? '' : 's'} to ${r.model}`;
  lines.push(
    head + (r.suppressed ? ` (${r.suppressed} already recorded, skipped)` : '') + (r.persisted ? '' : ' (dry run: nothing written)') + '.',
  );
  if (r.flagged.length === 0) lines.push(`No contradictions at confidence ${r.min_confidence} or above.`);
  for (const t of r.flagged) {
    lines.push('');
    lines.push(
      `${t.id ?? '(not recorded)'}  confidence ${t.confidence}${r.temporal_discount ? ` (judge ${t.judge_confidence}, ${t.days_apart} days apart)` : ''}`,
    );
    t.engrams.forEach((s, i) => lines.push(`    ${i === 0 ? 'A' : 'B'} ${s.id}: ${s.statement}`));
    if (t.explanation) lines.push(`    why: ${t.explanation}`);
  }
  const notes: string[] = [];
  if (r.below_threshold.length) notes.push(`${r.below_threshold.length} below the threshold`);
  if (r.not_contradictions) notes.push(`${r.not_contradictions} compatible`);
  if (r.malformed.length) notes.push(`${r.malformed.length} unreadable judgement${r.malformed.length === 1 ? '' : 's'}`);
  if (notes.length) lines.push('', `Also: ${notes.join(', ')}.`);
  if (r.flagged.some((t) => t.id))
    lines.push('', 'Next: svc tensions confirm|dismiss <T-id>, or svc tensions resolve <T-id> --winner <engram id>.');
  return lines.join('\n');
}
