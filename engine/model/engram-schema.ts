// The engram data model (spec contract, schema version 2) as JSON Schema draft 2020-12. The
// schema is the one source of truth: validate-engram.ts validates against it and fills defaults
// from its `default` keywords. Its enums and the matching TypeScript types live in
// engram-types.ts.

import {
  ENGRAM_STATUSES,
  ENGRAM_TYPES,
  VISIBILITIES,
  MEMORY_CLASSES,
  COGNITIVE_LEVELS,
  ASSOCIATION_TARGET_TYPES,
  ASSOCIATION_TYPES,
  ANCHOR_RELEVANCES,
  ENTITY_TYPES,
  INSIGHT_OPERATIONS,
  INSIGHT_GROUNDINGS,
  INSIGHT_FATES,
  POLARITIES,
  COMMITMENTS,
  RELATION_KINDS,
} from './engram-types.js';

export const ENGRAM_ID_PATTERN = '^(ENG|ABS|META)-[A-Za-z0-9-]+$';
const ABSTRACTION_ID_PATTERN = '^ABS-[A-Za-z0-9-]+$';
const NO_WHITESPACE_PATTERN = '^\\S+$';
const NOT_BLANK_PATTERN = '\\S';
// Empty (never accessed), a day, or a timestamp with optional seconds, fraction and zone.
const LAST_ACCESSED_PATTERN = '^$|^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?)?$';

/** What each pattern of the schema means, so error messages can say it in words. */
export const PATTERN_HINTS: Readonly<Record<string, string>> = {
  [ENGRAM_ID_PATTERN]: 'must be an engram id like ENG-2026-0101-001',
  [ABSTRACTION_ID_PATTERN]: 'must be an abstraction id like ABS-2026-0101-001',
  [NO_WHITESPACE_PATTERN]: 'must not be empty or contain whitespace',
  [NOT_BLANK_PATTERN]: 'must not be blank',
  [LAST_ACCESSED_PATTERN]: 'must be empty, a date YYYY-MM-DD or an ISO 8601 timestamp',
};

// Field helpers; `extra` adds or overrides keywords (default, pattern, minimum, ...).
const str = <X extends object = object>(description: string, extra = {} as X) => ({
  type: 'string',
  description,
  ...extra,
});
const int = <X extends object = object>(description: string, extra = {} as X) => ({
  type: 'integer',
  minimum: 0,
  description,
  ...extra,
});
const unit = <X extends object = object>(description: string, extra = {} as X) => ({
  type: 'number',
  minimum: 0,
  maximum: 1,
  description,
  ...extra,
});
const oneOf = <X extends object = object>(values: readonly string[], description: string, extra = {} as X) => ({
  type: 'string',
  enum: values,
  description,
  ...extra,
});
const strings = <X extends object = object>(description: string, extra = {} as X) => ({
  type: 'array',
  items: { type: 'string' },
  description,
  ...extra,
});
const idList = (description: string) => ({
  type: 'array',
  items: { type: 'string', pattern: ENGRAM_ID_PATTERN },
  default: [],
  description,
});

