import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { credentialsLogged, linesLogged, logSink } from './support/log-sweep.js';

// The sweep global-setup.ts runs over every test hub's log at the end of the run.
describe('the sweep of the test hubs’ logs', () => {
  it('reports each credential shape the hub issues, and passes ordinary lines', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-sweep-'));
    const write = logSink(dir);
    write('{"level":30,"event":"request","route":"/api/v1/engrams","status":201,"actor":"U-1"}');
    write('{"level":40,"msg":"a SCIM token is required: Authorization: Bearer svc_scim_…"}');
    expect(credentialsLogged(dir)).toEqual([]);
    const secrets = [
      'svc_sk_' + 'a'.repeat(43),
      'svc_scim_' + 'b'.repeat(43),
      'whsec_' + 'c'.repeat(40),
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ',
      '0b6f7c9e-3d2a-4c1b-9e8f-7a6b5c4d3e2f.' + 'd'.repeat(43),
    ];
    for (const s of secrets) write(`{"msg":"oops ${s}"}`);
    expect(credentialsLogged(dir).map((l) => l.split(' in ')[0])).toEqual([
      'an API key',
      'a SCIM token',
      'a webhook secret',
      'a JWT',
      'a session cookie or refresh token',
    ]);
    expect(linesLogged(dir)).toBe(7);
  });
});
