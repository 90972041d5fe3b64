import type { EngramDoc } from '../../model/engram-types.js';
import { findSecrets } from '../../model/secret-guard.js';
import { hasTerminalControls, terminalSafe } from '../../text.js';

// The security scan of pack engrams. Three kinds of finding:
//
// - secret: a credential (the learn secret guard's patterns). Export leaves such engrams out;
//   install puts them in scope `local` (private, never leaves the machine) instead of the
//   shared `pack:<name>` scope, exactly as learn demotes them.
// - injection: text aimed at the agent that will read the engram rather than at the task:
//   "ignore previous instructions", role reassignment ("you are now ..."), talk of the system
//   prompt, chat-template tokens, hidden HTML comments, invisible or bidi-control characters,
//   long base64 blobs. Findings are warnings: the pack still installs (spec), but a flagged
//   engram installs as a `candidate`, which inject never shows an agent until a person reads
//   it and runs `svc promote <id>`.
// - control: what the CLI strips before printing (engine/cli/terminal-text.ts): C0 and C1
//   control characters other than tab and newline. ESC starts terminal escape sequences (clear
//   the screen, recolour, retitle the window with OSC, rewrite what was printed), so text
//   holding them can hide or forge what a person reads in a terminal, and an agent's tool
//   output carries them along. Treated like injection: install holds the engram back as a
//   `candidate`.
//
// Every string of the engram is scanned (unknown keys too, where text could hide), except
// `id`, `content_hash` and a well-formed `provenance.signature` (a key and a signature: base64
// by design; anything else there is scanned).

export type FindingKind = 'secret' | 'injection' | 'control';

export interface ScanFinding {
  id: string;
  kind: FindingKind;
  /** What was recognised, e.g. "GitHub token", "override instruction". */
  rule: string;
  /** Where in the engram, e.g. "statement", "dual_coding.example". */
  field: string;
  /** The match, shortened (secrets masked; invisible and control characters shown as \uXXXX). */
  sample: string;
}

const SKIP = new Set(['id', 'content_hash']);
const SIGNATURE = /^ed25519:[A-Za-z0-9_-]{43}:[A-Za-z0-9_-]{86}$/;

const INVISIBLE = /[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/;
/** Shown as \uXXXX in samples: invisible characters, and C0 and C1 controls but tab and newline. */
const UNPRINTABLE = new RegExp(`${INVISIBLE.source}|[\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F]`, 'g');

const INJECTION_RULES: Array<{ rule: string; re: RegExp; accept?: (m: string) => boolean }> = [
  {
    rule: 'override instruction',
    re: /\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|every|the|your|of|these|those)\s+)*(?:previous|prior|above|earlier|preceding|former)\b/i,
  },
  {
    rule: 'override instruction',
    re: /\b(?:ignore|disregard|override|bypass)\s+(?:(?:all|any|the|your|these|those)\s+)*(?:instructions|guidelines|guardrails|safety rules|safety measures)\b/i,
  },
  {
    rule: 'role reassignment',
    re: /\byou are now\b|\bfrom now on,?\s+you\s+(?:are|will|must|should)\b|\bpretend\s+(?:to be|you are)\b|\bact as (?:an? )?(?:unrestricted|unfiltered|jailbroken|different)\b/i,
  },
  { rule: 'system prompt talk', re: /\bsystem\s+prompt\b|\bdeveloper\s+mode\b|\bjailbr(?:eak|oken)\b/i },
  { rule: 'chat-template token', re: /<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[\/?INST\]|<<\/?SYS>>/i },
  { rule: 'hidden HTML comment', re: /<!--[\s\S]*?(?:-->|$)/ },
  { rule: 'invisible characters', re: new RegExp(INVISIBLE.source) },
  {
    rule: 'base64 blob',
    re: /[A-Za-z0-9+/_-]{64,}={0,2}/,
    // Runs of one case or of hex digits are ids or hashes, and paths are full of slashes:
    // an encoded payload mixes cases and digits with few slashes.
    accept: (m) => /[a-z]/.test(m) && /[A-Z]/.test(m) && /[0-9]/.test(m) && (m.match(/\//g)?.length ?? 0) <= m.length / 20,
  },
];

/** The text with invisible and control characters written as \uXXXX, so a sample shows what is hidden. */
function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
}

function visible(text: string, max = 60): string {
  return printable(text.length > max ? `${text.slice(0, max)}…` : text);
}

/** Every string value of an engram with its path, for scanning. */
function* strings(value: unknown, path: string): Generator<[string, string]> {
  if (typeof value === 'string') {
    yield [path, value];
  } else if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield* strings(v, `${path}[${i}]`);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const at = path ? `${path}.${k}` : k;
      if (SKIP.has(at) || (at === 'provenance.signature' && typeof v === 'string' && SIGNATURE.test(v))) continue;
      yield* strings(v, at);
    }
  }
}

export function findInjection(text: string): Array<{ rule: string; sample: string }> {
  const found: Array<{ rule: string; sample: string }> = [];
  const seen = new Set<string>();
  for (const { rule, re, accept } of INJECTION_RULES) {
    if (seen.has(rule)) continue;
    const m = re.exec(text);
    if (!m || (accept && !accept(m[0]))) continue;
    seen.add(rule);
    found.push({ rule, sample: visible(m[0]) });
  }
  return found;
}

export function findControl(text: string): Array<{ rule: string; sample: string }> {
  if (!hasTerminalControls(text)) return [];
  // The first place the text differs from what the CLI would print of it.
  const safe = terminalSafe(text);
  let at = 0;
  while (at < text.length && text[at] === safe[at]) at++;
  const rule = /[\u001B\u009B\u009D]/.test(text[at] ?? '') ? 'terminal escape sequence' : 'control character';
  return [{ rule, sample: visible(text.slice(at, at + 24)) }];
}

export function scanEngram(e: EngramDoc): ScanFinding[] {
  const findings: ScanFinding[] = [];
  for (const [path, text] of strings(e, '')) {
    // Keys are the pack author's text too.
    const field = printable(path);
    for (const s of findSecrets(text)) findings.push({ id: e.id, kind: 'secret', rule: s.kind, field, sample: printable(s.sample) });
    for (const i of findInjection(text)) findings.push({ id: e.id, kind: 'injection', rule: i.rule, field, sample: i.sample });
    for (const c of findControl(text)) findings.push({ id: e.id, kind: 'control', rule: c.rule, field, sample: c.sample });
  }
  return findings;
}

export const hasKind = (findings: ScanFinding[], kind: FindingKind): boolean => findings.some((f) => f.kind === kind);

/** Findings that hold an engram back as a candidate: text aimed at the agent or at the terminal. */
export const holdsBack = (findings: ScanFinding[]): boolean => hasKind(findings, 'injection') || hasKind(findings, 'control');

/** "GitHub token in statement, ..." */
export function describeFindings(findings: ScanFinding[]): string {
  return findings.map((f) => `${f.rule} in ${f.field} (${f.sample})`).join(', ');
}
