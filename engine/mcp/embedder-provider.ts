import type { EmbedderState } from '../embed/embedder.js';
import type { EmbedderProvider } from '../backend.js';

/**
 * The dense leg of a local store for a long-lived server: fastembed is imported and the model
 * loaded (downloaded on first need) only when a tool first needs vectors; `loadEmbedder` caches a
 * ready model per process. When vectors cannot run, the operator is told once per reason.
 */
export function localEmbedderProvider(storeRoot: string, opts: { log?: (message: string) => void; env?: NodeJS.ProcessEnv } = {}): EmbedderProvider {
  let ready: EmbedderState | undefined;
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
      const { loadEmbedder } = await module();
      return note(await loadEmbedder(storeRoot, { download: true, progress: false, env: opts.env }));
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
