// The commands an agent host runs on every prompt or tool call: the hooks, and `learn`, `recall`
// and `inject` (which hooks and hosts also call). They run from a bundle of their own,
// dist/bin/svc-prompt.cjs, a third of the full one's bytes: each process reads its whole bundle
// and V8's code cache for it before anything runs (scripts/bundle-cli.ts builds both).

/** Whether `svc <name>` runs from the prompt bundle (bin/dispatch.mts holds them in its table; a test checks that its prompt bundle holds those and no others). */
export function isPromptCommand(name: string | undefined): boolean {
  return name !== undefined && (name.startsWith('hook-') || PROMPT_COMMANDS.has(name));
}

const PROMPT_COMMANDS = new Set(['learn', 'recall', 'inject', '--version', '-v']);
