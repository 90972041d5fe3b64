import type { EngramStore, SearchIndex } from '../backend.js';
import type { DualCoding, EngramDoc, EngramType, KnowledgeAnchor, Visibility } from '../model/engram-types.js';
import { assertNoSecrets, secretsIn } from '../model/secret-guard.js';
import { DEFAULT_SCOPE, PRIVATE_FALLBACK_SCOPE, isSharedScope } from '../model/scope.js';
import { invalid } from '../errors.js';
import type { OpContext } from './context.js';
import type { EmbedderState } from '../embed/embedder.js';
import { newStatementFields, statementProblem } from './edit.js';
import { appendSource } from '../model/sources.js';
import { readCosine } from './similarity.js';

export interface LearnInput {
  statement: string;
  type?: EngramType;
  scope?: string;
  domain?: string;
  tags?: string[];
  rationale?: string;
  source?: string;
  supersedes?: string[];
  visibility?: Visibility;
  abstract?: string;
  derived_from?: string;
  knowledge_anchors?: KnowledgeAnchor[];
  dual_coding?: DualCoding;
  status?: 'active' | 'candidate';
  /** Episodes that produced this learning. */
  episode_ids?: string[];
}

export interface LearnOptions {
  /** With a ready embedder, learn warns about near-duplicates and stores the new vector. */
  embedder?: EmbedderState;
}

export interface LearnResult {
  /** created: a new engram; deduplicated: same content, same scope; reactivated: it had been retired. */
  action: 'created' | 'deduplicated' | 'reactivated';
  engram: EngramDoc;
  /** Engrams with the same content at other scopes (their recurrence_count went up). */
  recurrences: string[];
  /** The closest other live engram by embedding cosine, when above 0.9 (the write still happens). */
  near_duplicate?: { id: string; cosine: number };
  warnings: string[];
}

const PLACEHOLDER_ID = 'ENG-PENDING';

/**
 * Learns a statement: secret guard, content-hash dedup (a same-scope rewrite bumps
 * reference_count and appends to sources; the same content at another scope is a new engram
 * and bumps recurrence_count on the others), supersedes links, all under one write lock.
 */
