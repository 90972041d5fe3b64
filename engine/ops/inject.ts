import type { EngramStore, SearchIndex } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import type { EmbedderState } from '../embed/embedder.js';
import { polarityOf } from '../model/polarity.js';
import { recall, type RecallResult, type RecallSources, type TeamSource } from './recall.js';
import type { RerankSetting } from '../rerank/reranker.js';
import { checkBudget, DEFAULT_INJECT_BUDGET } from './inject-budget.js';
import { terminalSafe } from '../text.js';
import { hasContentTerms } from '../search/fts-query.js';
import { withoutInstructionWords } from '../search/stop-words.js';

export const LEARNING_PROTOCOL = `## LEARNING PROTOCOL
- When the user corrects you or states a convention, record it at once as one short statement: svc_learn (CLI: svc learn "<statement>").
- When a correction replaces an engram shown above, learn the new statement with supersedes set to the old id.
- After the task, send feedback on the engrams above: positive if one helped, negative if one misled you.`;

/** How many candidates recall hands to the selection. */
const POOL = 40;
/** A match below this share of the best one is noise, unless pinned. */
const RELEVANCE_FLOOR = 0.2;
/** Matches at or above this share of the best one are directives; weaker ones are "also consider". */
const DIRECTIVE_FLOOR = 0.5;
/** A vector-only match must be at least this close to count as relevant. */
const VECTOR_ONLY_MIN_COSINE = 0.5;

export interface InjectedEngram {
  id: string;
  statement: string;
  score: number | null;
  pinned: boolean;
}

export interface InjectResult {
  task: string;
  budget: number;
  /** Estimated tokens of `text`; never above `budget`. */
  tokens: number;
  legs: RecallResult['legs'];
  /** Present when a reranker was asked for. */
  reranker?: RecallResult['reranker'];
  blocks: { directives: InjectedEngram[]; constraints: InjectedEngram[]; also_consider: InjectedEngram[] };
  protocol: boolean;
  /** Engrams that were relevant but did not fit the budget. */
  omitted: number;
  text: string;
  /** Present with a team source: which sources answered. */
  sources?: RecallSources;
}

export interface InjectOptions {
  budget?: number;
  /** At most this many engrams (the most relevant first); the rest count as omitted. */
  maxEngrams?: number;
  withProtocol?: boolean;
  fast?: boolean;
  embedder?: EmbedderState;
  /** Rerank the head of recall's ranking (see recall). */
  reranker?: RerankSetting;
  now?: Date;
  /** The hub's engrams too (see recall). */
  team?: TeamSource;
}

const ASCII_RUNS = /[\u0000-\u007f]+/g;
/** A character beyond the Basic Multilingual Plane: two code units, one character. */
const SURROGATE_PAIRS = /[\ud800-\udbff][\udc00-\udfff]/g;

/** A conservative token estimate: ~4 ASCII characters per token, one per other character. */
export function estimateTokens(text: string): number {
  // Regular expressions scan in native code: a loop over the characters ran interpreted in a
  // short-lived hook, about 2 ms of one injection (the text is measured again for every engram placed).
  const wide = text.replace(ASCII_RUNS, '');
  const pairs = text.match(SURROGATE_PAIRS)?.length ?? 0;
  return Math.ceil((text.length - wide.length) / 4) + wide.length - pairs;
}

type Block = keyof InjectResult['blocks'];
const HEADINGS: Record<Block, string> = {
  directives: '## DIRECTIVES',
  constraints: '## CONSTRAINTS',
  also_consider: '## ALSO CONSIDER',
};

/**
 * Selects what an agent should know before working on `task`, within a token budget: pinned
 * engrams always (no relevance gate), then relevant active ones by score; superseded engrams
 * give way to what supersedes them; engrams outside their validity window are skipped.
 */
