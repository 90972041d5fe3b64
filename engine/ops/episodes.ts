import type { EngramStore, RecordLog, SearchIndex } from '../backend.js';
import type { Episode, TimelineFilter } from '../model/records.js';
import { invalid, notFound } from '../errors.js';
import type { OpContext } from './context.js';
import { learn, type LearnInput, type LearnOptions, type LearnResult } from './learn.js';

export const DEFAULT_TIMELINE_LIMIT = 20;
const MAX_SUMMARY = 4000;

export interface CaptureInput {
  summary: string;
  agent?: string;
  scope?: string;
  channel?: string;
  session?: string;
  engram_ids?: string[];
}

/** Records an episode: what happened, when, by which agent. Append-only; nothing is lost. */
export async function capture(backend: RecordLog, input: CaptureInput, ctx: OpContext): Promise<Episode> {
  const summary = input.summary.trim();
  if (summary === '') throw invalid('summary: must not be empty');
  if (summary.length > MAX_SUMMARY) throw invalid(`summary: must be at most ${MAX_SUMMARY} characters (got ${summary.length})`);
  const now = ctx.now();
  const episode: Episode = {
    id: backend.recordId('EP', now),
    at: now.toISOString(),
    summary,
    agent: input.agent?.trim() || 'cli',
    ...(input.scope ? { scope: input.scope } : {}),
    ...(input.channel ? { channel: input.channel } : {}),
    ...((input.session ?? ctx.sessionId) ? { session: (input.session ?? ctx.sessionId)! } : {}),
    ...(input.engram_ids?.length ? { engram_ids: input.engram_ids } : {}),
  };
  await backend.appendEpisodes([episode]);
  return episode;
}

/** Episodes newest first (best match first with a query), filtered by time, agent, channel, session. */
export async function timeline(backend: RecordLog, filter: TimelineFilter): Promise<Episode[]> {
  for (const key of ['from', 'to'] as const) {
    const v = filter[key];
    if (v !== undefined && Number.isNaN(Date.parse(v))) throw invalid(`${key}: must be a date or ISO 8601 timestamp (got "${v}")`);
  }
  const norm = (v: string | undefined) => (v === undefined ? undefined : new Date(Date.parse(v)).toISOString());
  return backend.queryEpisodes({ ...filter, from: norm(filter.from), to: norm(filter.to), limit: filter.limit ?? DEFAULT_TIMELINE_LIMIT });
}

/** Turns an episode into an engram (its summary, or a statement distilled from it). */
export async function episodeToEngram(
  backend: EngramStore & SearchIndex & RecordLog,
  episodeId: string,
  input: Partial<LearnInput>,
  ctx: OpContext,
  opts: LearnOptions = {},
): Promise<LearnResult> {
  const episode = await backend.getEpisode(episodeId);
  if (!episode) throw notFound(`no episode ${episodeId}`);
  return learn(
    backend,
    {
      ...input,
      statement: input.statement ?? episode.summary,
      source: input.source ?? `episode ${episode.id} (${episode.agent}, ${episode.at})`,
      episode_ids: [episode.id],
    },
    { ...ctx, sessionId: ctx.sessionId ?? episode.session ?? null },
    opts,
  );
}
