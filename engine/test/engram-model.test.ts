import { describe, it, expect } from 'vitest';
import { ENGRAM_ID_PATTERN, engramJsonSchema } from '../model/engram-schema.js';
import {
  ANCHOR_RELEVANCES,
  ASSOCIATION_TARGET_TYPES,
  ASSOCIATION_TYPES,
  COGNITIVE_LEVELS,
  COMMITMENTS,
  ENGRAM_STATUSES,
  ENGRAM_TYPES,
  ENTITY_TYPES,
  INSIGHT_FATES,
  INSIGHT_GROUNDINGS,
  INSIGHT_OPERATIONS,
  MEMORY_CLASSES,
  POLARITIES,
  RELATION_KINDS,
  VISIBILITIES,
  type Engram,
  type EngramDoc,
} from '../model/engram-types.js';
import { applyEngramDefaults, validateEngram } from '../model/validate-engram.js';

type Obj = Record<string, unknown>;

// `undefined` in a patch means "leave the key out", so one table covers missing fields too.
const merge = (base: Obj, patch: Obj): Obj => Object.fromEntries(Object.entries({ ...base, ...patch }).filter(([, v]) => v !== undefined));

const MINIMAL = {
  id: 'ENG-2026-0101-001',
  status: 'active',
  type: 'behavioral',
  scope: 'project:svc',
  statement: 'Use pnpm.',
};

