import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { packageRoot } from '../../engine/package-info.js';
import { createHub } from '../app.js';
import { OPENAPI_JSON, OPENAPI_SOURCE, OPENAPI_YAML, openApiDocument } from '../openapi/spec.js';
import { freshDatabase } from './support/databases.js';
import { startTestHub } from './support/hub-fixture.js';

// The OpenAPI description covers every route the app registers, and it is served in public.

describe('the OpenAPI description', () => {
  it('describes every registered route, and nothing that is not registered', async () => {
    const t = await freshDatabase('pglite');
    try {
      const { app } = await createHub({ db: t.db, log: () => undefined });
      // The REST API under /api/v1, and the sign-in routes served from the root (described with
      // a path-level server of "/"). MCP and SCIM follow their own specifications.
      const ROOT = /^\/(auth|oauth|\.well-known)\//;
      const registered = new Set<string>();
      for (const mw of app.middleware as Array<{ router?: { stack: Array<{ path: string; methods: string[] }> } }>) {
        for (const layer of mw.router?.stack ?? []) {
          for (const m of layer.methods) {
            if (m === 'HEAD' || !(layer.path.startsWith('/api/v1/') || ROOT.test(layer.path))) continue;
            const path = layer.path.startsWith('/api/v1/') ? layer.path.replace('/api/v1', '') : `/${layer.path}`;
            registered.add(`${m} ${path.replace(/:(\w+)/g, '{$1}')}`);
          }
        }
      }
      const doc = await openApiDocument();
      const described = new Set<string>();
      for (const [path, ops] of Object.entries(doc.paths) as Array<
        [string, Record<string, unknown> & { servers?: Array<{ url: string }> }]
      >) {
        const at = ops.servers?.[0]?.url === '/' ? `/${path}` : path;
        for (const m of Object.keys(ops))
          if (['get', 'post', 'patch', 'delete', 'put'].includes(m)) described.add(`${m.toUpperCase()} ${at}`);
      }
      expect([...registered].filter((r) => !described.has(r)).sort()).toEqual([]);
      expect([...described].filter((d) => !registered.has(d)).sort()).toEqual([]);
      expect(registered.size).toBeGreaterThan(25);
      expect(registered).toContain('POST //oauth/token');
      expect(registered).toContain('POST //auth/{org}/{provider}/acs');
    } finally {
      await t.close();
    }
  });

  it('is served without a token at /api/v1/openapi.yaml', async () => {
    const hub = await startTestHub('pglite');
    try {
      const r = await hub.request('GET', '/openapi.yaml');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/yaml/);
      expect(r.text).toMatch(/^openapi: 3\.1\.0/);
    } finally {
      await hub.close();
    }
  });

  it('is in the published package, built from the source and the same as it', () => {
    const source = readFileSync(OPENAPI_SOURCE, 'utf8');
    expect(readFileSync(OPENAPI_YAML, 'utf8')).toBe(source);
    expect(JSON.parse(readFileSync(OPENAPI_JSON, 'utf8'))).toEqual(parse(source));
    // What `npm pack` would publish: the hub reads these at run time.
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: packageRoot(), encoding: 'utf8' }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const files = new Set(packed!.files.map((f) => f.path));
    for (const f of ['dist/hub/openapi/openapi.yaml', 'dist/hub/openapi/openapi.json', 'migrations/hub/control/001-organizations.sql'])
      expect(files, f).toContain(f);
  });
});
