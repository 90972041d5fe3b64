import { performance } from 'node:perf_hooks';
import { errorLine } from '../../engine/text.js';

// A real MCP handshake with a configured stdio server, the way a host does it: spawn the command
// with the host's default environment plus the entry's env, initialize, list every tool page.
// Used by `svc doctor` (live tool count) and the hook benchmark (time to ready).

export interface StdioServer {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

export type HandshakeResult = { ok: true; tools: string[]; ms: number } | { ok: false; error: string; stderr: string; ms: number };

export async function mcpHandshake(server: StdioServer, timeoutMs = 20_000): Promise<HandshakeResult> {
  const [{ Client }, { StdioClientTransport, getDefaultEnvironment }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
  ]);
  const transport = new StdioClientTransport({
    command: server.command,
    args: server.args ?? [],
    env: { ...getDefaultEnvironment(), ...(server.env ?? {}) },
    cwd: server.cwd,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  const client = new Client({ name: 'svc-doctor', version: '1' }, { capabilities: {} });
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    const work = (async () => {
      await client.connect(transport, { timeout: timeoutMs });
      const tools: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
        tools.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    })();
    work.catch(() => {}); // if the deadline wins, the abandoned attempt must not become an unhandled rejection
    const tools = await Promise.race([work, deadline]);
    return { ok: true, tools, ms: performance.now() - t0 };
  } catch (err) {
    return { ok: false, error: errorLine(err), stderr: stderr.trim(), ms: performance.now() - t0 };
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => {});
  }
}
