import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { readSvcYaml, writeSvcYaml } from '../store/yaml-codec.js';
import { parseEngramYaml, stringifyEngram } from '../store/engram-yaml.js';
import { buildEngram } from '../ops/learn.js';
import { seededRandom } from '../seeded-random.js';
import { syntheticEngrams } from '../../scripts/support/synthetic-engrams.js';
import type { EngramDoc } from '../model/engram-types.js';

// The fast reader and writer of svc's own YAML must answer exactly what the `yaml` package
// answers (the same values read, the same bytes written), or step aside (undefined).

const AT = '2026-11-25T10:00:00.000Z';
const engram = (statement: string, extra: Partial<EngramDoc> = {}): EngramDoc => ({
  ...buildEngram({ statement, scope: 'project:x', visibility: 'private', tags: ['a'] }, AT, {
    scope: 'project:x',
    session_id: null,
    stored_at: AT,
  }),
  id: 'ENG-2026-1125-001',
  ...extra,
});

/** Strings that stress a YAML writer: indicators, quotes, escapes, numbers and words YAML types. */
const TRICKY = [
  'plain words',
  'a: b',
  'a:b',
  'ends with colon:',
  'has # hash',
  'has#hash',
  '# starts with hash',
  '- dash',
  '-dash',
  '--- doc',
  '...',
  "it's",
  '"quoted"',
  "'single'",
  'back\\slash',
  'tab\there',
  'new\nline',
  'two\n\nparagraphs',
  ' leading',
  'trailing ',
  '',
  ' ',
  'null',
  'Null',
  'NULL',
  '~',
  'true',
  'True',
  'FALSE',
  'yes',
  'no',
  'on',
  'off',
  '1',
  '-1',
  '+1',
  '007',
  '0x1F',
  '0o17',
  '1e5',
  '1.5',
  '.5',
  '1.',
  '-0',
  '.inf',
  '-.Inf',
  '.nan',
  '2026-11-25',
  '2026-11-25T10:00:00Z',
  '12:30',
  '1_000',
  '[a, b]',
  '{a: 1}',
  '&anchor',
  '*alias',
  '!tag',
  '!!str x',
  '|literal',
  '>folded',
  '%directive',
  '@at',
  '`tick',
  '?question',
  ',comma',
  '{',
  '}',
  '[',
  ']',
  'émoji 🚀 ünïcödé',
  '日本語のテキスト',
  'zero\u0000width',
  'bell\u0007',
  'del\u007f',
  'nel\u0085',
  'ls\u2028ps\u2029',
  'bom\ufeff',
  'nbsp\u00a0here',
  'cr\rhere',
  'a "mixed" \'quote\' line',
  'url http://example.com/a?b=c#frag',
  'x: y: z',
  'C:\\path\\file',
  '\\u0041',
];

const sameAsYaml = (text: string): 'fast' | 'fallback' => {
  const fast = readSvcYaml(text);
  if (fast === undefined) return 'fallback';
  expect(fast, text).toEqual(parse(text, { uniqueKeys: true }));
  return 'fast';
};

const OPTIONS = { lineWidth: 0, aliasDuplicateObjects: false } as const;
/** Writes through the fast writer when it can, and checks the bytes against yaml's. */
const writesAsYaml = (value: Record<string, unknown>): 'fast' | 'fallback' => {
  const fast = writeSvcYaml(value);
  if (fast === undefined) return 'fallback';
  expect(fast).toBe(stringify(value, OPTIONS));
  return 'fast';
};