function errorsOf(patch: Obj): string[] {
  const result = validateEngram(merge(MINIMAL, patch));
  return result.ok ? [] : result.errors;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Each nested object, minimal and valid, placed in an engram with some keys overridden. */
const INSIGHT = { operation: 'distill', synthesized_at: '2026-01-01T00:00:00Z' };
const OBJECTS: Record<string, (patch: Obj) => Obj> = {
  knowledge_type: (p) => ({ knowledge_type: merge({ memory_class: 'semantic', cognitive_level: 'apply' }, p) }),
  activation: (p) => ({
    activation: merge({ retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: '' }, p),
  }),
  relations: (p) => ({ relations: merge({}, p) }),
  'associations[0]': (p) => ({
    associations: [merge({ target_type: 'engram', target: 'ENG-2', strength: 0.5, type: 'semantic' }, p)],
  }),
  'knowledge_anchors[0]': (p) => ({ knowledge_anchors: [merge({ path: 'src/a.ts' }, p)] }),
  dual_coding: (p) => ({ dual_coding: merge({ example: 'pnpm install' }, p) }),
  provenance: (p) => ({ provenance: merge({ origin: 'user' }, p) }),
  feedback_signals: (p) => ({ feedback_signals: merge({}, p) }),
  'entities[0]': (p) => ({ entities: [merge({ name: 'pnpm', type: 'tool' }, p)] }),
  temporal: (p) => ({ temporal: merge({ learned_at: '2026-01-01' }, p) }),
  usage: (p) => ({ usage: merge({}, p) }),
  episodic: (p) => ({ episodic: merge({}, p) }),
  exchange: (p) => ({ exchange: merge({}, p) }),
  insight: (p) => ({ insight: merge(INSIGHT, p) }),
  'insight.serendipity': (p) => ({
    insight: { ...INSIGHT, serendipity: merge({ unexpectedness: 0.5, relevance: 0.5, score: 0.5 }, p) },
  }),
  'sources[0]': (p) => ({ sources: [merge({ scope: 'project:svc', stored_at: '2026-01-01T00:00:00Z' }, p)] }),
  previous_version_ref: (p) => ({ previous_version_ref: merge({ event_id: 'ev-1', changed_at: '2026-01-01' }, p) }),
};

/** The engram patch that sets the field at `path` (top level or `<object>.<key>`) to a value. */
function patchFor(path: string): (value: unknown) => Obj {
  const dot = path.lastIndexOf('.');
  if (dot === -1) return (value) => ({ [path]: value });
  const place = OBJECTS[path.slice(0, dot)];
  if (!place) throw new Error(`no builder for ${path}`);
  return (value) => place({ [path.slice(dot + 1)]: value });
}

/** A rejected value, the rule its error must mention, and the error's path when not the field's own. */
type Bad = [value: unknown, rule: string, at?: string];
interface FieldRule {
  path: string;
  valid: unknown[];
  invalid: Bad[];
}
const rule = (path: string, valid: unknown[], invalid: Bad[]): FieldRule => ({ path, valid, invalid });

const REQUIRED: Bad = [undefined, 'is required'];
const NOT_STRING: Bad = [5, 'must be a string'];
const NOT_INTEGER: Bad = [1.5, 'must be an integer'];
const NEGATIVE: Bad = [-1, 'must be at least 0 (minimum)'];
const enumRule = (path: string, values: readonly unknown[], extra: Bad[] = []) =>
  rule(path, [...values], [['bogus', `must be one of ${values.join(', ')} (got "bogus")`], ...extra]);
const stringRule = (path: string, extra: Bad[] = []) => rule(path, ['text', undefined], [NOT_STRING, ...extra]);
const countRule = (path: string) => rule(path, [0, 3, undefined], [NEGATIVE, NOT_INTEGER]);
const unitRule = (path: string, extra: Bad[] = []) =>
  rule(path, [0, 0.5, 1], [[-0.01, 'must be at least 0 (minimum)'], [1.01, 'must be at most 1 (maximum)'], ...extra]);
const stringsRule = (path: string) =>
  rule(
    path,
    [[], ['a', 'b']],
    [
      ['a', 'must be an array'],
      [[1], 'must be a string', `${path}[0]`],
    ],
  );
const objectRule = (path: string) => rule(path, [undefined], [['x', 'must be an object']]);

const FIELD_RULES: FieldRule[] = [
  rule(
    'id',
    ['ENG-2026-0101-001', 'ENG-KQ7M-2026-1122-1000', 'ABS-topic', 'META-a-b-1'],
    [REQUIRED, ['XYZ-1', '(pattern)'], ['ENG-', '(pattern)'], ['ENG-a b', '(pattern)'], NOT_STRING],
  ),
  rule('version', [1, 2, undefined], [[0, 'must be at least 1 (minimum)'], NOT_INTEGER, ['2', 'must be an integer']]),
  enumRule('status', ENGRAM_STATUSES, [REQUIRED]),
  rule('consolidated', [true, false, undefined], [['yes', 'must be a boolean']]),
  enumRule('type', ENGRAM_TYPES, [REQUIRED]),
  rule(
    'scope',
    ['global', 'project:svc', 'org:acme/team-a'],
    [REQUIRED, ['', '(minLength)'], ['', '(pattern)'], ['project: svc', 'whitespace (pattern)'], NOT_STRING],
  ),
  enumRule('visibility', VISIBILITIES, []),
  rule(
    'statement',
    ['x', ' Use pnpm. '],
    [REQUIRED, ['', 'must not be empty (minLength)'], [' \t\n', 'must not be blank (pattern)'], NOT_STRING],
  ),
  stringRule('rationale'),
  stringsRule('contraindications'),
  stringRule('source'),
  stringsRule('source_patterns'),
  rule('derivation_count', [0, 1, undefined], [NEGATIVE, NOT_INTEGER]),
  rule('pack', [null, 'core', undefined], [[5, 'must be a string or null']]),
  rule(
    'abstract',
    [null, 'ABS-2026-0101-001', undefined],
    [
      ['ENG-1', 'must be an abstraction id like ABS-2026-0101-001 (pattern)'],
      [5, 'must be a string or null'],
    ],
  ),
  rule(
    'derived_from',
    [null, 'ENG-1', 'META-1', undefined],
    [
      ['parent', 'must be an engram id like ENG-2026-0101-001 (pattern)'],
      [5, 'must be a string or null'],
    ],
  ),

  objectRule('knowledge_type'),
  enumRule('knowledge_type.memory_class', MEMORY_CLASSES, [REQUIRED]),
  enumRule('knowledge_type.cognitive_level', COGNITIVE_LEVELS, [REQUIRED]),
  rule('domain', ['lang.typescript', undefined], [['', '(minLength)'], NOT_STRING]),
  stringsRule('tags'),

  objectRule('activation'),
  unitRule('activation.retrieval_strength', [REQUIRED, ['1', 'must be a number']]),
  unitRule('activation.storage_strength', [REQUIRED]),
  rule('activation.frequency', [0, 12], [REQUIRED, NEGATIVE, NOT_INTEGER]),
  rule(
    'activation.last_accessed',
    ['', '2026-01-02', '2026-01-02T03:04', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05.123+02:00'],
    [REQUIRED, ['yesterday', 'must be empty, a date YYYY-MM-DD or an ISO 8601 timestamp (pattern)'], ['2026-1-2', '(pattern)'], NOT_STRING],
  ),

  objectRule('relations'),
  ...RELATION_KINDS.map((kind) =>
    rule(
      `relations.${kind}`,
      [[], ['ENG-1', 'ABS-2', 'META-3'], undefined],
      [
        ['ENG-1', 'must be an array'],
        [['nope'], '(pattern)', `relations.${kind}[0]`],
      ],
    ),
  ),

  rule(
    'associations',
    [[], undefined],
    [
      ['x', 'must be an array'],
      [['x'], 'must be an object', 'associations[0]'],
    ],
  ),
  enumRule('associations[0].target_type', ASSOCIATION_TARGET_TYPES, [REQUIRED]),
  rule('associations[0].target', ['ENG-2', 'docs/a.md'], [REQUIRED, ['', '(minLength)'], NOT_STRING]),
  rule(
    'associations[0].strength',
    [0, 0.5, 0.95],
    [REQUIRED, [0.96, 'must be at most 0.95 (maximum)'], [-0.1, 'must be at least 0 (minimum)']],
  ),
  enumRule('associations[0].type', ASSOCIATION_TYPES, [REQUIRED]),
  stringRule('associations[0].updated_at'),

  rule('knowledge_anchors', [[], undefined], [['x', 'must be an array']]),
  rule('knowledge_anchors[0].path', ['src/a.ts'], [REQUIRED, ['', '(minLength)'], NOT_STRING]),
  enumRule('knowledge_anchors[0].relevance', ANCHOR_RELEVANCES),
  rule('knowledge_anchors[0].snippet', ['', 'a'.repeat(200)], [['a'.repeat(201), 'must be at most 200 characters (maxLength)']]),
  stringRule('knowledge_anchors[0].snippet_extracted_at'),

  objectRule('dual_coding'),
  rule('dual_coding.example', ['an example'], [NOT_STRING]),
  rule('dual_coding.analogy', ['like a'], [NOT_STRING]),

  objectRule('provenance'),
  rule('provenance.origin', ['user'], [REQUIRED, NOT_STRING]),
  stringsRule('provenance.chain'),
  rule('provenance.signature', [null, 'sig', undefined], [[5, 'must be a string or null']]),
  stringRule('provenance.license'),

  objectRule('feedback_signals'),
  countRule('feedback_signals.positive'),
  countRule('feedback_signals.negative'),
  countRule('feedback_signals.neutral'),

  rule('entities', [[], undefined], [['x', 'must be an array']]),
  rule('entities[0].name', ['pnpm'], [REQUIRED, ['', '(minLength)']]),
  enumRule('entities[0].type', ENTITY_TYPES, [REQUIRED]),
  rule(
    'entities[0].uri',
    ['https://pnpm.io/', 'urn:isbn:0451450523', undefined],
    [['not a uri', 'must be a URI (format)'], ['pnpm.io', '(format)'], NOT_STRING],
  ),

  objectRule('temporal'),
  rule('temporal.learned_at', ['2026-01-01'], [REQUIRED, NOT_STRING]),
  stringRule('temporal.valid_from'),
  stringRule('temporal.valid_until'),
  stringRule('temporal.ingested_at'),

  objectRule('usage'),
  countRule('usage.injections'),
  countRule('usage.hits'),
  countRule('usage.misses'),
  stringRule('usage.last_hit_at'),

  objectRule('episodic'),
  ...['emotional_weight', 'confidence'].map((key) =>
    rule(
      `episodic.${key}`,
      [1, 5, 10, undefined],
      [
        [0, 'must be at least 1 (minimum)'],
        [11, 'must be at most 10 (maximum)'],
        [5.5, 'must be an integer'],
      ],
    ),
  ),
  stringRule('episodic.trigger_context'),
  stringRule('episodic.journal_ref'),

  objectRule('exchange'),
  unitRule('exchange.fitness_score'),
  countRule('exchange.environmental_diversity'),
  countRule('exchange.adoption_count'),
  unitRule('exchange.contradiction_rate'),

  rule(
    'structured_data',
    [{}, { any: { nested: [1, null] }, 'key with spaces': true }],
    [
      ['x', 'must be an object'],
      [[], 'must be an object'],
    ],
  ),

  objectRule('insight'),
  enumRule('insight.operation', INSIGHT_OPERATIONS, [REQUIRED]),
  rule('insight.synthesized_at', ['2026-01-01T00:00:00Z'], [REQUIRED, NOT_STRING]),
  enumRule('insight.grounding', INSIGHT_GROUNDINGS),
  stringsRule('insight.source_episode_ids'),
  objectRule('insight.serendipity'),
  unitRule('insight.serendipity.unexpectedness', [REQUIRED]),
  unitRule('insight.serendipity.relevance', [REQUIRED]),
  unitRule('insight.serendipity.score', [REQUIRED]),
  enumRule('insight.fate', INSIGHT_FATES),
  stringRule('insight.fate_ref'),
  stringRule('insight.fate_at'),
  countRule('insight.surfaced_count'),

  rule('polarity', [...POLARITIES, null, undefined], [['maybe', 'must be one of do, dont, null (got "maybe")']]),
  stringRule('content_hash'),
  enumRule('commitment', COMMITMENTS),
  stringRule('locked_at'),
  stringRule('locked_reason'),
  rule('reference_count', [0, 1, undefined], [NEGATIVE, NOT_INTEGER]),

  rule('sources', [[], undefined], [['x', 'must be an array']]),
  rule('sources[0].scope', ['project:svc'], [REQUIRED, NOT_STRING]),
  rule('sources[0].session_id', [null, 'session-1', undefined], [[5, 'must be a string or null']]),
  rule(
    'sources[0].stored_at',
    ['2026-01-02T03:04:05Z', '2026-01-02T03:04:05.5+01:00'],
    [REQUIRED, ['yesterday', 'ISO 8601 date-time (format)'], ['2026-01-02', '(format)'], NOT_STRING],
  ),

  rule('sources_omitted', [0, 12, undefined], [NEGATIVE, NOT_INTEGER]),
  rule('recurrence_count', [0, 4, undefined], [NEGATIVE, NOT_INTEGER]),
  rule('engram_version', [1, 7, undefined], [[0, 'must be at least 1 (minimum)'], NOT_INTEGER]),
  objectRule('previous_version_ref'),
  rule('previous_version_ref.event_id', ['ev-1'], [REQUIRED, NOT_STRING]),
  rule('previous_version_ref.changed_at', ['2026-01-01'], [REQUIRED, NOT_STRING]),
  stringsRule('episode_ids'),
  rule('summary', ['', 'a'.repeat(80)], [['a'.repeat(81), 'must be at most 80 characters (maxLength)'], NOT_STRING]),
  rule('pinned', [true, false, undefined], [['no', 'must be a boolean']]),
];

describe.each(FIELD_RULES)('$path', ({ path, valid, invalid }) => {
  const set = patchFor(path);
  it.each(valid.map((value) => [value]))('accepts %j', (value) => {
    expect(errorsOf(set(value))).toEqual([]);
  });
  it.each(invalid)('rejects %j (%s)', (value, ruleText, at = path) => {
    const message = new RegExp(`^${escape(at)}: .*${escape(ruleText)}`);
    expect(errorsOf(set(value))).toContainEqual(expect.stringMatching(message));
  });
});

describe('closed nested objects', () => {
  it.each(Object.keys(OBJECTS).filter((path) => path !== 'relations'))('%s rejects unknown keys', (path) => {
    expect(errorsOf(OBJECTS[path]!({ foo: 1 }))).toContain(`${path}: unknown key "foo" (no other keys allowed)`);
  });

  it('relations rejects unknown keys and takes all six arrays at once', () => {
    expect(errorsOf({ relations: { cousins: [] } })).toContain('relations: unknown key "cousins" (no other keys allowed)');
    const all = Object.fromEntries(RELATION_KINDS.map((kind) => [kind, ['ENG-9']]));
    expect(errorsOf({ relations: all })).toEqual([]);
  });

  it('dual_coding needs example or analogy, with one clear message', () => {
    expect(errorsOf({ dual_coding: {} })).toEqual(['dual_coding: needs "example" or "analogy"']);
    expect(errorsOf({ dual_coding: { example: 'e' } })).toEqual([]);
    expect(errorsOf({ dual_coding: { analogy: 'a' } })).toEqual([]);
    expect(errorsOf({ dual_coding: { example: 'e', analogy: 'a' } })).toEqual([]);
  });
});

describe('error messages', () => {
  it('read as the spec examples', () => {
    const errors = errorsOf({
      status: 'zombie',
      activation: { retrieval_strength: 1.5, storage_strength: 1, frequency: 0, last_accessed: '' },
      knowledge_type: { memory_class: 'semantic', foo: 1 },
      associations: [{ target_type: 'engram', target: 'ENG-2', strength: 0.96, type: 'semantic' }],
      dual_coding: {},
      summary: 'a'.repeat(81),
    });
    expect(errors).toEqual(
      expect.arrayContaining([
        'activation.retrieval_strength: must be at most 1 (maximum)',
        'status: must be one of active, dormant, retired, candidate (got "zombie")',
        'knowledge_type: unknown key "foo" (no other keys allowed)',
        'knowledge_type.cognitive_level: is required',
        'associations[0].strength: must be at most 0.95 (maximum)',
        'dual_coding: needs "example" or "analogy"',
        'summary: must be at most 80 characters (maxLength)',
      ]),
    );
    expect(errors).toHaveLength(7);
  });

  it.each([null, 5, 'engram', [], [MINIMAL], true])('a non-object (%j) is rejected as a whole', (value) => {
    expect(validateEngram(value)).toEqual({ ok: false, errors: ['engram: must be an object'] });
  });

  it('lists each required field that is missing', () => {
    expect(validateEngram({})).toEqual({
      ok: false,
      errors: ['id', 'status', 'type', 'scope', 'statement'].map((key) => `${key}: is required`),
    });
  });

  it('reports every broken rule once', () => {
    const result = validateEngram({
      id: 'bad',
      status: 1,
      type: 'x',
      scope: 'a b',
      statement: '',
      tags: [1, 2, 3],
      associations: [{}, {}],
    });
    expect(result.ok).toBe(false);
    const errors = result.ok ? [] : result.errors;
    expect(new Set(errors).size).toBe(errors.length);
    expect(errors).toContain('tags[2]: must be a string');
    expect(errors).toContain('associations[1].target: is required');
    expect(errors.some((e) => /anyOf|oneOf/.test(e))).toBe(false);
  });
});

/** An engram that sets every field of the schema. */
const FULL: Engram = {
  id: 'ENG-KQ7M-2026-0101-001',
  version: 2,
  status: 'active',
  consolidated: true,
  type: 'procedural',
  scope: 'project:github.com/acme/svc',
  visibility: 'public',
  statement: 'Install dependencies with pnpm, never npm.',
  rationale: 'The lockfile is pnpm-lock.yaml.',
  contraindications: ['Projects without pnpm-lock.yaml'],
  source: 'session',
  source_patterns: ['npm install'],
  derivation_count: 3,
  pack: 'js-basics',
  abstract: 'ABS-2026-0101-001',
  derived_from: 'ENG-2025-1231-004',
  knowledge_type: { memory_class: 'procedural', cognitive_level: 'apply' },
  domain: 'tooling.package-managers',
  tags: ['pnpm', 'node'],
  activation: { retrieval_strength: 0.8, storage_strength: 0.9, frequency: 4, last_accessed: '2026-01-05T10:00:00Z' },
  relations: {
    broader: ['ENG-1'],
    narrower: ['ENG-2'],
    related: ['ENG-3'],
    conflicts: ['ENG-4'],
    supersedes: ['ENG-5'],
    superseded_by: [],
  },
  associations: [{ target_type: 'document', target: 'docs/setup.md', strength: 0.4, type: 'causal', updated_at: '2026-01-02' }],
  knowledge_anchors: [
    {
      path: 'package.json',
      relevance: 'primary',
      snippet: '"packageManager": "pnpm@9"',
      snippet_extracted_at: '2026-01-01',
    },
  ],
  dual_coding: { example: 'pnpm add zod', analogy: 'Like using the house key, not a spare.' },
  provenance: { origin: 'user:alice', chain: ['hub:acme'], signature: 'ed25519:abc', license: 'mit' },
  feedback_signals: { positive: 3, negative: 1, neutral: 0 },
  entities: [{ name: 'pnpm', type: 'tool', uri: 'https://pnpm.io/' }],
  temporal: {
    learned_at: '2026-01-01',
    valid_from: '2026-01-01',
    valid_until: '2027-01-01',
    ingested_at: '2026-01-01',
  },
  usage: { injections: 10, hits: 7, misses: 3, last_hit_at: '2026-01-05' },
  episodic: { emotional_weight: 7, confidence: 9, trigger_context: 'CI failed', journal_ref: 'journal/2026-01-01.md' },
  exchange: { fitness_score: 0.8, environmental_diversity: 3, adoption_count: 12, contradiction_rate: 0.05 },
  structured_data: { manager: 'pnpm', minVersion: 9 },
  insight: {
    operation: 'consolidate',
    synthesized_at: '2026-01-03T00:00:00Z',
    grounding: 'verified',
    source_episode_ids: ['ep-1'],
    serendipity: { unexpectedness: 0.2, relevance: 0.9, score: 0.4 },
    fate: 'promoted',
    fate_ref: 'ENG-KQ7M-2026-0101-001',
    fate_at: '2026-01-04',
    surfaced_count: 2,
  },
  polarity: 'dont',
  content_hash: 'sha256:0123abcd',
  commitment: 'locked',
  locked_at: '2026-01-04',
  locked_reason: 'Team decision',
  reference_count: 2,
  sources: [
    { scope: 'project:github.com/acme/svc', session_id: 'sess-1', stored_at: '2026-01-01T09:00:00Z' },
    { scope: 'user:alice', session_id: null, stored_at: '2026-01-02T09:00:00+01:00' },
  ],
  sources_omitted: 0,
  recurrence_count: 1,
  engram_version: 3,
  previous_version_ref: { event_id: 'ev-42', changed_at: '2026-01-03' },
  episode_ids: ['ep-1', 'ep-2'],
  summary: 'pnpm, never npm',
  pinned: true,
};

describe('whole documents', () => {
  it('a fully populated engram validates', () => {
    expect(Object.keys(FULL).sort()).toEqual(Object.keys(engramJsonSchema.properties).sort());
    expect(validateEngram(FULL)).toEqual({ ok: true, engram: FULL });
  });

  it('unknown top-level properties are accepted and kept', () => {
    const doc = {
      ...FULL,
      x_future: { nested: { deep: [1, { a: null }] } },
      later_list: [{ b: 'c' }, 2, 'three'],
      flag: false,
    };
    const before = structuredClone(doc);
    const result = validateEngram(doc);
    expect(result.ok).toBe(true);
    expect(result.ok && result.engram).toEqual(before);
  });

  it('validateEngram does not mutate its input', () => {
    const doc = deepFreeze({ ...MINIMAL, activation: { retrieval_strength: 2 }, relations: {} });
    const before = structuredClone(doc);
    expect(validateEngram(doc).ok).toBe(false);
    expect(validateEngram({ ...doc, activation: undefined }).ok).toBe(true);
    expect(doc).toEqual(before);
    expect(doc).not.toHaveProperty('version');
  });
});

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

describe('applyEngramDefaults', () => {
  it('fills every top-level default of a minimal engram', () => {
    expect(applyEngramDefaults({ ...MINIMAL } as EngramDoc)).toEqual({
      ...MINIMAL,
      version: 2,
      consolidated: false,
      visibility: 'private',
      derivation_count: 1,
      pack: null,
      abstract: null,
      derived_from: null,
      tags: [],
      activation: { retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: '' },
      relations: { broader: [], narrower: [], related: [], conflicts: [], supersedes: [], superseded_by: [] },
      associations: [],
      knowledge_anchors: [],
      feedback_signals: { positive: 0, negative: 0, neutral: 0 },
      usage: { injections: 0, hits: 0, misses: 0 },
      polarity: null,
      reference_count: 1,
      sources: [],
      recurrence_count: 0,
      engram_version: 1,
      episode_ids: [],
      pinned: false,
    });
  });

  it('fills defaults inside nested objects that are present, and only there', () => {
    const out = applyEngramDefaults({
      ...MINIMAL,
      relations: { broader: ['ENG-2'] },
      activation: { retrieval_strength: 0.2 },
      knowledge_anchors: [{ path: 'a.ts' }, { path: 'b.ts', relevance: 'primary' }],
      provenance: { origin: 'user' },
      feedback_signals: { positive: 4 },
      usage: { hits: 2 },
      episodic: {},
      exchange: { fitness_score: 0.5 },
      insight: { operation: 'dream', synthesized_at: '2026-01-01', serendipity: { score: 0.1 } },
      sources: [{ scope: 'global', stored_at: '2026-01-01T00:00:00Z' }],
    } as EngramDoc);
    expect(out.relations).toEqual({
      broader: ['ENG-2'],
      narrower: [],
      related: [],
      conflicts: [],
      supersedes: [],
      superseded_by: [],
    });
    expect(out.activation).toEqual({ retrieval_strength: 0.2, storage_strength: 1, frequency: 0, last_accessed: '' });
    expect(out.knowledge_anchors).toEqual([
      { path: 'a.ts', relevance: 'supporting' },
      { path: 'b.ts', relevance: 'primary' },
    ]);
    expect(out.provenance).toEqual({ origin: 'user', chain: [], signature: null, license: 'cc-by-sa-4.0' });
    expect(out.feedback_signals).toEqual({ positive: 4, negative: 0, neutral: 0 });
    expect(out.usage).toEqual({ hits: 2, injections: 0, misses: 0 });
    expect(out.episodic).toEqual({ emotional_weight: 5, confidence: 5 });
    expect(out.exchange).toEqual({
      fitness_score: 0.5,
      environmental_diversity: 0,
      adoption_count: 0,
      contradiction_rate: 0,
    });
    expect(out.insight).toEqual({
      operation: 'dream',
      synthesized_at: '2026-01-01',
      serendipity: { score: 0.1 },
      grounding: 'unverified',
      source_episode_ids: [],
      fate: 'surfaced',
      surfaced_count: 0,
    });
    expect(out.sources).toEqual([{ scope: 'global', stored_at: '2026-01-01T00:00:00Z', session_id: null }]);
    const absent = ['dual_coding', 'temporal', 'entities', 'structured_data', 'previous_version_ref', 'summary'];
    for (const key of absent) expect(out).not.toHaveProperty(key);
  });

  it('never overwrites existing values, null included', () => {
    expect(applyEngramDefaults(FULL as EngramDoc)).toEqual(FULL);
    const kept = { pack: 'core', polarity: null, tags: ['a'], pinned: true };
    const out = applyEngramDefaults({ ...MINIMAL, ...kept } as EngramDoc);
    expect(out).toMatchObject({ ...kept, version: 2 });
  });

  it('keeps unknown keys in place and in order, and the result validates', () => {
    const input = {
      x_first: 1,
      ...MINIMAL,
      x_nested: { a: [1, { b: 2 }] },
      structured_data: { free: 'form' },
    } as EngramDoc;
    const out = applyEngramDefaults(input);
    expect(Object.keys(out).slice(0, Object.keys(input).length)).toEqual(Object.keys(input));
    expect(out.x_nested).toEqual({ a: [1, { b: 2 }] });
    expect(out.structured_data).toEqual({ free: 'form' });
    expect(validateEngram(out).ok).toBe(true);
  });

  it('does not mutate or share its input, nor share defaults between results', () => {
    const input = deepFreeze({ ...MINIMAL, relations: { related: ['ENG-2'] }, episodic: {} } as EngramDoc);
    const before = structuredClone(input);
    const out = applyEngramDefaults(input);
    expect(input).toEqual(before);
    expect(out).not.toBe(input);
    expect(out.relations).not.toBe(input.relations);
    out.tags!.push('changed');
    expect(applyEngramDefaults(input).tags).toEqual([]);
  });
});

describe('engramJsonSchema', () => {
  it('is plain JSON in draft 2020-12', () => {
    expect(JSON.parse(JSON.stringify(engramJsonSchema))).toEqual(engramJsonSchema);
    expect(engramJsonSchema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(engramJsonSchema.$id).toBe('urn:svc:schema:engram:2');
    expect(engramJsonSchema.title).toBe('Engram');
    expect(engramJsonSchema.additionalProperties).toBe(true);
    expect(engramJsonSchema.required).toEqual(['id', 'status', 'type', 'scope', 'statement']);
  });

  it('describes every field and uses the exported enums and id pattern', () => {
    for (const [key, property] of Object.entries(engramJsonSchema.properties)) {
      expect(property.description, key).toMatch(/\S/);
    }
    expect(engramJsonSchema.properties.status.enum).toEqual(ENGRAM_STATUSES);
    expect(engramJsonSchema.properties.id.pattern).toBe(ENGRAM_ID_PATTERN);
    expect(ENGRAM_ID_PATTERN).toBe('^(ENG|ABS|META)-[A-Za-z0-9-]+$');
  });
});
