import { describe, it, expect } from 'vitest';
import { parseQuery, phraseTokens } from '../search/fts-tokens.js';

// The tokens FTS5 makes of a query's words, as the local index's tokenizer makes them; a word
// seen before comes from a memo (fts-tokens.ts), which must never change what callers get.

describe('phrase tokens', () => {
  it('stems and folds as the index does', () => {
    expect(phraseTokens('Deployments running')).toEqual(['deploy', 'run']);
    expect(phraseTokens('Café')).toEqual(['cafe']);
    expect(phraseTokens('')).toEqual([]);
  });

  it('hands each caller its own array: changing one leaves the next answer as it was', () => {
    const first = phraseTokens('grafana dashboards');
    first.push('changed');
    first[0] = 'changed';
    expect(phraseTokens('grafana dashboards')).toEqual(['grafana', 'dashboard']);
  });

  it('gives the same tokens once the memo has been filled and emptied', () => {
    const before = phraseTokens('liveness probes');
    for (let i = 0; i < 9000; i++) phraseTokens(`word${i}`);
    expect(phraseTokens('liveness probes')).toEqual(before);
    expect(parseQuery('which liveness probes?', 'any')?.phrases).toEqual([['live'], ['probe']]);
  });
});
