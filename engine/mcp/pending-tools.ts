import { z } from 'zod/v4';
import * as f from './fields.js';
import { defineTool } from './types.js';

// Tools whose engine part does not exist yet. Each is registered with its final input schema
// (from the flags of the matching command in spec/cli.md), so clients see the real contract;
// a call is validated, then answers "<tool> is not available yet in this version". A tool gets a
// handler here (or moves to its own module) when its engine operation lands.


const scopesDiscover = defineTool({
  name: 'svc_scopes_discover',
  title: 'Discover scopes',
  description: 'Ask the configured remote stores which scopes this user is authorized for; with register: true, add the unregistered shared-family scopes.',
  input: z.strictObject({ register: z.boolean().default(false).describe('Register the discovered shared scopes that are not registered yet.') }),
  destructive: false,
  readOnly: false,
});

const suggestScope = defineTool({
  name: 'svc_suggest_scope',
  title: 'Suggest scope',
  description:
    'Which scope a statement would be routed to when learned without one: the best-matching scope with a confidence and the alternatives; global when no match is confident.',
  input: z.strictObject({
    statement: f.text('The statement about to be learned.'),
    domain: f.domain().optional(),
    limit: f.limit(3, 20, 'alternatives'),
  }),
  destructive: false,
  readOnly: true,
});

const rescope = defineTool({
  name: 'svc_rescope',
  title: 'Rescope',
  description: 'Move engrams to another scope (e.g. from global to project:<name>). Moving to a shared scope makes them visible to others.',
  input: z.strictObject({
    ids: z.array(f.engramId()).min(1, { error: 'must name at least one engram' }).max(500, { error: 'must name at most 500 engrams' }).describe('The engrams to move.'),
    scope: f.scope('The scope to move them to.'),
    reason: f.optionalText('Why, kept in each engram\'s history.'),
  }),
  destructive: true,
  readOnly: false,
});

const outbox = defineTool({
  name: 'svc_outbox',
  title: 'Outbox',
  description: 'Writes to remote team scopes that are queued after a timeout or failure, oldest first; with retry: true, try to deliver them now.',
  input: z.strictObject({
    retry: z.boolean().default(false).describe('Try to deliver the queued writes now.'),
    limit: f.limit(50, 1000, 'queued writes'),
  }),
  destructive: false,
  readOnly: false,
});

/** Tools registered with their contract whose engine part needs the hub (discovery, outbox) or is still to come. */
export const PENDING_TOOLS = { scopesDiscover, suggestScope, rescope, outbox };
