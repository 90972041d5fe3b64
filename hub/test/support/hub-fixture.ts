import { startHub, type RunningHub } from '../../start.js';
import type { HubOptions } from '../../app.js';
import { createOrgWithAdmin } from '../../admin/provision.js';
import { createUser, issueApiKey, createGroup, addMember } from '../../access/identity.js';
import { responseErrors } from '../../openapi/spec.js';
import type { Database, Org, Role } from '../../contracts.js';
import { freshDatabase, type DatabaseKind, type TestDatabase } from './databases.js';
import { logSink } from './log-sweep.js';
import { inject } from 'vitest';

// A hub on a loopback port over a fresh database, with helpers to make organizations, users and
// keys, and a `request` that checks every answer against the OpenAPI description.

export interface Reply {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export interface TestOrg {
  org: Org;
  adminKey: string;
  adminId: string;
  /** A user of this organization with a role, optional groups (created on demand), and a key. */
  user(name: string, role: Role, groups?: Array<{ path: string; readOnly?: boolean }>): Promise<{ id: string; key: string }>;
}

export interface TestHub {
  url: string;
  db: Database;
  database: TestDatabase;
  running: RunningHub;
  newOrg(slug: string): Promise<TestOrg>;
  /** `path` is relative to /api/v1 unless it starts with "//" (then from the root). `template` names the described route. */
  request(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string>; template?: string },
  ): Promise<Reply>;
  close(): Promise<void>;
}

export async function startTestHub(kind: DatabaseKind, opts: Omit<HubOptions, 'db'> = {}): Promise<TestHub> {
  const database = await freshDatabase(kind);
  const db = database.db;
  // Tests make many unauthenticated calls from one address: the failure limit has a test of its own.
  const running = await startHub({
    db,
    log: logSink(inject('hubLogDir')),
    ...opts,
    rateLimits: { authFailuresPerMinute: 10_000, ...opts.rateLimits },
  });
  return {
    url: running.url,
    db,
    database,
    running,
    async newOrg(slug) {
      const made = await createOrgWithAdmin(db, slug, 'admin');
      return {
        org: made.org,
        adminKey: made.apiKey,
        adminId: made.userId,
        async user(name, role, groups = []) {
          const u = await createUser(db, made.org, { name, role });
          for (const g of groups) {
            const parts = g.path.split('/');
            for (let i = 1; i <= parts.length; i++) await createGroup(db, made.org, parts.slice(0, i).join('/')).catch(() => undefined);
            await addMember(db, made.org, g.path, u.id, g.readOnly ?? false);
          }
          const { key } = await issueApiKey(db, made.org, u.id, `${name} key`);
          return { id: u.id, key };
        },
      };
    },
    async request(method, path, o = {}) {
      const url = path.startsWith('//') ? running.url + path.slice(1) : `${running.url}/api/v1${path}`;
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      let body: string | undefined;
      if (o.raw !== undefined) body = o.raw;
      else if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
      const res = await fetch(url, { method, headers, body });
      const text = await res.text();
      const type = res.headers.get('content-type') ?? '';
      const parsed = type.includes('json') && text ? JSON.parse(text) : text;
      if (o.template) {
        const errors = await responseErrors(method, o.template, res.status, type, parsed);
        if (errors.length)
          throw new Error(
            `${method} ${path} -> ${res.status} does not match the OpenAPI description: ${errors.join('; ')}\n${text.slice(0, 500)}`,
          );
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async close() {
      await running.close();
      await database.close();
    },
  };
}