export async function learn(
  backend: EngramStore & SearchIndex,
  input: LearnInput,
  ctx: OpContext,
  opts: LearnOptions = {},
): Promise<LearnResult> {
  const warnings: string[] = [];
  const problem = statementProblem(input.statement);
  if (problem) throw invalid(problem, [problem]);
  const statement = input.statement.trim();
  let scope = input.scope ?? DEFAULT_SCOPE;
  let visibility = input.visibility ?? 'private';

  const secrets = secretsIn(input);
  if (secrets.length > 0) {
    const what = secrets.map((s) => `${s.kind} (${s.sample})`).join(', ');
    if (backend.secretPolicy === 'refuse') assertNoSecrets(input);
    if (isSharedScope(scope)) {
      warnings.push(`content looks like it holds a secret: ${what}; stored in scope "${PRIVATE_FALLBACK_SCOPE}" instead of "${scope}"`);
      scope = PRIVATE_FALLBACK_SCOPE;
      visibility = 'private';
    } else {
      warnings.push(`content looks like it holds a secret: ${what}; kept in private scope "${scope}"`);
    }
  }

  const now = ctx.now().toISOString();
  const source = { scope, session_id: ctx.sessionId ?? null, stored_at: now };
  const draft = buildEngram({ ...input, statement, scope, visibility }, now, source);
  const { validateEngram } = await import('../model/validate-engram.js');
  const check = validateEngram(draft);
  if (!check.ok) throw invalid('the engram is invalid', check.errors);

  const hash = draft.content_hash as string;
  const dense = opts.embedder?.state === 'ready' ? opts.embedder.embedder : undefined;
  let nearest: { id: string; cosine: number; hash?: string } | undefined;
  if (dense) {
    const [vector] = await dense.embedPassages([statement]);
    const [top] = await backend.searchVector(vector!, 1, dense.model);
    if (top) nearest = { id: top.engram.id, cosine: Math.round(top.cosine * 10_000) / 10_000, hash: top.engram.content_hash };
  }

  const result = await backend.write(async (tx): Promise<LearnResult> => {
    const superseded: EngramDoc[] = [];
    for (const id of input.supersedes ?? []) {
      const target = await tx.get(id);
      if (!target) throw invalid(`--supersedes names an unknown engram: ${id}`, [`supersedes: no engram ${id}`]);
      superseded.push(target);
    }
    const linkSuperseded = async (engram: EngramDoc): Promise<void> => {
      if (superseded.length === 0) return;
      engram.relations = { ...engram.relations, supersedes: union(engram.relations?.supersedes ?? [], input.supersedes ?? []) };
      for (const target of superseded) {
        target.relations = { ...target.relations, superseded_by: union(target.relations?.superseded_by ?? [], [engram.id]) };
        await tx.put(target);
      }
    };

    const twins = await tx.findByHash(hash);
    const same = twins.find((e) => e.scope === scope);
    if (same) {
      const revived = same.status === 'retired';
      same.reference_count = revived ? 1 : (same.reference_count ?? 1) + 1;
      if (revived) {
        same.status = 'active';
        delete same.retirement;
      }
      appendSource(same, source);
      same.tags = union(same.tags ?? [], input.tags ?? []);
      if (input.episode_ids?.length) same.episode_ids = union(same.episode_ids ?? [], input.episode_ids);
      await linkSuperseded(same);
      await tx.put(same, { action: revived ? 'reactivated' : 'deduplicated', at: now, session: ctx.sessionId ?? undefined });
      return { action: revived ? 'reactivated' : 'deduplicated', engram: same, recurrences: [], warnings };
    }

    const engram: EngramDoc = { ...draft, id: await tx.allocateId('ENG', ctx.now(), scope) };
    const others = twins.filter((e) => e.status !== 'retired');
    for (const other of others) {
      other.recurrence_count = (other.recurrence_count ?? 0) + 1;
      await tx.put(other);
    }
    engram.recurrence_count = others.length;
    await linkSuperseded(engram);
    await tx.put(engram, { action: 'created', at: now, session: ctx.sessionId ?? undefined });
    return { action: 'created', engram, recurrences: others.map((e) => e.id), warnings };
  });

  if (dense) {
    if (nearest && result.action === 'created' && nearest.hash !== hash && readCosine(nearest.cosine) === 'duplicate') {
      result.near_duplicate = { id: nearest.id, cosine: nearest.cosine };
      warnings.push(`likely a near-duplicate of ${nearest.id} (cosine ${nearest.cosine}); learned anyway`);
    }
    await backend.embedPending(dense);
  }
  return result;
}

/** A new engram document from a learn input (id still a placeholder): learn uses it, bulk seeding (benchmarks) too. */
export function buildEngram(
  input: LearnInput & { scope: string; visibility: Visibility },
  now: string,
  source: { scope: string; session_id: string | null; stored_at: string },
): EngramDoc {
  const e: Record<string, unknown> = {
    id: PLACEHOLDER_ID,
    version: 2,
    status: input.status ?? 'active',
    type: input.type ?? 'behavioral',
    scope: input.scope,
    visibility: input.visibility,
    statement: input.statement,
  };
  const derived = newStatementFields(input.statement);
  if (input.rationale !== undefined) e.rationale = input.rationale;
  if (input.domain !== undefined) e.domain = input.domain;
  e.tags = input.tags ?? [];
  if (input.source !== undefined) e.source = input.source;
  if (input.abstract !== undefined) e.abstract = input.abstract;
  if (input.derived_from !== undefined) e.derived_from = input.derived_from;
  if (input.knowledge_anchors !== undefined) e.knowledge_anchors = input.knowledge_anchors;
  if (input.dual_coding !== undefined) e.dual_coding = input.dual_coding;
  if (input.episode_ids?.length) e.episode_ids = [...input.episode_ids];
  e.polarity = derived.polarity;
  e.activation = { retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: now };
  e.feedback_signals = { positive: 0, negative: 0, neutral: 0 };
  e.temporal = { learned_at: now };
  e.content_hash = derived.content_hash;
  e.reference_count = 1;
  e.sources = [source];
  e.recurrence_count = 0;
  e.engram_version = derived.engram_version;
  e.pinned = false;
  return e as EngramDoc;
}

function union(a: string[], b: string[]): string[] {
  return [...new Set([...a, ...b])];
}
