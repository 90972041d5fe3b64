import type { EngramBackend } from '../backend.js';
import type { Session } from '../model/records.js';
import type { EmbedderState } from '../embed/embedder.js';
import { DEFAULT_SCOPE, checkScope } from '../model/scope.js';
import { contentHash } from '../model/content-hash.js';
import { assertNoSecrets } from '../model/secret-guard.js';
import { detectPolarity } from '../model/polarity.js';
import { conflict, invalid, notFound } from '../errors.js';
import type { OpContext } from './context.js';
import { capture } from './episodes.js';
import { recordInjection } from './history.js';
import { inject, type InjectResult } from './inject.js';
import type { TeamSource } from './recall.js';
import type { RerankSetting } from '../rerank/reranker.js';
import { learn, type LearnInput, type LearnOptions, type LearnResult } from './learn.js';
import { linkSessionLearnings } from './associations.js';

// A session is one agent's unit of work: it starts with an injection for its task and ends
// with a summary and the learnings it produced, linking what it learned one after another
// (temporal associations). Both ends are also episodes on the timeline.

export interface StartSessionInput {
  task?: string;
  agent?: string;
  scope?: string;
  domain?: string;
  budget?: number;
  fast?: boolean;
  embedder?: EmbedderState;
  reranker?: RerankSetting;
  /** The hub's engrams too (see recall). */
  team?: TeamSource;
}

export interface StartSessionResult {
  session: Session;
  injection: InjectResult;
  /** Scopes this session's learnings may go to; on a local store, the project's and the personal ones. */
  writable_scopes: string[];
}

export async function startSession(backend: EngramBackend, input: StartSessionInput, ctx: OpContext): Promise<StartSessionResult> {
  for (const scope of [input.scope].filter((s): s is string => s !== undefined)) {
    const bad = checkScope(scope);
    if (bad) throw invalid(bad);
  }
  const now = ctx.now();
  const task = input.task?.trim() || undefined;
  const injection = await inject(backend, task ?? '', {
    budget: input.budget,
    fast: input.fast,
    embedder: input.embedder,
    reranker: input.reranker,
    now,
    ...(input.team ? { team: input.team } : {}),
  });
  const session: Session = {
    id: backend.recordId('SES', now),
    status: 'open',
    started_at: now.toISOString(),
    ...(task ? { task } : {}),
    ...(input.agent ? { agent: input.agent } : {}),
    ...(input.scope ? { scope: input.scope } : {}),
    ...(input.domain ? { domain: input.domain } : {}),
    engram_ids: Object.values(injection.blocks)
      .flat()
      .map((e) => e.id),
  };
  await backend.putSession(session);
  await recordInjection(backend, injection, { session: session.id, agent: input.agent, at: now });
  await capture(
    backend,
    {
      summary: `Session started${task ? `: ${task}` : ''}`,
      agent: input.agent,
      scope: input.scope,
      channel: 'session',
      session: session.id,
    },
    ctx,
  );
  const writable = [input.scope ?? DEFAULT_SCOPE, DEFAULT_SCOPE, 'local'];
  return { session, injection, writable_scopes: [...new Set(writable)] };
}

export interface EndSessionInput {
  summary?: string;
  learnings?: LearnInput[];
}

export interface EndSessionResult {
  session: Session;
  learned: LearnResult[];
  /** Statements from the summary and the session's corrections that look worth learning and are not known yet. */
  suggested: string[];
}

export async function endSession(
  backend: EngramBackend,
  sessionId: string,
  input: EndSessionInput,
  ctx: OpContext,
  opts: LearnOptions = {},
): Promise<EndSessionResult> {
  const session = await backend.getSession(sessionId);
  if (!session) throw notFound(`no session ${sessionId}`);
  if (session.status === 'ended') throw conflict(`session ${sessionId} already ended at ${session.ended_at}`);
  // A store that keeps no secrets checks the whole batch first: a refused learning leaves
  // nothing half-written.
  if (backend.secretPolicy === 'refuse') for (const l of input.learnings ?? []) assertNoSecrets(l);
  const inSession: OpContext = { ...ctx, sessionId };
  const learned: LearnResult[] = [];
  for (const l of input.learnings ?? []) {
    learned.push(await learn(backend, { scope: session.scope, domain: session.domain, ...l }, inSession, opts));
  }
  // What the session learned one after another belongs together: temporal associations.
  await linkSessionLearnings(backend, sessionId, ctx.now().toISOString());
  const summary = input.summary?.trim() || undefined;
  const suggested = await suggestLearnings(backend, sessionId, summary);
  const ended: Session = {
    ...session,
    status: 'ended',
    ended_at: ctx.now().toISOString(),
    ...(summary ? { summary } : {}),
    engram_ids: [...new Set([...session.engram_ids, ...learned.map((l) => l.engram.id)])],
  };
  await backend.putSession(ended);
  await capture(
    backend,
    {
      summary: `Session ended${summary ? `: ${summary}` : ''}`,
      agent: session.agent,
      scope: session.scope,
      channel: 'session',
      session: sessionId,
    },
    ctx,
  );
  return { session: ended, learned, suggested };
}

/** Reads a session, or moves it to another scope and domain (later learnings default to them). */
export async function sessionScope(
  backend: EngramBackend,
  sessionId: string,
  input: { scope?: string; domain?: string },
): Promise<Session> {
  const session = await backend.getSession(sessionId);
  if (!session) throw notFound(`no session ${sessionId}`);
  if (input.scope === undefined && input.domain === undefined) return session;
  if (input.scope !== undefined) {
    const bad = checkScope(input.scope);
    if (bad) throw invalid(bad);
  }
  const updated: Session = {
    ...session,
    ...(input.scope ? { scope: input.scope } : {}),
    ...(input.domain ? { domain: input.domain } : {}),
  };
  await backend.putSession(updated);
  return updated;
}

const RULE_WORDS = /\b(?:should|must|prefer|instead|always|never|don't|do not|avoid|use)\b/i;

async function suggestLearnings(backend: EngramBackend, sessionId: string, summary: string | undefined): Promise<string[]> {
  const corrections = await backend.queryEpisodes({ session: sessionId, channel: 'correction', limit: 50 });
  const sentences = (summary ?? '')
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 12 && (detectPolarity(s) !== null || RULE_WORDS.test(s)));
  const out: string[] = [];
  for (const text of [...corrections.map((c) => c.summary), ...sentences]) {
    if (out.includes(text) || (await backend.findByHash(contentHash(text))).some((e) => e.status !== 'retired')) continue;
    out.push(text);
    if (out.length === 5) break;
  }
  return out;
}
