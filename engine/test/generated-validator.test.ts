import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { GENERATED_VALIDATOR, validatorSource } from '../../scripts/generate-validator.js';

describe('the generated engram validator', () => {
  it('matches the schema it was generated from (run npm run gen:validator after a schema change)', () => {
    expect(readFileSync(GENERATED_VALIDATOR, 'utf8')).toBe(validatorSource());
  });
});
