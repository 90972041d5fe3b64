// Fields that describe one store's use of an engram, not its content: a pack never carries
// them (export drops them) and a reinstall keeps the store's own.
export const STORE_LOCAL = [
  'activation',
  'feedback_signals',
  'usage',
  'pinned',
  'sources',
  'reference_count',
  'recurrence_count',
  'episode_ids',
  'associations',
  'previous_version_ref',
  'retirement',
] as const;
