import { invalid } from '../errors.js';

// The token budget of an injection, one rule for every front end (CLI, MCP, hub, hooks). Kept in
// a module of its own so the hooks check it without loading the injection code.

export const DEFAULT_INJECT_BUDGET = 2000;
/** One rule for every front end (CLI, MCP, hub, hooks): a budget is 50 to 100,000 tokens. */
export const MIN_INJECT_BUDGET = 50;
export const MAX_INJECT_BUDGET = 100_000;

/** Refuses a budget outside the rule; `name` is how the caller spells it (`--budget`, `budget`). */
export function checkBudget(budget: number, name = 'budget'): number {
  if (!Number.isInteger(budget) || budget < MIN_INJECT_BUDGET || budget > MAX_INJECT_BUDGET) {
    throw invalid(`${name} must be a whole number of tokens from ${MIN_INJECT_BUDGET} to ${MAX_INJECT_BUDGET} (got ${budget})`);
  }
  return budget;
}
