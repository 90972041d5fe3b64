import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { LocalBackend } from '../../engine/store/local-backend.js';
import type { EmbedderState } from '../../engine/embed/embedder.js';
import type { TeamSource } from '../../engine/ops/recall.js';
import type { RemoteConfig } from '../../engine/remote/hub-client.js';
import { contextOutput, eventName, hostOf, projectDir, sessionId, str, withStore, type HookEvent, type Host } from './io.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { DEFAULT_INJECT_BUDGET, MAX_INJECT_BUDGET, MIN_INJECT_BUDGET } from '../../engine/ops/inject-budget.js';
import { hookFailed } from './failure-log.js';

// hook-inject — Claude Code `UserPromptSubmit` and `SessionStart`.
//
// UserPromptSubmit: selects what the agent should know for the prompt (`inject`: pinned engrams
// plus relevant active ones, within $SVC_INJECT_BUDGET tokens, default 2000) and answers with
// `hookSpecificOutput.additionalContext`; prints nothing when nothing is relevant, when the prompt
// is empty or a bare slash command, or when no store exists. What was shown is recorded as an
// `injected` event (receipts, status), with the session id.
// SessionStart (any `source`: startup, resume, clear, compact): the same, for a query made of the
// project's name and its `.svc.yaml` scope and domain, so pinned and project engrams are in
// context from the first turn (and again after a compaction).
// The Learning Protocol block is left out here: hook-session-remind states it once per session
// start instead of on every prompt.
// The dense leg runs only with the model already on disk, a small embedding backlog (a hook never
// downloads, nor embeds a large import) and a model that loads within DENSE_BUDGET_MS; otherwise
// BM25 alone. The hook runs synchronously (the host waits for it), so it answers in time.

/** Characters of a prompt that go into the query (a pasted log adds noise, not relevance). */
const MAX_TASK = 2000;
/** More engrams than this waiting for vectors: the hook would embed them all first, so it runs BM25. */
const MAX_PENDING_FOR_DENSE = 32;
/** How long the model may take to load before the hook answers with BM25 alone (well inside its deadline). */
const DENSE_BUDGET_MS = 2000;

function denseBudgetMs(): number {
  const n = Number(process.env.SVC_HOOK_DENSE_BUDGET_MS);
  return Number.isFinite(n) && n >= 0 ? n : DENSE_BUDGET_MS;
}

export async function hookInject(e: HookEvent): Promise<string | undefined> {
  const name = eventName(e) || (typeof e.prompt === 'string' ? 'UserPromptSubmit' : '');
  if (name !== 'UserPromptSubmit' && name !== 'SessionStart') return undefined;
  // A session start has no prompt: the project stands in (pinned engrams come regardless).
  const task = name === 'SessionStart' ? projectQuery(projectDir(e)) || 'session start' : str(e, 'prompt');
  if (name === 'SessionStart') await sendOutbox(projectDir(e) || process.cwd());
  const text = await injectFor(task, { session: sessionId(e), host: hostOf(e), dir: projectDir(e) });
  if (!text) return undefined;
  return contextOutput(name, `${HEADER}\n\n${text}`);
}

export const HEADER = 'Memory from svc (engrams that apply here; ids in parentheses):';

/** The injected text for `task`, or undefined when nothing applies. Records the injection. */
export async function injectFor(task: string, opts: { session?: string; host: Host; dir?: string }): Promise<string | undefined> {
  if (!task || /^\/\S+$/.test(task)) return undefined;
  task = task.slice(0, MAX_TASK);
  const root = resolveStoreRoot();
  return withStore(root, async (store) => {
    const { inject } = await import('../../engine/ops/inject.js');
    const embedder = await denseLeg(store);
    // SVC_RERANKER reranks here too, unless the cross-encoder is not ready within the dense budget.
    const { rerankerSetting } = await import('../../engine/rerank/reranker.js');
    const reranker = rerankerSetting(store.root, process.env, denseBudgetMs());
    const team = await hookTeam(store.root, opts.dir || process.cwd());
    const result = await inject(store, task, { budget: budget(), withProtocol: false, embedder, reranker, ...(team ? { team } : {}) });
    if (result.sources && result.sources.hub.state !== 'ok' && result.sources.hub.state !== 'cached')
      hookFailed(new Error(result.sources.hub.detail ?? 'the hub did not answer'));
    const shown = Object.values(result.blocks).flat().length;
    if (shown === 0) return undefined;
    try {
      const { recordInjection } = await import('../../engine/ops/history.js');
      await recordInjection(store, result, { session: opts.session, agent: opts.host, at: new Date() });
    } catch (err) {
      hookFailed(err); // provenance is a nicety: the context still goes out
    }
    return result.text;
  });
}

