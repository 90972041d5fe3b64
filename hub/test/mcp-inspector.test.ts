import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startTestHub, type TestHub } from './support/hub-fixture.js';

// The official MCP Inspector's CLI (a devDependency), as an outside client, against /mcp.

const INSPECTOR = fileURLToPath(new URL('../../node_modules/.bin/mcp-inspector', import.meta.url));
const run = promisify(execFile);

describe('the MCP Inspector against the hub', () => {
  let hub: TestHub;
  let key: string;

  beforeAll(async () => {
    hub = await startTestHub('pglite');
    key = (await (await hub.newOrg('insp')).user('ines', 'editor', [{ path: 'eng' }])).key;
  }, 60_000);
  afterAll(async () => hub?.close());

  const inspect = async (...args: string[]) => {
    const r = await run(
      INSPECTOR,
      ['--cli', `${hub.url}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${key}`, ...args],
      { timeout: 60_000 },
    );
    return JSON.parse(r.stdout) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  it('lists the 39 tools and calls svc_learn and svc_recall', async () => {
    const listed = await inspect('--method', 'tools/list');
    expect(listed.tools).toHaveLength(39);
    const learned = await inspect(
      '--method',
      'tools/call',
      '--tool-name',
      'svc_learn',
      '--tool-arg',
      'statement=The Inspector wrote this engram',
      'scope=group:eng',
    );
    expect(learned.isError ?? false).toBe(false);
    expect(JSON.parse(learned.content[0].text)).toMatchObject({ action: 'created', scope: 'group:eng' });
    const recalled = await inspect('--method', 'tools/call', '--tool-name', 'svc_recall', '--tool-arg', 'query=inspector engram');
    expect(JSON.parse(recalled.content[0].text).results[0].statement).toBe('The Inspector wrote this engram');
  }, 120_000);

  it('is refused without a valid token', async () => {
    await expect(
      run(
        INSPECTOR,
        ['--cli', `${hub.url}/mcp`, '--transport', 'http', '--header', 'Authorization: Bearer svc_sk_nope', '--method', 'tools/list'],
        { timeout: 60_000 },
      ),
    ).rejects.toMatchObject({ code: 1 });
  }, 120_000);
});
