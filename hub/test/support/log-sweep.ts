import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// Every in-process test hub (hub-fixture.ts) writes its log lines to one file per test process in
// a folder of the run; when the run ends, global-setup.ts reads them all and fails the run if any
// line holds a credential: the hub must never log one, whichever test made it. The patterns are
// the shapes of every secret the hub issues (API keys, SCIM tokens, invitations, webhook secrets,
// hub JWTs, session cookies and refresh tokens) and of an Authorization header.

const CREDENTIALS: Array<[name: string, pattern: RegExp]> = [
  ['an API key', /svc_sk_[A-Za-z0-9_-]{20,}/],
  ['a SCIM token', /svc_scim_[A-Za-z0-9_-]{20,}/],
  ['an invitation', /svc_inv_[A-Za-z0-9_-]{20,}/],
  ['a webhook secret', /whsec_[A-Za-z0-9_+/=-]{20,}/],
  ['a JWT', /eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/],
  ['a session cookie or refresh token', /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[A-Za-z0-9_-]{43}/],
  ['an Authorization header', /Bearer [A-Za-z0-9_.-]{20,}/],
];

/** The log sink of a test hub: one file per test process under `dir`. */
export function logSink(dir: string | undefined): (line: string) => void {
  if (!dir) return () => undefined;
  const file = join(dir, `${process.pid}.log`);
  return (line) => appendFileSync(file, line.endsWith('\n') ? line : line + '\n');
}

/** The lines of the run's logs that hold a credential, each with what it held (at most 20). */
export function credentialsLogged(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const f of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      for (const [name, pattern] of CREDENTIALS) {
        if (pattern.test(line) && found.length < 20) found.push(`${name} in ${f}: ${line.slice(0, 300)}`);
      }
    }
  }
  return found;
}

/** How many lines the run's test hubs logged (the sweep must have read something). */
export function linesLogged(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir).reduce((n, f) => n + readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).length, 0);
}
