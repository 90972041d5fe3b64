// Small summary statistics for benchmark samples.

/** The p-th percentile (0..100) with linear interpolation between closest ranks. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const pos = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export const median = (samples: readonly number[]): number => percentile(samples, 50);

export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? NaN : samples.reduce((a, b) => a + b, 0) / samples.length;
}
