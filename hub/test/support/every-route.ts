// One call to every authenticated route of the REST API, with a plausible body: for the checks
// that must hold on all of them (401 without a token, 429 over the limit).
export const EVERY_ROUTE: Array<[method: string, path: string, body?: unknown]> = [
  ['GET', '/me'], ['GET', '/engrams'], ['POST', '/engrams', { statement: 'x' }], ['GET', '/engrams/ENG-X-2026-0101-001'],
  ['PATCH', '/engrams/ENG-X-2026-0101-001', { tags: [] }], ['DELETE', '/engrams/ENG-X-2026-0101-001'],
  ['POST', '/engrams/ENG-X-2026-0101-001/feedback', { signal: 'positive' }], ['POST', '/engrams/ENG-X-2026-0101-001/promote'],
  ['POST', '/engrams/ENG-X-2026-0101-001/pin'], ['POST', '/recall', { query: 'x' }], ['POST', '/recall/bm25', { query: 'x' }],
  ['POST', '/inject', { task: 'x' }], ['GET', '/episodes'], ['POST', '/episodes', { summary: 'x' }], ['GET', '/episodes/EP-X'],
  ['POST', '/sessions', {}], ['GET', '/sessions/SES-X'], ['POST', '/sessions/SES-X/end', {}], ['GET', '/packs'],
  ['POST', '/packs/export', { name: 'p' }], ['DELETE', '/packs/p'], ['GET', '/admin/users'], ['POST', '/admin/users', { name: 'u' }],
  ['GET', '/admin/groups'], ['POST', '/admin/groups', { path: 'g' }], ['POST', '/admin/groups/g/members', { user_id: 'x' }],
  ['GET', '/admin/api-keys'], ['POST', '/admin/api-keys', { user_id: 'x' }], ['DELETE', '/admin/api-keys/x'],
  ['GET', '/admin/audit'], ['GET', '/admin/insights'], ['GET', '/admin/audit/checkpoint'], ['GET', '/me/api-keys'], ['GET', '/me/scopes'],
  ['POST', '/me/api-keys', { name: 'k' }], ['DELETE', '/me/api-keys/x'], ['PATCH', '/admin/users/x', { role: 'viewer' }],
  ['POST', '/admin/invitations', { user_id: 'x' }], ['POST', '/admin/login-links', {}], ['GET', '/admin/mail'], ['GET', '/admin/mcp/tools'], ['PUT', '/admin/mcp/tools', { deny: [] }],
  ['GET', '/admin/webhooks'], ['POST', '/admin/webhooks', { url: 'https://example.com/h', events: ['engram.created'] }],
  ['GET', '/admin/webhooks/WH-x'], ['PATCH', '/admin/webhooks/WH-x', { state: 'active' }], ['DELETE', '/admin/webhooks/WH-x'],
  ['POST', '/admin/webhooks/WH-x/test'], ['POST', '/packs', { url: 'https://example.com/p.json' }],
  ['GET', '/admin/identity-providers'], ['POST', '/admin/identity-providers', { name: 'gh', kind: 'github', client_id: 'a', client_secret: 'b' }],
  ['GET', '/admin/identity-providers/x'], ['PATCH', '/admin/identity-providers/x', { create_users: true }], ['DELETE', '/admin/identity-providers/x'],
  ['GET', '/admin/scim-tokens'], ['POST', '/admin/scim-tokens', { name: 'entra' }], ['DELETE', '/admin/scim-tokens/x'],
  ['GET', '/admin/groups/g/members'], ['DELETE', '/admin/groups/g/members/x'], ['GET', '/admin/audit/verify'],
  ['GET', '/engrams/ENG-X-2026-0101-001/history'], ['GET', '/sessions'],
  ['GET', '/me/grants'], ['GET', '/me/export'], ['DELETE', '/me/grants/x'], ['GET', '/admin/grants'], ['DELETE', '/admin/grants/x'], ['DELETE', '/admin/users/x'],
  // Last: it ends the token it is called with.
  ['DELETE', '/me/token'],
];
