import { describe, expect, it } from 'vitest';
import { parseArgs, type FlagSpecs } from '../cli/cli-kit.js';
import { SvcError } from '../errors.js';

// Every command parses its argv here, on every call: what a user types must come out as the
// command means it, and a mistake must come back as one precise usage error.

const FLAGS = {
  scope: { type: 'string' },
  limit: { type: 'number' },
  dryRun: { type: 'boolean', default: false },
  meta: { type: 'boolean' },
  learn: { type: 'string', isMultiple: true },
} as const satisfies FlagSpecs;

const parse = (...argv: string[]) => parseArgs(argv, 'help', FLAGS);

function usageError(...argv: string[]): string {
  try {
    parse(...argv);
  } catch (err) {
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).kind).toBe('invalid');
    return (err as SvcError).message;
  }
  throw new Error(`no error for ${JSON.stringify(argv)}`);
}

describe('parseArgs', () => {
  it('reads strings, numbers and booleans in every spelling, with defaults and absent flags', () => {
    const { input, flags } = parse('use', 'pnpm', '--scope', 'project:x', '--limit=5', '--dry-run', '--json');
    expect(input).toEqual(['use', 'pnpm']);
    expect(flags).toMatchObject({ scope: 'project:x', limit: 5, dryRun: true, json: true, fast: false, quiet: false, learn: [] });
    expect(flags.meta).toBeUndefined();
    expect(flags.path).toBeUndefined();
    expect(parse('--dryRun').flags.dryRun).toBe(true);
    expect(parse('--no-json').flags.json).toBe(false);
    expect(parse('--json=false', '--meta=true').flags).toMatchObject({ json: false, meta: true });
    expect(parse('--limit', '0.5').flags.limit).toBe(0.5);
  });

  it('collects a repeated multiple flag in order', () => {
    expect(parse('--learn', 'a', '--learn=b,c').flags.learn).toEqual(['a', 'b,c']);
  });

  it('keeps dash-led text that is no flag as an argument or a value, and takes everything after -- as arguments', () => {
    expect(parse('--- not a flag', '-').input).toEqual(['--- not a flag', '-']);
    expect(parse('--limit', '-5').flags.limit).toBe(-5);
    expect(parse('--scope', '--- odd').flags.scope).toBe('--- odd');
    expect(parse('x', '--', '--json', '-q').input).toEqual(['x', '--json', '-q']);
    expect(parse('x', '--', '--json').flags.json).toBeUndefined();
    expect(parse('--scope=--json').flags.scope).toBe('--json');
  });

  it('names an unknown flag as typed, with the nearest known one', () => {
    expect(usageError('x', '--colour', 'red')).toBe('unknown flag --colour (see --help)');
    expect(usageError('--scop', 'a')).toBe('unknown flag --scop (did you mean --scope?) (see --help)');
    expect(usageError('--no-jsn')).toBe('unknown flag --no-jsn (did you mean --no-json?) (see --help)');
    expect(usageError('-x')).toBe('unknown flag -x (see --help)');
  });

  it('refuses a missing value, a bad number, a value on a boolean and a repeated single flag', () => {
    expect(usageError('--scope')).toBe('--scope needs a value (see --help)');
    expect(usageError('--scope', '--json')).toBe('--scope needs a value (see --help)');
    expect(usageError('--limit', 'ten')).toBe('--limit must be a number (got "ten")');
    expect(usageError('--limit=')).toBe('--limit must be a number (got "")');
    expect(usageError('--json=maybe')).toBe('--json takes no value (got "maybe")');
    expect(usageError('--scope', 'a', '--scope', 'b')).toBe('--scope is given more than once (see --help)');
  });
});
