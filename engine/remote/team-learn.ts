import { SvcError } from '../errors.js';
import type { EngramStore, SearchIndex } from '../backend.js';
import type { TeamSource } from '../ops/recall.js';
import type { UnscopedRoute } from '../ops/suggest-scope.js';
import type { RemoteConfig } from './hub-client.js';
import type { HubLearn } from './team-writes.js';

// Where a learn goes, decided once for `svc learn` and the svc_learn tool: a learn without a
// scope takes the scope of the closest engrams when they agree (a team scope on the hub only when
// the project opted in with route_to_team, else it is only suggested); a learn whose scope is the
// team's goes to the hub through the outbox, unless it holds a secret (the local learn then
// demotes it, with a warning). The heavy parts load only when a learn needs them.

export interface LearnRoute {
  scope?: string;
  routed?: UnscopedRoute['routed'];
  suggested?: UnscopedRoute['suggested'];
}

/** The scope of a learn: the one given, else routed from the closest engrams (or none: the default). */
export async function routeLearn(
  backend: EngramStore & SearchIndex,
  statement: string,
  opts: { scope?: string; domain?: string; team?: TeamSource; storeRoot?: string; remote?: RemoteConfig | null; routeToTeam: boolean },
): Promise<LearnRoute> {
  if (opts.scope !== undefined) return { scope: opts.scope };
  const { routeUnscoped } = await import('../ops/suggest-scope.js');
  const { storeRoot, remote } = opts;
  const leaves = remote && storeRoot ? async (s: string) => (await import('./team-writes.js')).goesToHub(storeRoot, remote, s) : undefined;
  const r = await routeUnscoped(backend, statement, {
    ...(opts.domain ? { domain: opts.domain } : {}),
    ...(opts.team ? { team: opts.team } : {}),
    ...(leaves ? { leaves, routeToTeam: opts.routeToTeam } : {}),
  });
  return { ...(r.routed ? { scope: r.routed.scope, routed: r.routed } : {}), ...(r.suggested ? { suggested: r.suggested } : {}) };
}

/**
 * Sends a learn to the hub when its scope is the team's (null: it stays on this machine). A
 * refusal is an error; a hub that does not answer leaves it queued (outcome `queued`).
 */
export async function learnOnHubIfTeam(
  storeRoot: string | undefined,
  remote: RemoteConfig | null | undefined,
  body: { statement: string; scope?: string; rationale?: string } & Record<string, unknown>,
  startedAt = Date.now(),
): Promise<(HubLearn & { outcome: 'delivered' | 'queued' }) | null> {
  if (!remote || !storeRoot || !body.scope) return null;
  const [{ goesToHub, learnOnHub }, { secretsIn }] = await Promise.all([import('./team-writes.js'), import('../model/secret-guard.js')]);
  if (!(await goesToHub(storeRoot, remote, body.scope))) return null;
  if (secretsIn({ statement: body.statement, ...(body.rationale ? { rationale: body.rationale } : {}) }).length > 0) return null;
  const sent = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
  const r = await learnOnHub(storeRoot, remote, sent, startedAt);
  if (r.outcome === 'refused') throw new SvcError('invalid', `not learned: ${r.error}`);
  return r as HubLearn & { outcome: 'delivered' | 'queued' };
}
