import type { SecretPolicy } from '../../backend.js';
import type { EngramDoc } from '../../model/engram-types.js';
import { PRIVATE_FALLBACK_SCOPE } from '../../model/scope.js';
import type { PackConflict } from './duplicates.js';
import { packScope } from './format.js';
import { describeFindings, type FindingKind, type ScanFinding } from './scan.js';
import type { PackSignatureCheck } from './signing.js';

// The sentences preview, install and export say about a pack's scan findings, conflicts and
// signature: one place, so the three say the same thing.

/** Findings grouped by engram id. */
export function findingsById(findings: ScanFinding[]): Map<string, ScanFinding[]> {
  const byId = new Map<string, ScanFinding[]>();
  for (const f of findings) byId.set(f.id, [...(byId.get(f.id) ?? []), f]);
  return byId;
}

const ofKind = (found: ScanFinding[], kind: FindingKind): ScanFinding[] => found.filter((f) => f.kind === kind);

/** What install does with each flagged engram (`fate` of the candidates: "installs as a candidate ..."). */
export function scanWarnings(
  engrams: EngramDoc[],
  findings: ScanFinding[],
  name: string,
  policy: SecretPolicy = 'keep-local',
  held = 'it installs as a candidate, never injected until you promote it',
): string[] {
  const warnings: string[] = [];
  const byId = findingsById(findings);
  for (const e of engrams) {
    const found = byId.get(e.id);
    if (!found) continue;
    const secrets = ofKind(found, 'secret');
    const injection = ofKind(found, 'injection');
    const control = ofKind(found, 'control');
    if (secrets.length) {
      const fate =
        policy === 'refuse'
          ? 'this store does not keep secrets: it is skipped'
          : `it goes to scope "${PRIVATE_FALLBACK_SCOPE}" instead of "${packScope(name)}"`;
      warnings.push(`${e.id} looks like it holds a secret: ${describeFindings(secrets)}; ${fate}`);
    }
    if (injection.length)
      warnings.push(`${e.id} holds text aimed at the agent (prompt injection?): ${describeFindings(injection)}; ${held}`);
    if (control.length)
      warnings.push(
        `${e.id} holds terminal control characters (escape sequences can rewrite what a terminal shows): ${describeFindings(control)}; ${held}`,
      );
  }
  return warnings;
}

export function conflictWarnings(conflicts: PackConflict[]): string[] {
  return conflicts
    .filter((c) => c.kind === 'duplicate' || c.kind === 'contradiction')
    .map((c) =>
      c.kind === 'duplicate'
        ? `${c.id} duplicates ${c.existing} (${c.existing_scope}): "${c.statement}"`
        : `${c.id} contradicts ${c.existing} (${c.existing_scope}): "${c.statement}" vs "${c.existing_statement}"`,
    );
}

/** One line on who signed the pack and whether install will take it. */
export function signatureWarning(check: PackSignatureCheck): string | null {
  switch (check.status) {
    case 'trusted':
      return null;
    case 'invalid':
      return `signature check failed, install will refuse this pack: ${check.problems.join('; ')}`;
    case 'unsigned':
      return 'the pack is not signed: nothing says who made it; install needs --allow-untrusted';
    case 'untrusted':
      return `the pack is signed by ${check.signer}, a key you do not trust: check it with its creator, then svc packs trust ${check.signer} (or install with --allow-untrusted)`;
  }
}
