// The text heuristics behind two of audit's classes: a snapshot (a point-in-time fact: a date, a
// version, time-bound wording, a status update) and a conflict (a memory entry that contradicts
// a stored engram). Local and deterministic, no LLM.

import type { EngramDoc } from '../../model/engram-types.js';
import { detectPolarity, polarityOf } from '../../model/polarity.js';
import { contentTokens } from '../../search/text-overlap.js';

// ------------------------------------------------------------------------------ snapshots

const MONTH =
  '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';
const SNAPSHOT_PATTERNS: Array<[RegExp, string]> = [
  [/\b\d{4}-\d{2}-\d{2}\b/, 'a date'],
  [/\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/, 'a date'],
  [new RegExp(`\\b${MONTH}\\.?\\s+\\d{1,2}(?:st|nd|rd|th)?,?\\s+\\d{4}\\b`, 'i'), 'a date'],
  [new RegExp(`\\b${MONTH}\\s+(?:19|20)\\d{2}\\b`), 'a date'],
  [/\b(?:Q[1-4]\s+(?:19|20)\d{2})\b/, 'a date'],
  [/\bv\d+(?:\.\d+){1,3}\b/i, 'a version'],
  [/\b\d+\.\d+\.\d+(?:-[\w.]+)?\b/, 'a version'],
  [/\b(?:version|release)\s+\d+(?:\.\d+)*\b/i, 'a version'],
  [
    /\b(?:currently|as of|right now|at the moment|at present|for now|for the time being|so far|today|yesterday|tomorrow|recently|this (?:week|month|sprint|quarter|morning)|last (?:week|month|sprint|night)|next (?:week|month|sprint))\b/i,
    'time-bound wording',
  ],
  [
    /\b(?:in progress|WIP|work in progress|is blocked|blocked on|waiting (?:on|for)|pending (?:review|approval)|is (?:down|broken|failing|flaky) (?:right now|again|today)|was (?:just )?(?:merged|deployed|released|fixed|reverted)|just (?:merged|deployed|released|fixed|landed))\b/i,
    'a status update',
  ],
  [/^(?:status|update|todo|done|fixed|deployed|released|merged|shipped|note to self)\b\s*[:\-–]/i, 'a status update'],
  [/\b(?:I am|I'm|we are|we're) (?:working on|investigating|migrating|in the middle of|currently)\b/i, 'a status update'],
];

export function snapshotReason(text: string): string | null {
  for (const [re, what] of SNAPSHOT_PATTERNS) {
    const m = re.exec(text);
    if (m) return `${what} ("${m[0].trim()}")`;
  }
  return null;
}

// ------------------------------------------------------------------------------ conflicts

const POLARITY_WORDS = new Set([
  'always',
  'never',
  'avoid',
  'don',
  'not',
  'no',
  'must',
  'should',
  'prefer',
  'instead',
  'rather',
  'stop',
  'forbidden',
  'allowed',
]);
const CHOICE_VERBS =
  /\b(?:use|prefer|run|set|pick|choose|install|indent|format|deploy|keep|write|name|call|store|put|target|build|test|lint|commit|push|merge|default)\b/i;

const subjectTokens = (text: string): Set<string> => new Set([...contentTokens(text)].filter((t) => !POLARITY_WORDS.has(t)));

/** `use A instead of B`, `prefer A over B`, `A, not B`: the preferred and the rejected word. */
export function preference(text: string): { prefer: string; over: string } | null {
  const t = text.toLowerCase();
  const patterns = [
    /\b(?:use|prefer|choose|pick|run)\s+([\w@./+-]+)[\w\s-]{0,20}?\s*(?:,\s*)?(?:instead of|rather than|over|not|and not|in place of)\s+([\w@./+-]+)/,
    /\bprefer\s+([\w@./+-]+)\s+to\s+([\w@./+-]+)/,
    /\b([\w@./+-]+),\s*not\s+([\w@./+-]+)/,
  ];
  for (const re of patterns) {
    const m = re.exec(t);
    if (m && m[1] !== m[2] && !/^(?:the|a|an|to)$/.test(m[1]!) && !/^(?:the|a|an|to)$/.test(m[2]!)) {
      return { prefer: m[1]!.replace(/[.,;:]+$/, ''), over: m[2]!.replace(/[.,;:]+$/, '') };
    }
  }
  return null;
}