describe('readSvcYaml', () => {
  it('reads every engram svc writes for the benchmark corpus, exactly as yaml does', () => {
    const docs = syntheticEngrams(2000, 7).map((input, i) => ({
      ...buildEngram({ ...input, scope: input.scope ?? 'project:x', visibility: 'private' }, AT, {
        scope: 'project:x',
        session_id: null,
        stored_at: AT,
      }),
      id: `ENG-2026-1125-${i + 1}`,
    }));
    const ways = docs.map((d) => sameAsYaml(stringifyEngram(d)));
    expect(ways.filter((w) => w === 'fast').length).toBe(docs.length);
  });

  it('answers what yaml answers, or steps aside, for statements, tags and keys that stress a writer', () => {
    let fast = 0;
    const r = seededRandom(11);
    const pick = () => TRICKY[Math.floor(r() * TRICKY.length)]!;
    const cases: EngramDoc[] = [];
    for (const s of TRICKY) cases.push(engram(s.length > 0 ? s : 'x', { tags: [s], rationale: s, domain: s || undefined }));
    for (let i = 0; i < 3000; i++) {
      const parts = Array.from({ length: 1 + Math.floor(r() * 4) }, pick);
      const statement = parts.join(r() < 0.5 ? ' ' : '') || 'x';
      cases.push(
        engram(statement, {
          tags: parts,
          ...(r() < 0.3 ? { [pick().replace(/[^A-Za-z_]/g, '') || 'k']: pick() } : {}),
          ...(r() < 0.3 ? { anchors: [{ file: pick(), line: Math.floor(r() * 100) }] } : {}),
        }),
      );
    }
    for (const c of cases) if (sameAsYaml(stringifyEngram(c)) === 'fast') fast++;
    // Most of them still take the fast path: stepping aside is for what it cannot read.
    expect(fast).toBeGreaterThan(cases.length / 4);
  });

  it('steps aside for YAML a person wrote, and the engram reads as before', () => {
    const base = stringifyEngram(engram('Use pnpm, not npm'));
    const variants = [
      `# a comment first\n${base}`,
      base.replace('status: active', 'status: active # inline comment'),
      base.replace('status: active', 'status:   active'),
      base.replace('tags:\n  - a\n', 'tags: [a, b]\n'),
      base.replace('tags:\n  - a\n', 'tags:\n- a\n'),
      base.replace('tags:\n  - a\n', 'tags:\n    - a\n'),
      base.replace('statement: Use pnpm, not npm', 'statement: |\n  Use pnpm,\n  not npm'),
      base.replace('statement: Use pnpm, not npm', 'statement: Use pnpm,\n  not npm'),
      base.replace('statement: Use pnpm, not npm', "statement: 'Use pnpm,\n  not npm'"),
      base.replace('statement: Use pnpm, not npm', 'statement: "Use \\x41 pnpm"'),
      base.replace('statement: Use pnpm, not npm', 'statement: !!str Use pnpm'),
      base.replace('statement: Use pnpm, not npm', "statement: 'it''s ''quoted'' here'"),
      base.replace('statement: Use pnpm, not npm', 'statement: "a \\"b\\" c \\u00e9"'),
      base.replace('statement: Use pnpm, not npm', 'statement: - x'),
      base.replace('statement: Use pnpm, not npm', 'statement: -'),
      base.replace('statement: Use pnpm, not npm', 'statement: ? x'),
      base.replace('statement: Use pnpm, not npm', 'statement: x: y'),
      base.replace('tags:\n  - a\n', 'tags:\n  - - a\n'),
      base.replace('tags:\n  - a\n', 'tags:\n  - a: b\n    c: d\n'),
      base.replace('tags:\n  - a\n', 'tags:\n  - a:\n      - b\n'),
      `---\n${base}`,
      `${base}...\n`,
      base.replace('\n', '\r\n'),
      base.replace('\n', '\n\n'),
      base.slice(0, -1),
      `${base}status: retired\n`,
      base.replace('version: 2', 'version: 0x2'),
      base.replace('pinned: false', 'pinned: False'),
      base.replace('polarity: do', 'polarity: ~'),
      base.replace('polarity: do', 'polarity:'),
      `${base}true: 1\n`,
      `${base}"quoted key": 1\n`,
      `${base}__proto__: 1\n`,
      base.replace('sources:\n  - scope', 'sources:\n  -   scope'),
    ];
    let fast = 0;
    for (const text of variants) {
      expect(text, 'each variant changes the text').not.toBe(base);
      if (sameAsYaml(text) === 'fast') fast++;
      const viaYaml = (() => {
        try {
          return { ok: true, value: parse(text, { uniqueKeys: true }) as unknown };
        } catch {
          return { ok: false };
        }
      })();
      const read = parseEngramYaml(text);
      if (!viaYaml.ok) expect(read.ok, text).toBe(false);
    }
    expect(sameAsYaml(base)).toBe('fast');
    // The quoted forms, sequences of mappings, a comment line and a blank line are in the subset.
    expect(fast).toBe(6);
  });

  it('skips whole-line comments and blank lines as yaml does, and steps aside where they would mean more', () => {
    const config = [
      "# This machine's copy of the store.\nid_prefix: KQ7M\n",
      "# bound by svc init\nscope: project:web\n\n# the team's hub\nremote_url: https://hub.example.com/\nremote_scopes:\n  # both teams\n  - team:web\n\n  - team:ops\n",
      'id_prefix: KQ7M\nstores:\n  - path: /home/me/team\n    # read-only for now\n    scope: team:web\n    shared: true\n      # deeper comment\n    readonly: false\n',
      '\n\nscope: project:x\n   \n',
      'statement: abc\n  # a comment, not more of the scalar\n',
      'statement: "abc"\n  # after a quoted scalar\n',
      'a:\n  # before the nested block\n  b: 1\n',
      'a:\n\n  - x\n',
    ];
    for (const text of config) expect(sameAsYaml(text), text).toBe('fast');
    // Where a comment-like line is text, or the file holds nothing else, yaml decides.
    const aside = [
      '# only a comment\n',
      '\n',
      'statement: |\n  Use pnpm\n  # kept as text\n',
      "statement: 'Use pnpm,\n  # inside quotes'\n",
      'scope: project:x # inline comment\n',
    ];
    for (const text of aside) expect(sameAsYaml(text), text).toBe('fallback');
  });

  it('reads as yaml does with comment lines and blank lines put anywhere in what svc writes', () => {
    const r = seededRandom(31);
    const pick = () => TRICKY[Math.floor(r() * TRICKY.length)]!;
    const inserts = ['', '   ', '# note', '  # indented note', '#', '    #x: y', '# - item'];
    let fast = 0;
    for (let i = 0; i < 1500; i++) {
      const parts = Array.from({ length: 1 + Math.floor(r() * 3) }, pick);
      const lines = stringifyEngram(engram(parts.join(' ') || 'x', { tags: parts, rationale: pick() })).split('\n');
      const last = lines.pop(); // '' after the final newline
      for (let n = 1 + Math.floor(r() * 3); n > 0; n--)
        lines.splice(Math.floor(r() * (lines.length + 1)), 0, inserts[Math.floor(r() * inserts.length)]!);
      if (sameAsYaml([...lines, last].join('\n')) === 'fast') fast++;
    }
    expect(fast).toBeGreaterThan(300);
  });

  it('reads nested mappings and sequences of mappings as yaml does', () => {
    const value = { a: { b: { c: [1, 'x', { d: [], e: {} }] } }, list: [{ k: 'v', n: [{ m: null }] }, 'tail'], empty: [], obj: {} };
    const text = stringify(value, { lineWidth: 0 });
    expect(sameAsYaml(text)).toBe('fast');
  });
});

