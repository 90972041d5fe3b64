import type { EmbedderState } from '../embed/embedder.js';
import type { EmbedderProvider } from '../backend.js';

/** How long a long-lived server takes "no model" as the answer. */
const RECHECK_MS = 2000;

/**
 * The dense leg of a local store for a long-lived server: fastembed is imported and the model
 * loaded (downloaded on first need) only when a tool first needs vectors; `loadEmbedder` caches a
 * ready model per process. When vectors cannot run, the operator is told once per reason.
 */
export function localEmbedderProvider(
  storeRoot: string,
  opts: { log?: (message: string) => void; env?: NodeJS.ProcessEnv } = {},
): EmbedderProvider {
  let ready: EmbedderState | undefined;
  // Without a model, the answer stands for a moment: every recall of a busy server would
  // otherwise look for the files again. A model placed by hand is still seen within it.
  let missing: { state: EmbedderState; until: number } | undefined;
  const told = new Set<string>();
  const module = () => import('../embed/fastembed-embedder.js');
  const note = (state: EmbedderState): EmbedderState => {
    if (state.state === 'ready') ready = state;
    else if (!told.has(state.reason)) {
      told.add(state.reason);
      opts.log?.(`vector search unavailable, BM25 only: ${state.reason}`);
    }
    return state;
  };
  return {
    async load() {
      if (ready) return ready;
      if (missing && missing.until > Date.now()) return missing.state;
      const { loadEmbedder } = await module();
      const state = note(await loadEmbedder(storeRoot, { download: true, progress: false, env: opts.env }));
      missing = state.state === 'ready' ? undefined : { state, until: Date.now() + RECHECK_MS };
      return state;
    },
    peek() {
      return ready;
    },
    async probe() {
      if (ready) return ready;
      const { loadEmbedder } = await module();
      const state = await loadEmbedder(storeRoot, { download: false, progress: false, env: opts.env });
      if (state.state === 'ready') ready = state;
      return state;
    },
  };
}
