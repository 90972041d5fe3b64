import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTINGS } from '../config.js';
import { svc } from '../../engine/test/support/run-svc.js';

// One view of the configuration (issue 29, item 7): `svc hub config` prints every setting in
// effect and where it came from, never a secret's value; a start with wrong or contradictory
// settings names every one of them, one line each, before it opens anything. Real child processes.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every setting's environment, with no SVC_HUB_* or DATABASE_URL of the machine running the tests. */
function cleanEnv(set: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { SVC_PATH: join(mkdtempSync(join(tmpdir(), 'svc-config-')), 'store') };
  for (const name of Object.keys(process.env)) if (name.startsWith('SVC_HUB_') || name === 'DATABASE_URL') env[name] = '';
  return { ...env, ...set };
}

describe('svc hub config', () => {
  it('shows each setting, its value and its source, and never a secret', async () => {
    const secrets = {
      SVC_HUB_AUDIT_KEY: `audit-${randomBytes(12).toString('hex')}`,
      SVC_HUB_JWT_SECRET: `jwt-${randomBytes(12).toString('hex')}`,
      SVC_HUB_JWT_PREVIOUS_SECRET: `jwt-old-${randomBytes(12).toString('hex')}`,
      SVC_HUB_SECRET_KEY: randomBytes(32).toString('hex'),
      SVC_HUB_METRICS_TOKEN: `metrics-${randomBytes(12).toString('hex')}`,
    };
    const dbPassword = `dbpw${randomBytes(8).toString('hex')}`;
    const smtpPassword = `smtppw${randomBytes(8).toString('hex')}`;
    const env = cleanEnv({
      ...secrets,
      DATABASE_URL: `postgres://hub:${dbPassword}@db.example:5432/hub?sslpassword=${dbPassword}`,
      SVC_HUB_SMTP_URL: `smtps://mailer:${smtpPassword}@mail.example:465`,
      SVC_HUB_MAIL_FROM: 'svc hub <hub@example.com>',
      SVC_HUB_RATE_LIMIT: '900',
      SVC_HUB_PUBLIC_URL: 'https://hub.example.com',
    });
    const json = await svc(['hub', 'config', '--port', '9090', '--json'], { env });
    const text = await svc(['hub', 'config', '--port', '9090', '--no-json'], { env });
    expect(json.code, json.stderr).toBe(0);
    expect(text.code, text.stderr).toBe(0);
    for (const value of [...Object.values(secrets), dbPassword, smtpPassword]) {
      expect(json.stdout + json.stderr).not.toContain(value);
      expect(text.stdout + text.stderr).not.toContain(value);
    }
    const doc = JSON.parse(json.stdout) as {
      settings: Array<{ name: string; value: string; source: string }>;
      problems: string[];
      ok: boolean;
    };
    expect(doc).toMatchObject({ problems: [], ok: true });
    const row = (name: string) => doc.settings.find((s) => s.name === name);
    expect(row('--port')).toMatchObject({ value: '9090', source: 'flag' });
    expect(row('--host')).toMatchObject({ value: '127.0.0.1', source: 'default' });
    expect(row('SVC_HUB_RATE_LIMIT')).toMatchObject({ value: '900', source: 'environment' });
    expect(row('SVC_HUB_WRITE_RATE_LIMIT')).toMatchObject({ value: '60', source: 'default' });
    expect(row('SVC_HUB_PUBLIC_URL')).toMatchObject({ value: 'https://hub.example.com', source: 'environment' });
    expect(row('SVC_HUB_AUDIT_KEY')).toMatchObject({ value: '(set)', source: 'environment' });
    expect(row('SVC_HUB_CHECKPOINT_KEY')).toMatchObject({ value: '(generated, kept in the database)', source: 'database' });
    expect(row('DATABASE_URL')).toMatchObject({ value: 'postgres://hub:***@db.example:5432/hub?***', source: 'environment' });
    expect(row('SVC_HUB_SMTP_URL')).toMatchObject({ value: 'smtps://mailer:***@mail.example:465', source: 'environment' });
    expect(doc.settings.map((s) => s.name)).toEqual(['--port', '--host', '--data', ...SETTINGS.map((s) => s.name)]);
    expect(text.stdout).toMatch(/^SVC_HUB_RATE_LIMIT +900 +environment$/m);
    expect(text.stdout).toContain('No wrong or contradictory setting: a start would accept these.');
  });

  it('covers every SVC_HUB_* setting the hub reads, and the README lists each', () => {
    const read = new Set<string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) {
          if (e.name !== 'test') walk(join(dir, e.name));
        } else if (e.name.endsWith('.ts'))
          for (const m of readFileSync(join(dir, e.name), 'utf8').matchAll(/SVC_HUB_[A-Z_]+[A-Z]/g)) read.add(m[0]);
      }
    };
    walk(join(ROOT, 'hub'));
    // SVC_HUB_KEY is the admin key of a client command (login-link, invite), not a setting of the hub.
    read.delete('SVC_HUB_KEY');
    const listed = new Set(SETTINGS.map((s) => s.name));
    expect([...read].filter((n) => !listed.has(n)).sort()).toEqual([]);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf('### Configuration');
    const section = readme.slice(start, readme.indexOf('\n## ', start));
    expect(SETTINGS.map((s) => s.name).filter((n) => !section.includes(`\`${n}\``))).toEqual([]);
  });

  it('refuses a start with every wrong or contradictory setting, one line each, before it opens anything', async () => {
    const data = join(mkdtempSync(join(tmpdir(), 'svc-config-start-')), 'hub');
    const env = cleanEnv({
      SVC_HUB_RATE_LIMIT: 'lots',
      SVC_HUB_STATEMENT_TIMEOUT: '-1',
      SVC_HUB_WRITE_RATE_LIMIT: '700',
      SVC_HUB_MAIL_FROM: 'hub@example.com',
      SVC_HUB_JWT_SECRET: 'same-secret-twice',
      SVC_HUB_JWT_PREVIOUS_SECRET: 'same-secret-twice',
      SVC_HUB_CHECKPOINT_ROWS: '50',
      SVC_HUB_MCP_SESSIONS_PER_TOKEN: '40',
      SVC_HUB_ALLOW_PRIVATE_URLS: 'yes',
      SVC_HUB_PUBLIC_URL: 'hub.example.com',
      SVC_HUB_LOG_LEVEL: 'loud',
      SVC_HUB_METRICS_TOKEN: 'short',
      SVC_HUB_UNREADY_SECONDS: '7200',
      SVC_HUB_SECRET_KEY_OLD: randomBytes(32).toString('hex'),
      DATABASE_URL: 'mysql://db/hub',
    });
    const expected = [
      'DATABASE_URL must be a postgres:// or postgresql:// URL',
      'SVC_HUB_STATEMENT_TIMEOUT must be a whole number, 0 or more, of seconds, 0 for none (got "-1")',
      'SVC_HUB_PUBLIC_URL must be an origin such as https://hub.example.com (got "hub.example.com")',
      'SVC_HUB_RATE_LIMIT must be a positive whole number of requests per minute (got "lots")',
      'SVC_HUB_ALLOW_PRIVATE_URLS must be 1 or 0 (got "yes")',
      'SVC_HUB_SECRET_KEY_OLD is set without SVC_HUB_SECRET_KEY: set the key secrets are sealed under now',
      'SVC_HUB_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (got "loud")',
      'SVC_HUB_METRICS_TOKEN must be at least 16 characters without spaces (e.g. openssl rand -hex 32)',
      'SVC_HUB_UNREADY_SECONDS must be a whole number of seconds from 0 to 3600 (got "7200")',
      'SVC_HUB_MAIL_FROM is set but SVC_HUB_SMTP_URL is not: set both to send e-mail, or neither',
      'SVC_HUB_JWT_PREVIOUS_SECRET equals SVC_HUB_JWT_SECRET: on a rotation the new secret goes in SVC_HUB_JWT_SECRET, the old one in PREVIOUS',
      'SVC_HUB_CHECKPOINT_ROWS is set but SVC_HUB_CHECKPOINT_DIR is not: checkpoints are written only to a folder; set SVC_HUB_CHECKPOINT_DIR, or unset SVC_HUB_CHECKPOINT_ROWS',
      "SVC_HUB_MCP_SESSIONS_PER_TOKEN (40) is above SVC_HUB_MCP_SESSIONS_PER_USER (32): one person's token can never hold more than the person may",
      'SVC_HUB_WRITE_RATE_LIMIT (700) is above SVC_HUB_RATE_LIMIT (600): a write is a request too, so it could never be reached',
    ];
    const start = await svc(['hub', '--port', '0', '--data', data, '--no-json'], { env });
    expect(start.stderr).toBe(expected.map((line) => `svc: ${line}\n`).join(''));
    expect(start.code).toBe(1);
    expect(existsSync(data)).toBe(false);

    const asJson = await svc(['hub', '--port', '0', '--data', data, '--json'], { env });
    expect(JSON.parse(asJson.stderr)).toEqual({ error: { kind: 'invalid', message: '14 setting(s) refuse the start', details: expected } });
    expect(asJson.code).toBe(1);

    const config = await svc(['hub', 'config', '--json'], { env });
    expect(config.code).toBe(1);
    expect(JSON.parse(config.stdout)).toMatchObject({ problems: expected, ok: false });

    // Allowed but unsafe: listed as a warning, not refused.
    const plain = await svc(['hub', 'config', '--json'], { env: cleanEnv({ SVC_HUB_PUBLIC_URL: 'http://hub.example.com' }) });
    expect(plain.code).toBe(0);
    expect(JSON.parse(plain.stdout).warnings).toContain(
      'SVC_HUB_PUBLIC_URL is plain http on hub.example.com: sign-in cookies and API keys cross the network in clear; put the hub behind https and name that origin',
    );
  });
});