export const engramJsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'urn:svc:schema:engram:2',
  title: 'Engram',
  description: 'One unit of remembered knowledge.',
  type: 'object',
  required: ['id', 'status', 'type', 'scope', 'statement'],
  // Newer writers may add fields; older readers must keep them intact.
  additionalProperties: true,
  properties: {
    id: str('Unique id: ENG- (engram), ABS- (abstraction) or META-.', { pattern: ENGRAM_ID_PATTERN }),
    version: int('Schema version of this document.', { minimum: 1, default: 2 }),
    status: oneOf(ENGRAM_STATUSES, 'Lifecycle state.'),
    consolidated: { type: 'boolean', default: false, description: 'Merged into long-term memory.' },
    type: oneOf(ENGRAM_TYPES, 'Kind of knowledge.'),
    scope: str('Namespace, `kind:path` or a bare kind.', { minLength: 1, pattern: NO_WHITESPACE_PATTERN }),
    visibility: oneOf(VISIBILITIES, 'Who may see it.', { default: 'private' }),
    statement: str('The knowledge itself.', { minLength: 1, pattern: NOT_BLANK_PATTERN }),
    rationale: str('Why it holds.'),
    contraindications: strings('When it does not apply.'),
    source: str('Where it came from.'),
    source_patterns: strings('Patterns it was derived from.'),
    derivation_count: int('How many observations support it.', { default: 1 }),
    pack: { type: ['string', 'null'], default: null, description: 'Pack it was installed from.' },
    abstract: {
      type: ['string', 'null'],
      pattern: ABSTRACTION_ID_PATTERN,
      default: null,
      description: 'Id of the ABS- abstraction it belongs to.',
    },
    derived_from: {
      type: ['string', 'null'],
      pattern: ENGRAM_ID_PATTERN,
      default: null,
      description: 'Id of the parent engram.',
    },
    knowledge_type: {
      type: 'object',
      description: 'Memory class and Bloom level.',
      required: ['memory_class', 'cognitive_level'],
      additionalProperties: false,
      properties: {
        memory_class: oneOf(MEMORY_CLASSES, 'Memory system it belongs to.'),
        cognitive_level: oneOf(COGNITIVE_LEVELS, 'Bloom taxonomy level.'),
      },
    },
    domain: str('Dotted subject path, e.g. `lang.typescript`.', { minLength: 1 }),
    tags: strings('Free-form labels.', { default: [] }),
    activation: {
      type: 'object',
      description: 'Recall strength (spacing model).',
      required: ['retrieval_strength', 'storage_strength', 'frequency', 'last_accessed'],
      additionalProperties: false,
      default: { retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: '' },
      properties: {
        retrieval_strength: unit('How easily it is recalled now.', { default: 0.7 }),
        storage_strength: unit('How well it is learned.', { default: 1 }),
        frequency: int('Times recalled.', { default: 0 }),
        last_accessed: str('Last recall: empty, a date or a timestamp.', {
          pattern: LAST_ACCESSED_PATTERN,
          default: '',
        }),
      },
    },
    relations: {
      type: 'object',
      description: 'Typed links to other engrams.',
      additionalProperties: false,
      default: Object.fromEntries(RELATION_KINDS.map((kind) => [kind, []])),
      properties: {
        broader: idList('More general engrams.'),
        narrower: idList('More specific engrams.'),
        related: idList('Related engrams.'),
        conflicts: idList('Engrams it contradicts.'),
        supersedes: idList('Engrams it replaces.'),
        superseded_by: idList('Engrams that replace it.'),
      },
    },
    associations: {
      type: 'array',
      description: 'Weighted links to engrams or documents.',
      default: [],
      items: {
        type: 'object',
        required: ['target_type', 'target', 'strength', 'type'],
        additionalProperties: false,
        properties: {
          target_type: oneOf(ASSOCIATION_TARGET_TYPES, 'What the target is.'),
          target: str('Engram id or document path.', { minLength: 1 }),
          // Capped below 1 so no link ever becomes certain.
          strength: unit('Link weight.', { maximum: 0.95 }),
          type: oneOf(ASSOCIATION_TYPES, 'How the two are linked.'),
          updated_at: str('When the strength last changed.'),
        },
      },
    },
    knowledge_anchors: {
      type: 'array',
      description: 'Files that ground it.',
      default: [],
      items: {
        type: 'object',
        required: ['path'],
        additionalProperties: false,
        properties: {
          path: str('File path.', { minLength: 1 }),
          relevance: oneOf(ANCHOR_RELEVANCES, 'How the file relates.', { default: 'supporting' }),
          snippet: str('Excerpt of the file.', { maxLength: 200 }),
          snippet_extracted_at: str('When the excerpt was taken.'),
        },
      },
    },
    dual_coding: {
      type: 'object',
      description: 'Concrete forms of the statement; at least one of example or analogy.',
      additionalProperties: false,
      // With no other keys allowed, one property means example or analogy is there.
      minProperties: 1,
      properties: {
        example: str('A concrete example.'),
        analogy: str('An analogy.'),
      },
    },
    provenance: {
      type: 'object',
      description: 'Origin and chain of custody.',
      required: ['origin'],
      additionalProperties: false,
      properties: {
        origin: str('Who or what first produced it.'),
        chain: strings('Hands it passed through.', { default: [] }),
        signature: { type: ['string', 'null'], default: null, description: 'Signature over the content.' },
        license: str('Content license.', { default: 'cc-by-sa-4.0' }),
      },
    },
    feedback_signals: {
      type: 'object',
      description: 'Feedback counts.',
      additionalProperties: false,
      default: { positive: 0, negative: 0, neutral: 0 },
      properties: {
        positive: int('Helpful votes.', { default: 0 }),
        negative: int('Unhelpful votes.', { default: 0 }),
        neutral: int('Neutral votes.', { default: 0 }),
      },
    },
    entities: {
      type: 'array',
      description: 'Named things it mentions.',
      items: {
        type: 'object',
        required: ['name', 'type'],
        additionalProperties: false,
        properties: {
          name: str('Entity name.', { minLength: 1 }),
          type: oneOf(ENTITY_TYPES, 'Entity kind.'),
          uri: str('Canonical URI.', { format: 'uri' }),
        },
      },
    },
    temporal: {
      type: 'object',
      description: 'When it was learned and holds.',
      required: ['learned_at'],
      additionalProperties: false,
      properties: {
        learned_at: str('When it was learned.'),
        valid_from: str('Start of validity.'),
        valid_until: str('End of validity.'),
        ingested_at: str('When it entered the store.'),
      },
    },
    usage: {
      type: 'object',
      description: 'Injection and hit counts.',
      additionalProperties: false,
      default: { injections: 0, hits: 0, misses: 0 },
      properties: {
        injections: int('Times injected into a context.', { default: 0 }),
        hits: int('Injections that were used.', { default: 0 }),
        misses: int('Injections that were not used.', { default: 0 }),
        last_hit_at: str('When it was last used.'),
      },
    },
    episodic: {
      type: 'object',
      description: 'How it was experienced.',
      additionalProperties: false,
      properties: {
        emotional_weight: int('Salience, 1 to 10.', { minimum: 1, maximum: 10, default: 5 }),
        confidence: int('Certainty, 1 to 10.', { minimum: 1, maximum: 10, default: 5 }),
        trigger_context: str('What brought it up.'),
        journal_ref: str('Journal entry it came from.'),
      },
    },
    exchange: {
      type: 'object',
      description: 'Fitness when shared between stores.',
      additionalProperties: false,
      properties: {
        fitness_score: unit('Overall fitness.'),
        environmental_diversity: int('Distinct environments it was used in.', { default: 0 }),
        adoption_count: int('Stores that adopted it.', { default: 0 }),
        contradiction_rate: unit('Share of stores that contradict it.', { default: 0 }),
      },
    },
    structured_data: {
      type: 'object',
      description: 'Arbitrary key-value data.',
      additionalProperties: true,
    },
    insight: {
      type: 'object',
      description: 'How a synthesized insight came about and what became of it.',
      required: ['operation', 'synthesized_at'],
      additionalProperties: false,
      properties: {
        operation: oneOf(INSIGHT_OPERATIONS, 'Synthesis that produced it.'),
        synthesized_at: str('When it was synthesized.'),
        grounding: oneOf(INSIGHT_GROUNDINGS, 'How well it is backed.', { default: 'unverified' }),
        source_episode_ids: strings('Episodes it was drawn from.', { default: [] }),
        serendipity: {
          type: 'object',
          description: 'How surprising and useful it is.',
          required: ['unexpectedness', 'relevance', 'score'],
          additionalProperties: false,
          properties: {
            unexpectedness: unit('How surprising.'),
            relevance: unit('How useful.'),
            score: unit('Combined score.'),
          },
        },
        fate: oneOf(INSIGHT_FATES, 'What became of it.', { default: 'surfaced' }),
        fate_ref: str('What it became (task, engram, ...).'),
        fate_at: str('When its fate was decided.'),
        surfaced_count: int('Times shown to the user.', { default: 0 }),
      },
    },
    polarity: {
      type: ['string', 'null'],
      enum: [...POLARITIES, null],
      default: null,
      description: 'Whether it says to do or not to do something.',
    },
    content_hash: str('Hash of the normalized statement.'),
    commitment: oneOf(COMMITMENTS, 'How settled the decision is.'),
    locked_at: str('When it was locked.'),
    locked_reason: str('Why it was locked.'),
    reference_count: int('Times it was stored from a source.', { default: 1 }),
    sources: {
      type: 'array',
      description: 'Each time it was stored.',
      default: [],
      items: {
        type: 'object',
        required: ['scope', 'stored_at'],
        additionalProperties: false,
        properties: {
          scope: str('Scope it was stored in.'),
          session_id: { type: ['string', 'null'], default: null, description: 'Session that stored it.' },
          stored_at: str('When it was stored.', { format: 'date-time' }),
        },
      },
    },
    sources_omitted: int('Writes left out of sources, which keeps the first and the newest.'),
    recurrence_count: int('Times it came up again.', { default: 0 }),
    engram_version: int('Revision of this engram.', { minimum: 1, default: 1 }),
    previous_version_ref: {
      type: 'object',
      description: 'The revision it replaced.',
      required: ['event_id', 'changed_at'],
      additionalProperties: false,
      properties: {
        event_id: str('Event that recorded the change.'),
        changed_at: str('When it changed.'),
      },
    },
    episode_ids: strings('Episodes it appeared in.', { default: [] }),
    summary: str('One-line summary.', { maxLength: 80 }),
    pinned: { type: 'boolean', default: false, description: 'Always injected.' },
  },
};
