import type { EngramDoc, Polarity } from './engram-types.js';

// Whether a statement tells the agent to do something or forbids it. Learn stores it when the
// wording is clear; inject files prohibitions under CONSTRAINTS.

const DONT =
  /^(?:never|don'?t|do not|does not|must not|mustn'?t|should not|shouldn'?t|avoid|stop|no longer|not to|cannot|can'?t|forbid|forbidden|prohibit|refrain|no\b)/i;
const DONT_INSIDE =
  /\b(?:never|do not|don'?t|must not|mustn'?t|should not|shouldn'?t|is (?:not allowed|forbidden|prohibited)|are (?:not allowed|forbidden|prohibited))\b/i;
const DO = /^(?:always|use|prefer|run|keep|make|ensure|write|add|put|call|check|follow|do\b|must\b|should\b|remember)/i;

export function detectPolarity(statement: string): Polarity | null {
  const s = statement.trim().replace(/^[-*>\s]+/, '');
  if (DONT.test(s)) return 'dont';
  if (DO.test(s)) return DONT_INSIDE.test(s) ? 'dont' : 'do';
  if (DONT_INSIDE.test(s)) return 'dont';
  return null;
}

/** The stored polarity, else what the wording says (hand-written files may not carry one). */
export function polarityOf(e: EngramDoc): Polarity | null {
  return e.polarity ?? detectPolarity(e.statement);
}