describe('writeSvcYaml', () => {
  it('writes every benchmark engram byte for byte as yaml does', () => {
    const docs = syntheticEngrams(2000, 9).map((input, i) => ({
      ...buildEngram({ ...input, scope: input.scope ?? 'project:x', visibility: 'private' }, AT, {
        scope: 'project:x',
        session_id: null,
        stored_at: AT,
      }),
      id: `ENG-2026-1125-${i + 1}`,
    }));
    expect(docs.map((d) => writesAsYaml(d)).filter((w) => w === 'fast')).toHaveLength(docs.length);
    // And stringifyEngram's output reads back through the fast reader as the same engram.
    for (const d of docs.slice(0, 200)) expect(readSvcYaml(stringifyEngram(d))).toEqual(parse(stringifyEngram(d)));
  });

  it('writes what yaml writes, or steps aside, for strings, numbers and shapes that stress a writer', () => {
    let fast = 0;
    const r = seededRandom(23);
    const pick = () => TRICKY[Math.floor(r() * TRICKY.length)]!;
    const values: Array<Record<string, unknown>> = [];
    for (const s of TRICKY) values.push({ ...engram(s || 'x'), tags: [s], rationale: s });
    for (let i = 0; i < 3000; i++) {
      const parts = Array.from({ length: 1 + Math.floor(r() * 3) }, pick);
      values.push({
        ...engram(parts.join(' ') || 'x'),
        tags: parts,
        note: r() < 0.2 ? undefined : pick(),
        n: [0.7, 1e21, 1e-7, -5, 0, 123456789012, NaN, -0, Infinity][i % 9],
      });
    }
    values.push(
      { a: { b: { c: [1, 'x', { d: [], e: {} }] } }, list: [{ k: 'v', n: [{ m: null }] }, 'tail'], empty: [], obj: {} },
      { gone: undefined, kept: 1, nested: { gone: undefined }, items: [{ a: undefined, b: 2 }] },
      { when: new Date(0) },
      { deep: [[1, 2]] },
      { item: [{}] },
    );
    for (const v of values) if (writesAsYaml(v) === 'fast') fast++;
    expect(fast).toBeGreaterThan(values.length / 4);
  });
});