export async function inject(backend: EngramStore & SearchIndex, task: string, opts: InjectOptions = {}): Promise<InjectResult> {
  const budget = checkBudget(opts.budget ?? DEFAULT_INJECT_BUDGET);
  const now = opts.now ?? new Date();
  // What the task is about: its words without "use" and "please", which match engrams of any
  // topic. No task (a session starting cold), or one of stop words only ("do it now"): only
  // pinned engrams qualify; whatever such words match is no match.
  const query = withoutInstructionWords(task);
  const found: RecallResult = !hasContentTerms(query)
    ? { query: task, legs: { bm25: 'ran', vector: 'skipped' }, hits: [] }
    : await recall(backend, query, {
        limit: POOL,
        fast: opts.fast,
        embedder: opts.embedder,
        reranker: opts.reranker,
        now,
        ...(opts.team ? { team: opts.team } : {}),
      });

  // `rank`: the place in recall's order (a reranker's, when one ran); pinned engrams come first.
  const picked = new Map<string, { engram: EngramDoc; score: number | null; rank: number }>();
  for (const engram of await backend.list({ status: 'active', pinned: true })) picked.set(engram.id, { engram, score: null, rank: -1 });
  found.hits.forEach((h, rank) => {
    const vectorOnly = !h.bm25 && (h.vector?.cosine ?? 0) < VECTOR_ONLY_MIN_COSINE;
    if (h.engram.status !== 'active' || h.score < RELEVANCE_FLOOR || vectorOnly || picked.has(h.engram.id)) return;
    picked.set(h.engram.id, { engram: h.engram, score: h.score, rank });
  });

  // Superseded engrams step aside; what supersedes them takes their place.
  for (const [id, entry] of [...picked]) {
    for (const successorId of entry.engram.relations?.superseded_by ?? []) {
      const successor = picked.get(successorId)?.engram ?? (await backend.get(successorId));
      if (!successor || successor.status === 'retired') continue;
      picked.delete(id);
      if (!picked.has(successor.id) && successor.status === 'active')
        picked.set(successor.id, { engram: successor, score: entry.score, rank: entry.rank });
      break;
    }
  }

  // Pinned first, then best score first: merged rankings (a hub's) and successors taking their
  // predecessor's place do not come in score order. A reranker's order is kept: it judged better.
  const ordered = [...picked.values()].filter(({ engram }) => inValidityWindow(engram, now));
  const byScore = found.reranker?.state !== 'ran';
  ordered.sort(
    (a, b) => (a.score === null ? 0 : 1) - (b.score === null ? 0 : 1) || (byScore ? (b.score ?? 0) - (a.score ?? 0) : 0) || a.rank - b.rank,
  );

  const blocks: InjectResult['blocks'] = { directives: [], constraints: [], also_consider: [] };
  const protocol = opts.withProtocol !== false && estimateTokens(LEARNING_PROTOCOL) <= budget / 2;
  let omitted = 0;
  let placed = 0;
  for (const { engram, score } of ordered) {
    if (opts.maxEngrams !== undefined && placed >= opts.maxEngrams) {
      omitted += 1;
      continue;
    }
    const block: Block =
      polarityOf(engram) === 'dont' ? 'constraints' : score === null || score >= DIRECTIVE_FLOOR ? 'directives' : 'also_consider';
    // What reaches a model carries no escape sequence or control character (a statement may hold them).
    const item: InjectedEngram = { id: engram.id, statement: terminalSafe(engram.statement), score, pinned: engram.pinned === true };
    blocks[block].push(item);
    if (estimateTokens(render(blocks, protocol)) > budget) {
      blocks[block].pop();
      omitted += 1;
    } else {
      placed += 1;
    }
  }
  const text = render(blocks, protocol);
  return {
    task,
    budget,
    tokens: estimateTokens(text),
    legs: found.legs,
    ...(found.reranker ? { reranker: found.reranker } : {}),
    blocks,
    protocol,
    omitted,
    text,
    ...(found.sources ? { sources: found.sources } : {}),
  };
}

function inValidityWindow(e: EngramDoc, now: Date): boolean {
  const until = e.temporal?.valid_until ? Date.parse(e.temporal.valid_until) : NaN;
  const from = e.temporal?.valid_from ? Date.parse(e.temporal.valid_from) : NaN;
  if (!Number.isNaN(until) && until < now.getTime()) return false;
  if (!Number.isNaN(from) && from > now.getTime()) return false;
  return true;
}

function render(blocks: InjectResult['blocks'], protocol: boolean): string {
  const parts: string[] = [];
  for (const block of ['directives', 'constraints', 'also_consider'] as const) {
    if (blocks[block].length === 0) continue;
    parts.push([HEADINGS[block], ...blocks[block].map((e) => `- ${e.statement} (${e.id})`)].join('\n'));
  }
  if (protocol) parts.push(LEARNING_PROTOCOL);
  return parts.join('\n\n');
}
