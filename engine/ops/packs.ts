// Packs: named bundles of engrams (format, integrity hash and links in engine/packs/format.ts,
// signatures in engine/packs/signing.ts, this machine's keys in engine/packs/keys.ts, the
// security scan in engine/packs/scan.ts, the installed-pack record in engine/packs/registry.ts,
// conflict detection in engine/packs/conflicts.ts). The operations, one file each:
//
//   export     ./pack-export.ts    engrams to a signed pack folder (public and template only, no secrets)
//   install    ./pack-install.ts   verify, scan, report conflicts, install under this store's ids
//   list, preview, uninstall  ./pack-manage.ts
//   discover   ./pack-discover.ts  pack folders on this machine not installed yet

export { exportPack, type PackExportInput, type PackExportResult } from './pack-export.js';
export { installPack, type PackInstallOptions, type PackInstallResult } from './pack-install.js';
export { listPacks, previewPack, uninstallPack, type PackEngramSummary, type PackListEntry, type PackPreview, type PackUninstallResult } from './pack-manage.js';
export { discoverPacks, type DiscoveredPack, type DiscoverResult } from './pack-discover.js';
export { defaultPackDir, type PackManifest, type IntegrityCheck } from '../packs/format.js';
export { FilePackRegistry, type InstalledPack, type PackRegistry } from '../packs/registry.js';
export { FilePackKeys } from '../packs/keys.js';
export { NO_TRUSTED_KEYS, type PackSignatureCheck, type PackTrust, type TrustedKey } from '../packs/signing.js';
export type { ScanFinding } from '../packs/scan.js';
export type { PackConflict } from '../packs/conflicts.js';
