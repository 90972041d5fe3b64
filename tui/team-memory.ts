import type { Output } from '../engine/cli/cli-kit.js';
import { loadProjectConfig, type ProjectConfig } from '../engine/config/project-config.js';
import type { RecallSources, TeamSource } from '../engine/ops/recall.js';
import { remoteOf } from '../engine/remote/hub-client.js';

// The hub in the commands of a project that names one (.svc.yaml remote_url, .svc.local.yaml
// remote_token): recall, inject and session start also ask it (within TEAM_RECALL_BUDGET_MS, one
// warning line when it does not answer) and find this machine's team writes still queued for it;
// what waits in the outbox is sent by svc sync, svc session start and any call the hub answers.
// Nothing fails because the hub is away.

/** The hub as a recall source for commands run in `cwd`, or undefined when none is configured. */
export async function teamSource(storeRoot: string, cwd = process.cwd(), project?: ProjectConfig | null): Promise<TeamSource | undefined> {
  const remote = remoteOf(project === undefined ? await loadProjectConfig(cwd) : project);
  if (!remote) return undefined;
  const [{ hubSource }, { REMOTE_WRITE_TIMEOUT_MS }] = await Promise.all([
    import('../engine/remote/team-recall.js'),
    import('../engine/remote/team-outbox.js'),
  ]);
  // A command may take a write's time to send what waits once the hub answered.
  return hubSource(storeRoot, remote, { sendMs: REMOTE_WRITE_TIMEOUT_MS });
}

/** Warns when the hub was asked and did not answer. */
export function warnSources(sources: RecallSources | undefined, out: Output): void {
  const hub = sources?.hub;
  if (hub && hub.state !== 'ok' && hub.state !== 'cached')
    out.warn(`${hub.detail ?? `the hub at ${hub.url} did not answer`}: local results only`);
}

/**
 * Sends what waits in the outbox for the project's hub. A write still waiting or refused is a
 * warning; what was sent is the command's result (`line`), not a warning.
 */
export async function sendQueued(
  storeRoot: string,
  project: ProjectConfig | null,
  out: Output,
): Promise<{ report: Record<string, unknown>; line: string } | undefined> {
  const remote = remoteOf(project);
  if (!remote) return undefined;
  const { sendPending, flushLine } = await import('../engine/remote/team-writes.js');
  const report = await sendPending(storeRoot, remote);
  if (!report) return undefined;
  const line = flushLine(report);
  if (report.pending || report.refused) out.warn(line);
  return { report: { ...report }, line };
}

/** The scopes the project's hub lets this person write (its cached /me answer), or undefined without a hub or an answer. */
export async function hubWritableScopes(storeRoot: string, project: ProjectConfig | null): Promise<string[] | undefined> {
  const remote = remoteOf(project);
  if (!remote) return undefined;
  const { hubScopes } = await import('../engine/remote/team-writes.js');
  return (await hubScopes(storeRoot, remote))?.writable;
}
