import { z } from './sdk-deps.js';
import { SvcError } from '../errors.js';
import {
  discoverPacks,
  exportPack,
  FilePackKeys,
  FilePackRegistry,
  installPack,
  listPacks,
  NO_TRUSTED_KEYS,
  previewPack,
  uninstallPack,
  type PackRegistry,
  type PackTrust,
} from '../ops/packs/packs.js';
import * as f from './fields.js';
import { opContext } from './tool-helpers.js';
import { defineTool, type AnyToolDef, type ToolContext } from './types.js';

// The pack tools over engine/ops/packs.ts.
// Installed-pack records live beside the store: on the local store in <store>/packs/. A context
// may bring its own registry (the hub, in its tables) as `packs`. Keys (the creator key that
// signs exports, the keys the user trusts) are the local store's; without one, exports are
// unsigned and no key is trusted. Trusting a key is the user's decision, made on the command
// line (svc packs trust): no tool does it.

/** The context's pack registry: its own (hub), else the local store's `packs/` folder. */
export function packRegistry(ctx: ToolContext): PackRegistry {
  if (ctx.packs) return ctx.packs;
  if (ctx.local) return new FilePackRegistry(ctx.local.root);
  throw new SvcError('invalid', 'packs need a local store or a pack registry; this server has neither');
}

/** The keys the user trusts: the local store's, else none. */
function packTrust(ctx: ToolContext): PackTrust {
  return ctx.local ? new FilePackKeys(ctx.local.root) : NO_TRUSTED_KEYS;
}

export const packsListTool = defineTool({
  name: 'svc_packs_list',
  title: 'List packs',
  description:
    'Installed packs (named bundles of engrams with a manifest and an integrity hash): name, version, engram count, install date.',
  input: z.strictObject({}),
  destructive: false,
  readOnly: true,
  async handler(ctx) {
    return listPacks(packRegistry(ctx));
  },
});

export const packsPreviewTool = defineTool({
  name: 'svc_packs_preview',
  title: 'Preview pack',
  description:
    'Inspect a pack folder without installing it: its manifest, its engrams, the integrity check, who signed it and whether that key is trusted, the security-scan results and warnings.',
  input: z.strictObject({ path: f.text('Folder of the pack (holding its manifest).') }),
  machineLocal: 'reads a pack folder on the machine it runs on (upload a pack with POST /api/v1/packs)',
  destructive: false,
  readOnly: true,
  async handler(ctx, { path }) {
    return previewPack(ctx.backend, packRegistry(ctx), path, packTrust(ctx));
  },
});

export const packsInstallTool = defineTool({
  name: 'svc_packs_install',
  title: 'Install pack',
  description:
    'Install a pack from a folder: verifies its integrity hash and its signature, runs a security scan and reports conflicts with existing engrams (the pack still installs). Refuses a pack whose signature fails; an unsigned pack or one signed by a key the user does not trust installs only with allow_untrusted. Its engrams get ids of this store and scope pack:<name>.',
  input: z.strictObject({
    path: f.text('Folder of the pack (holding its manifest).'),
    allow_untrusted: z
      .boolean()
      .default(false)
      .describe('Install even if the pack is unsigned or signed by a key the user does not trust. Only when the user asked for it.'),
  }),
  machineLocal: 'reads a pack folder on the machine it runs on (upload a pack with POST /api/v1/packs)',
  destructive: false,
  readOnly: false,
  async handler(ctx, { path, allow_untrusted }) {
    return installPack(ctx.backend, packRegistry(ctx), path, opContext(ctx), { trust: packTrust(ctx), allowUntrusted: allow_untrusted });
  },
});

export const packsUninstallTool = defineTool({
  name: 'svc_packs_uninstall',
  title: 'Uninstall pack',
  description: 'Remove an installed pack and its engrams from the store.',
  input: z.strictObject({ name: f.text('Name of the installed pack (see svc_packs_list).') }),
  destructive: true,
  readOnly: false,
  async handler(ctx, { name }) {
    return uninstallPack(ctx.backend, packRegistry(ctx), name, opContext(ctx));
  },
});

export const packsExportTool = defineTool({
  name: 'svc_packs_export',
  title: 'Export pack',
  description:
    "Bundle matching engrams into a pack folder (default ~/svc-packs/<name>) with a manifest, an integrity hash and the store's signature. Engrams holding secrets and private-visibility engrams are left out and reported.",
  input: z.strictObject({
    name: f.text('Name of the new pack.'),
    domain: f.domain('Only engrams of this domain and its sub-domains.').optional(),
    scope: f.scope('Only engrams of this scope.').optional(),
    tags: f.tags('Only engrams carrying one of these tags.').optional(),
    type: f.engramType().optional(),
    description: f.optionalText('What the pack is for, written to the manifest.'),
    creator: f.optionalText('Who made it, written to the manifest.'),
    output: f.optionalText('Folder to write the pack into (default ~/svc-packs/<name>).'),
  }),
  machineLocal: 'writes a pack folder on the machine it runs on (POST /api/v1/packs/export answers with the pack)',
  destructive: false,
  readOnly: false,
  async handler(ctx, args) {
    return exportPack(ctx.backend, args, opContext(ctx), ctx.local ? await new FilePackKeys(ctx.local.root).signer() : null);
  },
});

export const packsDiscoverTool = defineTool({
  name: 'svc_packs_discover',
  title: 'Discover packs',
  description:
    'Packs available to install that are not installed here (or only in an older version): pack folders under ~/svc-packs, and the packs of configured remote stores once those are available; optionally matching a query.',
  input: z.strictObject({
    query: f.optionalText('Words to match against pack names and descriptions.'),
    limit: f.limit(20, 200, 'packs'),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { query, limit }) {
    return discoverPacks(packRegistry(ctx), { query, limit, remote: ctx.project?.remote_url });
  },
});

export const PACK_TOOLS: AnyToolDef[] = [
  packsListTool,
  packsPreviewTool,
  packsInstallTool,
  packsUninstallTool,
  packsExportTool,
  packsDiscoverTool,
];
