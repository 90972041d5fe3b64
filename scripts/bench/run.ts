// Entry of `npm run bench [subcommand] [flags]`. Each benchmark is its own module exporting
// `run(argv)`, imported only when it runs. No subcommand runs the engine benchmark.
// To add one (e.g. `locomo`, `hub`): write scripts/bench/<name>.ts and list it below.

type Bench = { run(argv: string[]): Promise<number> };

const BENCHES: Record<string, () => Promise<Bench>> = {
  engine: () => import('./engine.js'),
  curve: () => import('./curve.js'),
  locomo: () => import('./locomo.js'),
  hub: () => import('./hub.js'),
  team: () => import('./team.js'),
  'log-cost': () => import('./log-cost.js'),
  'metrics-cost': () => import('./metrics-cost.js'),
};

const USAGE = `Usage: npm run bench -- [${Object.keys(BENCHES).join('|')}] [--json] [flags]
  engine (default)   learn, recall, RSS, rebuild on a synthetic store; --engrams N (default 10000)
  curve              recall, svc recall, index build, rebuild and peak RSS as the store grows;
                     --sizes 10000,50000,100000
  locomo FILE...     retrieval quality on LoCoMo conversations (R@k, MRR, latency); --fast for BM25 only,
                     --mcp to learn and ask through svc mcp over stdio
  hub                the hub under load from a separate process (autocannon): recall and create
                     on PGlite and PostgreSQL; --sizes 10000,100000 --databases pglite,postgres --duration 10
  team               svc recall and hook-inject with a hub on loopback beside local only;
                     --engrams N (default 10000) --hub pglite|postgres
  log-cost           hub recall req/s with and without the access log, in one process; --size --window --windows
  metrics-cost       hub recall req/s with and without the metrics middleware; --size --seconds --turns
  --json             print one JSON object as the last line of output
`;

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const named = argv[0] !== undefined && !argv[0].startsWith('-');
  const name = named ? argv[0]! : 'engine';
  const load = BENCHES[name];
  if (!load) {
    process.stderr.write(`bench: unknown benchmark "${name}"\n${USAGE}`);
    return 1;
  }
  const note = (await import('./proc.js')).extraCaCertsNote();
  if (note) process.stdout.write(`${note}\n`);
  return (await load()).run(named ? argv.slice(1) : argv);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
