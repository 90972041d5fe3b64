import type { z } from 'zod/v4';
import type { EmbedderProvider, EngramBackend } from '../backend.js';
import type { RerankSetting } from '../rerank/reranker.js';
import type { RemoteConfig } from '../remote/hub-client.js';
import type { PackRegistry } from '../ops/packs/registry.js';

// The MCP tool layer works on what its caller hands it: a backend, an embedder provider and a
// context. It never opens a store itself, so `svc mcp` (stdio, local store) and the hub (HTTP,
// one engine per session) serve the very same tools.

/**
 * What only a local store can tell (status and doctor); absent on the hub. Spelled out rather than
 * picked from the local backend's type: the tool layer names the contract, never an implementation.
 */
export interface LocalDetails {
  readonly root: string;
  idPrefix(): string;
  /** Files set aside on opening because they could not be read, and why. */
  quarantined(): Array<{ file: string; reason: string }>;
  vectorStats(model: string): { vectors: number; pending: number };
}

export interface ToolContext {
  backend: EngramBackend;
  embedder: EmbedderProvider;
  /** The cross-encoder recall and inject rerank with, when the deployment enables one (SVC_RERANKER). */
  reranker?: RerankSetting;
  now(): Date;
  /** Local-store details; absent on the hub. */
  local?: LocalDetails;
  /** Defaults of the project the server runs in (`.svc.yaml`): learn and sessions use its scope and domain. */
  project?: { scope?: string; domain?: string; remote_url?: string };
  /** Where installed packs are recorded when not in a local store (the hub's tables). */
  packs?: PackRegistry;
  /** The hub the project names (.svc.yaml remote_url and remote_token): team writes and the outbox. */
  remote?: RemoteConfig;
  /** The project's .svc.yaml (discovery registers scopes there). */
  projectPath?: string;
  /** The calling agent (the MCP client's name): the default agent of episodes and sessions. */
  agent?: string;
  /** Notes for the operator (stderr on stdio), never for the protocol stream. */
  log?(message: string): void;
  /**
   * Runs before every tool, a nested one included (svc_admin's action), with its parsed
   * arguments; throws to refuse. The hub's tool policy sits here, under the tool layer, so no
   * tool reaches another without it.
   */
  authorize?(tool: AnyToolDef, args: Record<string, unknown>): void | Promise<void>;
  /** Told of the error a call fails with (the hub's audit row takes its status from it). */
  failed?(error: unknown): void;
}

export type ToolInput = z.ZodObject;

export interface ToolDef<S extends ToolInput = ToolInput> {
  /** Part of the contract with clients: never renamed. */
  name: string;
  title: string;
  description: string;
  /** A strict object schema: unknown arguments are refused. */
  input: S;
  /** Retires, deletes or overwrites data, or reaches outside the machine; svc_admin refuses these. */
  destructive: boolean;
  /** Changes nothing. */
  readOnly: boolean;
  /** Set on tools that work on the files of the machine they run on (why, in a phrase): the hub never runs them. */
  machineLocal?: string;
  /** Runs another tool named in its arguments (svc_admin): that tool is authorized and counted, not this one. */
  dispatches?: boolean;
  handler: (ctx: ToolContext, args: z.output<S>) => Promise<unknown>;
}

export type AnyToolDef = ToolDef<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Defines a tool with its handler's arguments inferred from the schema. */
export function defineTool<S extends ToolInput>(def: ToolDef<S>): AnyToolDef {
  return def as AnyToolDef;
}
