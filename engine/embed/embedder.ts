// The dense leg of search sits behind this interface: the fastembed provider implements it
// for real models; anything else (a hosted API, a test double) can too.

export const EMBEDDING_MODELS = ['bge-small-en-v1.5', 'all-MiniLM-L6-v2'] as const;
export type EmbeddingModelName = (typeof EMBEDDING_MODELS)[number];
export const DEFAULT_EMBEDDING_MODEL: EmbeddingModelName = 'bge-small-en-v1.5';

export interface Embedder {
  readonly model: EmbeddingModelName;
  readonly dimensions: number;
  /** Unit-length vector for a search query. */
  embedQuery(text: string): Promise<Float32Array>;
  /** Unit-length vectors for stored texts, in order. */
  embedPassages(texts: string[]): Promise<Float32Array[]>;
}

/** Whether the dense leg can run, and if not, why: recall and status report it verbatim. */
export type EmbedderState =
  | { state: 'ready'; model: EmbeddingModelName; embedder: Embedder }
  | {
      state: 'unavailable';
      model: EmbeddingModelName;
      reason: string;
      /** Set while a failed download waits for its next try (ISO time): callers need not repeat the warning. */
      retryAt?: string;
    };
