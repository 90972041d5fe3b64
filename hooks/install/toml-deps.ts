// The TOML editor `svc init` and `svc doctor` use for Codex's config.toml (codex-config.ts). svc's
// modules import it from here, not from the package: the CLI loads it from a bundle of its own
// (scripts/bundle-cli.ts, dist/bin/toml-deps.cjs), so that the other commands, which never edit
// TOML, do not read its 170 KB on every start.

export { parse, patch } from '@decimalturn/toml-patch';
