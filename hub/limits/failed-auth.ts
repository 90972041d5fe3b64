import type { Database } from '../contracts.js';
import { HubProblem } from '../http/problem.js';
import { countAuthFailure, limitField, policyField, type RateDecision, type RateLimits } from './rate-limit.js';
import { noteRefusal } from './refusals.js';

// Failed authentication, limited per client address: bad tokens, bad invitations. Counted in
// PostgreSQL (every process shares the count); an address over its limit is remembered by each
// process that saw it go over, which then looks at no new credential from it until the window
// has passed. Callers whose token the process already knows carry on: one broken client must not
// lock out everyone behind the same address.

export class FailedAuthGuard {
  private readonly blocked = new Map<string, number>();

  constructor(
    private readonly db: Database,
    private readonly limits: RateLimits,
  ) {}

  private problem(detail: string, retryAfter: number, d?: RateDecision): HubProblem {
    noteRefusal(this.db, ['auth-failures']);
    return new HubProblem(429, 'rate-limited', 'Too many requests', `${detail}; retry in ${retryAfter} s`, {
      headers: {
        'Retry-After': String(retryAfter),
        'RateLimit-Policy': policyField(this.limits, ['auth-failures']),
        ...(d ? { RateLimit: limitField(d.policies) } : {}),
      },
      members: { 'violated-policies': ['auth-failures'] },
    });
  }

  /** Before a credential is looked at: 429 when the address is over its limit (unless the caller is known). */
  check(address: string, known: boolean): void {
    const until = this.blocked.get(address);
    if (until === undefined) return;
    if (until <= Date.now()) {
      this.blocked.delete(address);
      return;
    }
    if (!known) throw this.problem('too many failed authentications from this address', Math.ceil((until - Date.now()) / 1000));
  }

  /** After a credential failed: counts it; 429 (instead of the failure) when this one went over. */
  async failed(address: string, setHeader: (name: string, value: string) => void): Promise<void> {
    const d = await countAuthFailure(this.db, address, this.limits);
    setHeader('RateLimit-Policy', policyField(this.limits, ['auth-failures']));
    setHeader('RateLimit', limitField(d.policies));
    if (d.allowed) return;
    this.blocked.set(address, Date.now() + d.retryAfter * 1000);
    throw this.problem(
      `too many failed authentications from this address (${this.limits.authFailuresPerMinute} per minute)`,
      d.retryAfter,
      d,
    );
  }
}