const mentions = (text: string, word: string): boolean =>
  new RegExp(`(^|[^\\w@./+-])${word.replace(/[.+]/g, '\\$&')}($|[^\\w@/+-])`, 'i').test(text);
const forbids = (text: string, word: string): boolean =>
  new RegExp(
    `\\b(?:never|don'?t|do not|avoid|stop)\\s+(?:use|using|run|running|install)?\\s*${word.replace(/[.+]/g, '\\$&')}\\b`,
    'i',
  ).test(text);

/** Why `entry` contradicts `engram`, or null. */
export function conflictReason(entry: string, engram: EngramDoc): string | null {
  const other = engram.statement;
  const a = subjectTokens(entry);
  const b = subjectTokens(other);
  const shared = [...a].filter((t) => b.has(t));
  // 1. A swapped preference: "use A, not B" against "use B" (or "prefer B over A", or "never A").
  const pa = preference(entry);
  const pb = preference(other);
  if (pa && pb && pa.prefer === pb.over && pa.over === pb.prefer)
    return `it prefers ${pa.prefer} over ${pa.over}; ${engram.id} the opposite`;
  if (pa && !pb && mentions(other, pa.over) && !mentions(other, pa.prefer) && polarityOf(engram) !== 'dont' && !forbids(other, pa.over)) {
    return `it rejects ${pa.over}, which ${engram.id} prescribes`;
  }
  if (pa && forbids(other, pa.prefer)) return `it prescribes ${pa.prefer}, which ${engram.id} forbids`;
  if (
    pb &&
    !pa &&
    mentions(entry, pb.over) &&
    !mentions(entry, pb.prefer) &&
    detectPolarity(entry) !== 'dont' &&
    !forbids(entry, pb.over)
  ) {
    return `it prescribes ${pb.over}, which ${engram.id} rejects in favour of ${pb.prefer}`;
  }
  if (pb && forbids(entry, pb.prefer)) return `it forbids ${pb.prefer}, which ${engram.id} prescribes`;
  // 2. Opposite polarity on the same subject: "always X" against "never X".
  const pe = detectPolarity(entry);
  const po = polarityOf(engram);
  const smaller = Math.min(a.size, b.size);
  if (pe && po && pe !== po && smaller > 0 && shared.length >= Math.max(1, Math.ceil(smaller * 0.6))) {
    return `${pe === 'do' ? 'it prescribes' : 'it forbids'} what ${engram.id} ${po === 'do' ? 'prescribes' : 'forbids'}: ${shared.join(', ')}`;
  }
  // 3. The same short rule with one choice swapped: "indent with tabs" against "indent with spaces".
  if (
    pe !== 'dont' &&
    po !== 'dont' &&
    CHOICE_VERBS.test(entry) &&
    CHOICE_VERBS.test(other) &&
    a.size <= 8 &&
    b.size <= 8 &&
    shared.length >= 2
  ) {
    const onlyA = [...a].filter((t) => !b.has(t));
    const onlyB = [...b].filter((t) => !a.has(t));
    if (onlyA.length === 1 && onlyB.length === 1) return `same rule with a different choice: ${onlyA[0]} here, ${onlyB[0]} in ${engram.id}`;
  }
  return null;
}

/** A shared rare word (a tool or file name) makes two statements about the same thing even at low overlap. */
export function sharesKeyWord(a: string, b: string): boolean {
  const pa = preference(a);
  const pb = preference(b);
  const words = [pa?.prefer, pa?.over, pb?.prefer, pb?.over].filter((w): w is string => !!w);
  return words.some((w) => mentions(a, w) && mentions(b, w));
}
