// The esbuild options of every bundle the build writes (the CLI's, its side bundles, the
// validator's): CommonJS for Node 20, minified. Every command reads its whole bundle and makes
// it a string before it runs: about 4 ms a megabyte here, as much again to decode. Whitespace and
// syntax minified, the CLI's bundle was 0.95 MB instead of 1.24 (`svc recall` and `svc --version`
// 6-8 ms faster, 15 interleaved runs beside a 72 ms `node -e 0`). Names are kept, so a stack
// trace still names its functions. Bundles are returned, not written (`write: false`).

export const COMMON_JS = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  write: false,
  logLevel: 'warning',
} as const;
