import { invalid } from '../errors.js';
// Recognises text that carries a credential. Learn demotes such content from a shared scope
// to `local` (never leaves the machine); pack export leaves it out. False positives only
// demote, so the patterns lean towards catching.

export interface SecretFinding {
  kind: string;
  /** The match with its middle masked, safe to print. */
  sample: string;
}

const PLACEHOLDER = /^(?:\*+|x+|\.{3}|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|password|pass|secret|changeme)$/i;

const PATTERNS: Array<{ kind: string; re: RegExp; value?: number }> = [
  { kind: 'private key', re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/ },
  { kind: 'AWS access key id', re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { kind: 'AWS secret access key', re: /aws_?secret_?access_?key\s*[=:]\s*["']?([A-Za-z0-9/+=]{40})/i, value: 1 },
  { kind: 'GitHub token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/ },
  { kind: 'GitLab token', re: /\bglpat-[A-Za-z0-9_-]{20,}/ },
  { kind: 'Anthropic API key', re: /\bsk-ant-[A-Za-z0-9_-]{20,}/ },
  { kind: 'OpenAI-style API key', re: /\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}/ },
  { kind: 'Stripe key', re: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/ },
  { kind: 'Slack token', re: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { kind: 'Slack webhook', re: /hooks\.slack\.com\/services\/T[A-Za-z0-9]+\/B[A-Za-z0-9]+\/[A-Za-z0-9]+/ },
  { kind: 'Google API key', re: /\bAIza[0-9A-Za-z_-]{35}/ },
  { kind: 'svc API key', re: /\bsvc_sk_[A-Za-z0-9_-]{16,}/ },
  { kind: 'JSON web token', re: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/ },
  { kind: 'bearer token', re: /\bBearer\s+([A-Za-z0-9._~+/=-]{20,})/, value: 1 },
  { kind: 'password in URL', re: /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:([^\s/@]+)@[^\s/]+/i, value: 1 },
  {
    kind: 'credential assignment',
    re: /\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key)\s*[=:]\s*["']?([^\s"']{8,})/i,
    value: 1,
  },
];

function mask(text: string): string {
  if (text.length <= 8) return '*'.repeat(text.length);
  return `${text.slice(0, 4)}…${text.slice(-2)}`;
}

// A value that is only letters is a word, not a credential ("api_key: documented").
function looksLikeSecretValue(value: string): boolean {
  if (PLACEHOLDER.test(value)) return false;
  return /[0-9]/.test(value) || /[^A-Za-z]/.test(value) || (/[a-z]/.test(value) && /[A-Z]/.test(value) && value.length >= 16);
}

export function findSecrets(text: string): SecretFinding[] {
  const found: SecretFinding[] = [];
  for (const { kind, re, value } of PATTERNS) {
    const m = re.exec(text);
    if (!m) continue;
    if (value !== undefined && !looksLikeSecretValue(m[value]!)) continue;
    found.push({ kind, sample: mask(m[0]) });
  }
  return found;
}

/** The text fields of an engram or a learn input that the guard reads. */
export interface SecretBearing {
  statement?: string;
  rationale?: string;
  source?: string;
  domain?: string;
  tags?: string[];
  dual_coding?: unknown;
  knowledge_anchors?: unknown;
}

/** What the secret guard finds in every piece of text a learn input would store. */
export function secretsIn(input: SecretBearing): SecretFinding[] {
  return findSecrets(allText(input));
}

/** Throws (invalid) when a learn input holds what looks like a secret: for stores that keep none. */
export function assertNoSecrets(input: SecretBearing): void {
  const found = secretsIn(input);
  if (found.length === 0) return;
  const kinds = [...new Set(found.map((s) => s.kind))].join(', ');
  throw invalid(`the engram looks like it holds a secret (${kinds}); this store does not keep secrets`, [
    `statement: holds a secret (${kinds})`,
  ]);
}

/** Every piece of text the engram will carry, for the secret guard. */
function allText(input: SecretBearing): string {
  const parts = [input.statement, input.rationale, input.source, input.domain, ...(input.tags ?? [])];
  if (input.dual_coding) parts.push(JSON.stringify(input.dual_coding));
  if (input.knowledge_anchors) parts.push(JSON.stringify(input.knowledge_anchors));
  return parts.filter((p): p is string => typeof p === 'string').join('\n');
}
