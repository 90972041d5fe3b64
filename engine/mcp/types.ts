import type { z } from 'zod/v4';
import type { EngramBackend } from '../backend.js';
import type { EmbedderState } from '../embed/embedder.js';
import type { QuarantinedFile } from '../store/local-store.js';

// The MCP tool layer works on what its caller hands it: a backend, an embedder provider and a
// context. It never opens a store itself, so `svc mcp` (stdio, local store) and the hub (HTTP,
// one engine per session) serve the very same tools.

/** The dense leg, loaded on first need and cached by the provider. */
export interface EmbedderProvider {
  /** Loads the model (downloading it when allowed); never throws for a missing model. */
  load(): Promise<EmbedderState>;
  /** The state if the model was already loaded in this process, without loading anything. */
  peek(): EmbedderState | undefined;
  /** Probes the model without downloading (status, doctor). */
  probe(): Promise<EmbedderState>;
}

/** What only a local store can tell (status and doctor); absent on the hub. */
export interface LocalDetails {
  readonly root: string;
  idPrefix(): string;
  quarantined(): QuarantinedFile[];
  vectorStats(model: string): { vectors: number; pending: number };
}

export interface ToolContext {
  backend: EngramBackend;
  embedder: EmbedderProvider;
  now(): Date;
  /** Local-store details; absent on the hub. */
  local?: LocalDetails;
  /** Defaults of the project the server runs in (`.svc.yaml`): learn and sessions use its scope and domain. */
  project?: { scope?: string; domain?: string; remote_url?: string };
  /** The calling agent (the MCP client's name): the default agent of episodes and sessions. */
  agent?: string;
  /** Notes for the operator (stderr on stdio), never for the protocol stream. */
  log?(message: string): void;
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
  /** Absent: the engine part does not exist yet; the call answers "<tool> is not available yet in this version". */
  handler?: (ctx: ToolContext, args: z.output<S>) => Promise<unknown>;
}

export type AnyToolDef = ToolDef<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Defines a tool with its handler's arguments inferred from the schema. */
export function defineTool<S extends ToolInput>(def: ToolDef<S>): AnyToolDef {
  return def as AnyToolDef;
}
