import type { EmbedderState } from '../engine/embed/embedder.js';
import type { LocalBackend } from '../engine/store/local-backend.js';
import type { Output } from '../engine/cli/cli-kit.js';
import { isTerminal } from '../engine/cli/std-write.js';

// The dense leg for a command. Loading the model costs real time, so `--fast` never touches
// it, and learn only uses a model already on disk (the download belongs to the first hybrid
// recall). When vectors cannot run, a terminal gets one line saying so, once per failed download.

export async function embedderFor(
  store: LocalBackend,
  out: Output,
  opts: { fast: boolean; download: boolean; warn: boolean },
): Promise<EmbedderState | undefined> {
  if (opts.fast) return undefined;
  const { downloadFailure, modelPresent, selectedModel } = await import('../engine/embed/model-layout.js');
  const { loadEmbedder } = await import('../engine/embed/fastembed-embedder.js');
  if (!opts.download && !modelPresent(store.root, selectedModel())) return undefined;
  const state = await loadEmbedder(store.root, { download: opts.download, progress: isTerminal(2) });
  // One short line on a terminal: why, the first time (not again while a failed download waits
  // for its next try, hourly), then only that vectors are off and how to turn them on. JSON
  // output (legs.vector_reason) and svc doctor carry the whole story.
  if (state.state === 'unavailable' && opts.warn && isTerminal(2)) {
    const { clip, switchedOff, vectorsOffLine } = await import('../engine/embed/vectors-off.js');
    // Written by the attempt that just failed (SVC_EMBED=off makes none, but an old one may be there).
    const failed = state.retryAt === undefined && !switchedOff(state.reason) ? downloadFailure(store.root, state.model) : undefined;
    out.warn(
      state.retryAt !== undefined
        ? vectorsOffLine()
        : failed
          ? vectorsOffLine(`the model did not download: ${clip(failed.error, 60)}; next try in an hour`, Infinity)
          : vectorsOffLine(state.reason),
    );
  }
  return state;
}
