import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { LocalStore } from '../../engine/store/local-store.js';
import type { EmbedderState } from '../../engine/embed/embedder.js';
import { contextOutput, debug, eventName, hostOf, projectDir, sessionId, str, withStore, type HookEvent, type Host } from './io.js';
import { resolveStoreRoot } from '../../engine/store/store-root.js';

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
// The dense leg runs only with the model already on disk and a small embedding backlog (a hook
// never downloads, nor embeds a large import); otherwise BM25 alone.

const DEFAULT_BUDGET = 2000;
/** Characters of a prompt that go into the query (a pasted log adds noise, not relevance). */
const MAX_TASK = 2000;
/** More engrams than this waiting for vectors: the hook would embed them all first, so it runs BM25. */
const MAX_PENDING_FOR_DENSE = 32;

export async function hookInject(e: HookEvent): Promise<string | undefined> {
  const name = eventName(e) || (typeof e.prompt === 'string' ? 'UserPromptSubmit' : '');
  if (name !== 'UserPromptSubmit' && name !== 'SessionStart') return undefined;
  // A session start has no prompt: the project stands in (pinned engrams come regardless).
  const task = name === 'SessionStart' ? projectQuery(projectDir(e)) || 'session start' : str(e, 'prompt');
  const text = await injectFor(task, { session: sessionId(e), host: hostOf(e) });
  if (!text) return undefined;
  return contextOutput(name, `${HEADER}\n\n${text}`);
}

export const HEADER = 'Memory from svc (engrams that apply here; ids in parentheses):';

/** The injected text for `task`, or undefined when nothing applies. Records the injection. */
export async function injectFor(task: string, opts: { session?: string; host: Host }): Promise<string | undefined> {
  if (!task || /^\/\S+$/.test(task)) return undefined;
  task = task.slice(0, MAX_TASK);
  const root = resolveStoreRoot();
  return withStore(root, async (store) => {
    const { inject } = await import('../../engine/ops/inject.js');
    const embedder = await denseLeg(store);
    const result = await inject(store, task, { budget: budget(), withProtocol: false, fast: embedder === undefined, embedder });
    const shown = Object.values(result.blocks).flat().length;
    if (shown === 0) return undefined;
    try {
      const { recordInjection } = await import('../../engine/ops/history.js');
      await recordInjection(store, result, { session: opts.session, agent: opts.host, at: new Date() });
    } catch (err) {
      debug(err); // provenance is a nicety: the context still goes out
    }
    return result.text;
  });
}

function budget(): number {
  const n = Number(process.env.SVC_INJECT_BUDGET);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_BUDGET;
}

/** A ready embedder when the model is on disk and little is waiting to be embedded; else undefined (BM25). */
async function denseLeg(store: LocalStore): Promise<EmbedderState | undefined> {
  try {
    if (process.env.SVC_EMBED?.trim().toLowerCase() === 'off') return undefined;
    const { loadEmbedder, modelPresent, selectedModel } = await import('../../engine/embed/fastembed-embedder.js');
    const model = selectedModel();
    if (!modelPresent(store.root, model)) return undefined;
    if (store.vectorStats(model).pending > MAX_PENDING_FOR_DENSE) return undefined;
    const state = await loadEmbedder(store.root, { download: false, progress: false });
    return state.state === 'ready' ? state : undefined;
  } catch (err) {
    debug(err);
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
  return words.filter(Boolean).join(' ').replace(/[-_./:]+/g, ' ').trim();
}