/**
 * The hub the project's .svc.yaml names, read only when the file mentions remote_url, so a local
 * project pays a stat walk and nothing more.
 */
async function hookRemote(dir: string): Promise<RemoteConfig | null> {
  const { findProjectConfigPath, loadProjectConfig } = await import('../../engine/config/project-config.js');
  const path = findProjectConfigPath(dir);
  if (!path || !readFileSync(path, 'utf8').includes('remote_url')) return null;
  const { remoteOf } = await import('../../engine/remote/hub-client.js');
  return remoteOf(await loadProjectConfig(dir));
}

/** The hub as a recall source: a short deadline, and its answer kept for the same prompt a while (a session start repeats its query). */
async function hookTeam(storeRoot: string, dir: string): Promise<TeamSource | undefined> {
  try {
    const remote = await hookRemote(dir);
    if (!remote) return undefined;
    const { hubSource, HOOK_TEAM_BUDGET_MS, HOOK_TEAM_CACHE_MS } = await import('../../engine/remote/team-recall.js');
    return hubSource(storeRoot, remote, { deadlineMs: HOOK_TEAM_BUDGET_MS, cacheMs: HOOK_TEAM_CACHE_MS });
  } catch (err) {
    hookFailed(err);
    return undefined;
  }
}

/** A session start sends the team writes waiting in the outbox (each within 1.5 s; it stops at the first the hub does not take). */
async function sendOutbox(dir: string): Promise<void> {
  try {
    const remote = await hookRemote(dir);
    if (!remote) return;
    const root = resolveStoreRoot();
    const { outboxDir, flushOutbox } = await import('../../engine/remote/team-outbox.js');
    if (existsSync(outboxDir(root))) await flushOutbox(root, remote, 1_500);
  } catch (err) {
    hookFailed(err);
  }
}

/** SVC_INJECT_BUDGET within the one rule for budgets (50 to 100,000 tokens), else the default. */
function budget(): number {
  const n = Number(process.env.SVC_INJECT_BUDGET);
  return Number.isInteger(n) && n >= MIN_INJECT_BUDGET && n <= MAX_INJECT_BUDGET ? n : DEFAULT_INJECT_BUDGET;
}

/** A ready embedder when the model is on disk and little is waiting to be embedded; else undefined (BM25). */
async function denseLeg(store: LocalBackend): Promise<EmbedderState | undefined> {
  try {
    if (process.env.SVC_EMBED?.trim().toLowerCase() === 'off') return undefined;
    const { modelPresent, selectedModel } = await import('../../engine/embed/model-layout.js');
    const { loadEmbedder } = await import('../../engine/embed/fastembed-embedder.js');
    const model = selectedModel();
    if (!modelPresent(store.root, model)) return undefined;
    if (store.vectorStats(model).pending > MAX_PENDING_FOR_DENSE) return undefined;
    // A cold model (first run after boot, a slow disk) must not hold up the prompt: past the
    // budget the answer is BM25 alone, and the load is abandoned with the process.
    const state = await Promise.race([
      loadEmbedder(store.root, { download: false, progress: false }),
      sleep(denseBudgetMs(), undefined, { ref: false }),
    ]);
    return state?.state === 'ready' ? state : undefined;
  } catch (err) {
    hookFailed(err);
    return undefined;
  }
}

/** What a session start asks for: the project folder's name plus `.svc.yaml`'s scope and domain. */
export function projectQuery(dir: string): string {
  if (!dir) return '';
  const words = [basename(dir)];
  try {
    const file = join(dir, '.svc.yaml');
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8');
      for (const key of ['scope', 'domain']) {
        const m = new RegExp(`^${key}:\\s*["']?([^"'#\\n]+?)["']?\\s*(#.*)?$`, 'm').exec(text);
        if (m) words.push(m[1]!.trim());
      }
    }
  } catch {
    /* the folder name alone will do */
  }
  return words
    .filter(Boolean)
    .join(' ')
    .replace(/[-_./:]+/g, ' ')
    .trim();
}
