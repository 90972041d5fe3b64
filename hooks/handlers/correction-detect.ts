import { detectCorrection, type CorrectionMatch } from './correction.js';
import { contextOutput, eventName, hostOf, sessionKey, storeReady, str, withStore, type HookEvent } from './io.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { updateState } from './session-state.js';
import { oneLine } from '../../engine/text.js';

// hook-correction-detect — Claude Code `UserPromptSubmit`.
//
// Counts the prompt in the session state and, when the prompt reads as a correction or a stated
// convention (see correction.ts), records it there and answers with additionalContext asking the
// agent to record the lesson with svc_learn, naming up to three existing engrams the correction
// may replace (supersedes). hook-learn-check later makes sure it was recorded. Ordinary prompts
// print nothing. Never blocks a prompt.

export async function hookCorrectionDetect(e: HookEvent): Promise<string | undefined> {
  if (eventName(e) && eventName(e) !== 'UserPromptSubmit') return undefined;
  const note = await noteCorrection(e);
  return note ? contextOutput('UserPromptSubmit', note) : undefined;
}

/** Records the prompt (and a correction in it) in the session state; the agent's instruction, or undefined. */
export async function noteCorrection(e: HookEvent): Promise<string | undefined> {
  const prompt = str(e, 'prompt');
  if (!prompt) return undefined;
  const match = detectCorrection(prompt);
  const root = resolveStoreRoot();
  const key = sessionKey(e);
  if (key && storeReady(root)) {
    updateState(root, key, (s) => {
      s.host ??= hostOf(e);
      s.prompts += 1;
      if (match) s.corrections.push({ at: new Date().toISOString(), kind: match.kind, excerpt: match.excerpt });
    });
  }
  if (!match) return undefined;
  const affected = await affectedEngrams(root, prompt);
  return correctionMessage(match, affected);
}

export function correctionMessage(match: CorrectionMatch, affected: Array<{ id: string; statement: string }>): string {
  const quoted = `"${oneLine(match.excerpt, 160)}"`;
  const lines =
    match.kind === 'convention'
      ? [
          `svc: the user stated a convention (${quoted}). Record it now with svc_learn as one short, general statement (CLI: svc learn "<statement>").`,
        ]
      : [
          `svc: the user is correcting you (${quoted}). Act on it, and record the lesson with svc_learn as one short, general statement (CLI: svc learn "<statement>"), so the mistake is not repeated in later sessions.`,
        ];
  lines.push('If it replaces an engram you were shown, pass supersedes with that engram id.');
  if (affected.length > 0) {
    lines.push(
      `Engrams it may replace (supersede only if it does): ${affected.map((a) => `${a.id} "${oneLine(a.statement, 100)}"`).join('; ')}.`,
    );
  }
  return lines.join(' ');
}

/** Up to three active engrams the correction's words match well (BM25), for a supersedes hint. */
async function affectedEngrams(root: string, prompt: string): Promise<Array<{ id: string; statement: string }>> {
  const hits = await withStore(root, (store) => store.searchText(prompt.slice(0, 500), 5));
  if (!hits || hits.length === 0) return [];
  const top = hits[0]!.score;
  return hits
    .filter((h) => h.engram.status === 'active' && h.score >= top * 0.5)
    .slice(0, 3)
    .map((h) => ({ id: h.engram.id, statement: h.engram.statement }));
}
