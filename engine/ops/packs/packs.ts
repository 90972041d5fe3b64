// Packs: named bundles of engrams (format, integrity hash and links in engine/ops/packs/format.ts,
// signatures in engine/ops/packs/signing.ts, this machine's keys in engine/ops/packs/keys.ts, the
// security scan in engine/ops/packs/scan.ts, the installed-pack record in engine/ops/packs/registry.ts,
// conflict detection in engine/ops/packs/duplicates.ts). The operations, one file each:
//
//   export     ./pack-export.ts    engrams to a signed pack folder (public and template only, no secrets)
//   install    ./pack-install.ts   verify, scan, report conflicts, install under this store's ids
//   list, preview, uninstall  ./pack-manage.ts
//   discover   ./pack-discover.ts  pack folders on this machine not installed yet

export { exportPack, type PackExportInput, type PackExportResult } from './export.js';
export { installPack, type PackInstallOptions, type PackInstallResult } from './install.js';
export {
  listPacks,
  previewPack,
  uninstallPack,
  type PackEngramSummary,
  type PackListEntry,
  type PackPreview,
  type PackUninstallResult,
} from './manage.js';
export { discoverPacks, type DiscoveredPack, type DiscoverResult } from './discover.js';
export { defaultPackDir, type PackManifest, type IntegrityCheck } from './format.js';
export { FilePackRegistry, type InstalledPack, type PackRegistry } from './registry.js';
export { FilePackKeys } from './keys.js';
export { NO_TRUSTED_KEYS, type PackSignatureCheck, type PackTrust, type TrustedKey } from './signing.js';
export type { ScanFinding } from './scan.js';
export type { PackConflict } from './duplicates.js';
