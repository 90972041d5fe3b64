// The engram data model's vocabularies (the enum values, as constants) and the TypeScript types
// of an engram. Kept apart from the JSON Schema (engram-schema.ts), which is built from these
// constants, so code that only needs a type or an enum does not read the schema.

export const ENGRAM_STATUSES = ['active', 'dormant', 'retired', 'candidate'] as const;
export const ENGRAM_TYPES = ['behavioral', 'terminological', 'procedural', 'architectural'] as const;
export const VISIBILITIES = ['private', 'public', 'template'] as const;
export const MEMORY_CLASSES = ['semantic', 'episodic', 'procedural', 'metacognitive'] as const;
export const COGNITIVE_LEVELS = ['remember', 'understand', 'apply', 'analyze', 'evaluate', 'create'] as const;
export const ASSOCIATION_TARGET_TYPES = ['engram', 'document'] as const;
export const ASSOCIATION_TYPES = ['semantic', 'temporal', 'causal', 'co_accessed'] as const;
export const ANCHOR_RELEVANCES = ['primary', 'supporting', 'example'] as const;
export const ENTITY_TYPES = [
  'person',
  'organization',
  'technology',
  'concept',
  'project',
  'tool',
  'place',
  'event',
  'standard',
  'other',
] as const;
export const INSIGHT_OPERATIONS = ['distill', 'consolidate', 'dream', 'connect', 'emerge', 'drift'] as const;
export const INSIGHT_GROUNDINGS = ['verified', 'unverified', 'ungrounded', 'speculative'] as const;
export const INSIGHT_FATES = ['surfaced', 'promoted', 'cited', 'tasked', 'dismissed', 'expired'] as const;
export const POLARITIES = ['do', 'dont'] as const;
export const COMMITMENTS = ['exploring', 'leaning', 'decided', 'locked'] as const;
export const RELATION_KINDS = ['broader', 'narrower', 'related', 'conflicts', 'supersedes', 'superseded_by'] as const;

export type EngramStatus = (typeof ENGRAM_STATUSES)[number];
export type EngramType = (typeof ENGRAM_TYPES)[number];
export type Visibility = (typeof VISIBILITIES)[number];
export type MemoryClass = (typeof MEMORY_CLASSES)[number];
export type CognitiveLevel = (typeof COGNITIVE_LEVELS)[number];
export type AssociationTargetType = (typeof ASSOCIATION_TARGET_TYPES)[number];
export type AssociationType = (typeof ASSOCIATION_TYPES)[number];
export type AnchorRelevance = (typeof ANCHOR_RELEVANCES)[number];
export type EntityType = (typeof ENTITY_TYPES)[number];
export type InsightOperation = (typeof INSIGHT_OPERATIONS)[number];
export type InsightGrounding = (typeof INSIGHT_GROUNDINGS)[number];
export type InsightFate = (typeof INSIGHT_FATES)[number];
export type Polarity = (typeof POLARITIES)[number];
export type Commitment = (typeof COMMITMENTS)[number];
export type RelationKind = (typeof RELATION_KINDS)[number];

export interface KnowledgeType {
  memory_class: MemoryClass;
  cognitive_level: CognitiveLevel;
}

export interface Activation {
  retrieval_strength: number;
  storage_strength: number;
  frequency: number;
  last_accessed: string;
}

export type Relations = Partial<Record<RelationKind, string[]>>;

export interface Association {
  target_type: AssociationTargetType;
  target: string;
  strength: number;
  type: AssociationType;
  updated_at?: string;
}

export interface KnowledgeAnchor {
  path: string;
  relevance?: AnchorRelevance;
  snippet?: string;
  snippet_extracted_at?: string;
}

export type DualCoding = { example: string; analogy?: string } | { example?: string; analogy: string };

export interface Provenance {
  origin: string;
  chain?: string[];
  signature?: string | null;
  license?: string;
}

export interface FeedbackSignals {
  positive?: number;
  negative?: number;
  neutral?: number;
}

export interface Entity {
  name: string;
  type: EntityType;
  uri?: string;
}

export interface Temporal {
  learned_at: string;
  valid_from?: string;
  valid_until?: string;
  ingested_at?: string;
}

export interface Usage {
  injections?: number;
  hits?: number;
  misses?: number;
  last_hit_at?: string;
}

export interface Episodic {
  emotional_weight?: number;
  confidence?: number;
  trigger_context?: string;
  journal_ref?: string;
}

export interface Exchange {
  fitness_score?: number;
  environmental_diversity?: number;
  adoption_count?: number;
  contradiction_rate?: number;
}

export interface Serendipity {
  unexpectedness: number;
  relevance: number;
  score: number;
}

export interface Insight {
  operation: InsightOperation;
  synthesized_at: string;
  grounding?: InsightGrounding;
  source_episode_ids?: string[];
  serendipity?: Serendipity;
  fate?: InsightFate;
  fate_ref?: string;
  fate_at?: string;
  surfaced_count?: number;
}

export interface EngramSource {
  scope: string;
  session_id?: string | null;
  stored_at: string;
}

export interface PreviousVersionRef {
  event_id: string;
  changed_at: string;
}

export interface Engram {
  id: string;
  version?: number;
  status: EngramStatus;
  consolidated?: boolean;
  type: EngramType;
  scope: string;
  visibility?: Visibility;
  statement: string;
  rationale?: string;
  contraindications?: string[];
  source?: string;
  source_patterns?: string[];
  derivation_count?: number;
  pack?: string | null;
  abstract?: string | null;
  derived_from?: string | null;
  knowledge_type?: KnowledgeType;
  domain?: string;
  tags?: string[];
  activation?: Activation;
  relations?: Relations;
  associations?: Association[];
  knowledge_anchors?: KnowledgeAnchor[];
  dual_coding?: DualCoding;
  provenance?: Provenance;
  feedback_signals?: FeedbackSignals;
  entities?: Entity[];
  temporal?: Temporal;
  usage?: Usage;
  episodic?: Episodic;
  exchange?: Exchange;
  structured_data?: Record<string, unknown>;
  insight?: Insight;
  polarity?: Polarity | null;
  content_hash?: string;
  commitment?: Commitment;
  locked_at?: string;
  locked_reason?: string;
  reference_count?: number;
  sources?: EngramSource[];
  sources_omitted?: number;
  recurrence_count?: number;
  engram_version?: number;
  previous_version_ref?: PreviousVersionRef;
  episode_ids?: string[];
  summary?: string;
  pinned?: boolean;
}

/** An engram as read from a document: unknown keys from newer writers are kept. */
export type EngramDoc = Engram & Record<string, unknown>;
