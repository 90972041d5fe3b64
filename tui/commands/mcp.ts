import { setTimeout as sleep } from 'node:timers/promises';
import { packageVersion } from '../../engine/package-info.js';
import { invalid } from '../../engine/errors.js';
import type { LocalBackend } from '../../engine/store/local-backend.js';
import type { ToolContext } from '../../engine/mcp/types.js';

const HELP = `
  Usage
    svc mcp [--profile full|lean] [--path <dir>]

  Runs the stdio MCP server on the store ($SVC_PATH, --path, else ~/.svc). stdout carries
  only the protocol; notes and warnings go to stderr.

  Flags
    --profile <p>   full (39 tools, default) or lean (11 tools, for editors that cap tool
                    counts; svc_admin reaches the others). Default: $SVC_TOOL_PROFILE, else full.`;

/** Notes for the operator; stdout belongs to the protocol. */
const log = (message: string): void => {
  process.stderr.write(`svc mcp: ${message}\n`);
};

export async function run(argv: string[]): Promise<number> {
  // Hosts run `svc mcp` bare: that path skips the flag parser, which loads the store layer.
  const cli = argv.length
    ? (await import('../../engine/cli/cli-kit.js')).parseArgs(argv, HELP, { profile: { type: 'string' } })
    : { input: [], flags: { profile: undefined, path: undefined } };
  if (cli.input.length) throw invalid(`svc mcp takes no arguments (got "${cli.input.join(' ')}")`);
  // Any library that logs with console.log must not corrupt the protocol stream.
  for (const level of ['log', 'info', 'debug'] as const) console[level] = (...args: unknown[]) => console.error(...args);

  // The MCP SDK loads only here: no other command pays for it. Until the first tools/call (or
  // the tools/list answer is sent) nothing else loads: the handshake answers in about two
  // `node -e 0` (engine/mcp/server.ts says why that matters).
  const [{ createSvcServer, resolveProfile }, { StdioServerTransport }] = await Promise.all([
    import('../../engine/mcp/server.js'),
    import('../../engine/mcp/sdk-deps.js'),
  ]);
  const profile = resolveProfile(cli.flags.profile ?? process.env.SVC_TOOL_PROFILE);
  let store: LocalBackend | undefined;
  let opening: Promise<ToolContext> | undefined;

  // The project, the store, the reranker and the embedder: what a tool call works on.
  const openContext = async (client: { name?: string }): Promise<ToolContext> => {
    const [{ loadProjectConfig }, { openStoreSpan }, { resolveStoreRoot }, { remoteOf }, { rerankerSetting }, { localEmbedderProvider }] =
      await Promise.all([
        import('../../engine/config/project-config.js'),
        import('../../engine/store/open-store.js'),
        import('../../engine/svc-home.js'),
        import('../../engine/remote/hub-client.js'),
        import('../../engine/rerank/reranker.js'),
        import('../../engine/mcp/embedder-provider.js'),
      ]);
    const project = await loadProjectConfig(process.cwd());
    store = await openStoreSpan(resolveStoreRoot(cli.flags.path), 'fast');
    for (const w of store.warnings.splice(0)) log(`warning: ${w}`);
    const remote = remoteOf(project);
    return {
      backend: store,
      embedder: localEmbedderProvider(store.root, { log }),
      // SVC_RERANKER: recall and inject rerank with it (loaded once, on first use).
      reranker: rerankerSetting(store.root),
      now: () => new Date(),
      local: store,
      project: project ? { scope: project.scope, domain: project.domain, remote_url: project.remote_url } : undefined,
      ...(remote ? { remote, projectPath: project!.path } : {}),
      agent: client.name,
      log,
    };
  };

  const { server, idle } = createSvcServer({
    profile,
    version: packageVersion(),
    // A project file or store that cannot open fails each call with its one line, and says it here too.
    context: (client) =>
      (opening = openContext(client).catch((err: unknown) => {
        log(err instanceof Error ? err.message : String(err));
        throw err;
      })),
    afterCall: () => {
      for (const w of store?.warnings.splice(0) ?? []) log(`warning: ${w}`);
    },
  });

  const transport = new StdioServerTransport();
  const finished = new Promise<void>((resolve) => {
    let closing = false;
    const shutdown = async (): Promise<void> => {
      if (closing) return;
      closing = true;
      // Let running calls finish their writes (bounded), then close the index.
      await Promise.race([idle(), sleep(10_000, undefined, { ref: false })]);
      await new Promise((r) => setImmediate(r)); // the SDK sends a result just after its handler returns
      await server.close().catch(() => undefined);
      await opening?.catch(() => undefined); // a store opened in the background is closed too
      store?.close();
      resolve();
    };
    process.stdin.once('end', () => void shutdown());
    process.stdin.once('close', () => void shutdown());
    process.once('SIGINT', () => void shutdown());
    process.once('SIGTERM', () => void shutdown());
    server.onclose = () => void shutdown();
  });
  await server.connect(transport);
  if (process.env.SVC_DEBUG) log(`ready: profile ${profile}`);
  await finished;
  return 0;
}
