import { scimInvalid } from './scim-errors.js';

// The schemas this server speaks (RFC 7643 §4, §8.7): core User and Group, the enterprise user
// extension; attribute names (case-insensitive on the wire), which attributes are multi-valued,
// which compare case-exactly; the discovery documents; and the attributes/excludedAttributes
// projection.

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const CONTENT_TYPE = 'application/scim+json';

type AttrType = 'string' | 'boolean' | 'complex' | 'reference' | 'dateTime';

interface AttrDef {
  name: string;
  type: AttrType;
  multiValued?: boolean;
  required?: boolean;
  caseExact?: boolean;
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned?: 'always' | 'default' | 'never';
  uniqueness?: 'none' | 'server';
  subAttributes?: AttrDef[];
}

const s = (name: string, extra: Partial<AttrDef> = {}): AttrDef => ({ name, type: 'string', ...extra });
const multi = (name: string, subs: AttrDef[]): AttrDef => ({ name, type: 'complex', multiValued: true, subAttributes: subs });
const typed = [s('value'), s('display'), s('type'), { name: 'primary', type: 'boolean' as const }];

const USER_ATTRS: AttrDef[] = [
  s('userName', { required: true, uniqueness: 'server' }),
  {
    name: 'name',
    type: 'complex',
    subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) => s(n)),
  },
  s('displayName'),
  s('nickName'),
  s('profileUrl'),
  s('title'),
  s('userType'),
  s('preferredLanguage'),
  s('locale'),
  s('timezone'),
  { name: 'active', type: 'boolean' },
  s('password', { mutability: 'writeOnly', returned: 'never' }),
  multi('emails', typed),
  multi('phoneNumbers', typed),
  multi('ims', typed),
  multi('photos', typed),
  multi('addresses', [
    ...['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((n) => s(n)),
    { name: 'primary', type: 'boolean' },
  ]),
  { ...multi('groups', [s('value'), s('$ref'), s('display'), s('type')]), mutability: 'readOnly' },
  multi('entitlements', typed),
  multi('roles', typed),
  multi('x509Certificates', typed),
];

const ENTERPRISE_ATTRS: AttrDef[] = [
  s('employeeNumber'),
  s('costCenter'),
  s('organization'),
  s('division'),
  s('department'),
  { name: 'manager', type: 'complex', subAttributes: [s('value'), s('$ref'), s('displayName', { mutability: 'readOnly' })] },
];

const GROUP_ATTRS: AttrDef[] = [
  s('displayName', { required: true }),
  multi('members', [s('value', { mutability: 'immutable' }), s('$ref'), s('display'), s('type')]),
];

/** Attributes every resource has (RFC 7643 §3.1); id and externalId compare case-exactly. */
const COMMON_ATTRS: AttrDef[] = [
  s('id', { mutability: 'readOnly', returned: 'always', caseExact: true, uniqueness: 'server' }),
  s('externalId', { caseExact: true }),
  {
    name: 'meta',
    type: 'complex',
    mutability: 'readOnly',
    subAttributes: [
      s('resourceType'),
      { name: 'created', type: 'dateTime' },
      { name: 'lastModified', type: 'dateTime' },
      s('location'),
      s('version'),
    ],
  },
];

export type ResourceKind = 'User' | 'Group';

const ALL: Record<ResourceKind, AttrDef[]> = { User: [...COMMON_ATTRS, ...USER_ATTRS], Group: [...COMMON_ATTRS, ...GROUP_ATTRS] };

function find(defs: AttrDef[] | undefined, name: string): AttrDef | undefined {
  const lower = name.toLowerCase();
  return defs?.find((d) => d.name.toLowerCase() === lower);
}

/** The extension URN a path or key starts with (any case), or undefined. */
export function extensionOf(kind: ResourceKind, name: string): string | undefined {
  return kind === 'User' && name.toLowerCase().startsWith(ENTERPRISE_SCHEMA.toLowerCase()) ? ENTERPRISE_SCHEMA : undefined;
}

/** The core schema's URN prefix stripped ("urn:…:core:2.0:User:userName" is "userName"). */
export function stripCoreUrn(kind: ResourceKind, name: string): string {
  const core = (kind === 'User' ? USER_SCHEMA : GROUP_SCHEMA).toLowerCase() + ':';
  return name.toLowerCase().startsWith(core) ? name.slice(core.length) : name;
}

/** The definition of an attribute (and sub-attribute) of a resource or of its extension. */
export function attributeDef(kind: ResourceKind, ext: string | undefined, attr: string, sub?: string): AttrDef | undefined {
  const top = find(ext ? ENTERPRISE_ATTRS : ALL[kind], attr);
  return sub === undefined ? top : find(top?.subAttributes, sub);
}

/** The schema's spelling of a name, or the name as sent when the schema does not know it. */
export function canonicalName(kind: ResourceKind, ext: string | undefined, attr: string, sub?: string): string {
  return attributeDef(kind, ext, attr, sub)?.name ?? sub ?? attr;
}

export const isMultiValued = (kind: ResourceKind, ext: string | undefined, attr: string): boolean =>
  attributeDef(kind, ext, attr)?.multiValued === true;

export const isCaseExact = (kind: ResourceKind, ext: string | undefined, attr: string, sub?: string): boolean =>
  attributeDef(kind, ext, attr, sub)?.caseExact === true;

/** Attributes a client may not set (RFC 7643 mutability readOnly). */
export const isReadOnly = (kind: ResourceKind, attr: string): boolean => attributeDef(kind, undefined, attr)?.mutability === 'readOnly';

/** A key of an object, matched case-insensitively. */
export function keyOf(obj: Record<string, unknown>, name: string): string | undefined {
  if (name in obj) return name;
  const lower = name.toLowerCase();
  return Object.keys(obj).find((k) => k.toLowerCase() === lower);
}

/** Parses the attributes / excludedAttributes query parameters: comma-separated attribute paths. */
export function attributeList(raw: string | undefined): string[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const list = raw
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (list.some((a) => !/^[A-Za-z0-9:._$-]{1,200}$/.test(a)))
    throw scimInvalid('invalidValue', `attributes must be a comma-separated list of attribute names (got "${raw.slice(0, 100)}")`);
  return list;
}

type Obj = Record<string, unknown>;

export interface AttrPath {
  /** The extension object holding it, or undefined for a core attribute. */
  ext: string | undefined;
  /** Empty when the path names the whole extension. */
  attr: string;
  sub?: string;
}

/** A filter or projection path: [extension URN:]attr[.sub], the core URN prefix dropped. */
export function splitPath(kind: ResourceKind, path: string): AttrPath {
  const ext = extensionOf(kind, path);
  const rest = ext ? path.slice(ext.length + 1) : stripCoreUrn(kind, path);
  const [attr, sub] = rest.split('.', 2) as [string, string | undefined];
  return { ext, attr, ...(sub ? { sub } : {}) };
}

const asObj = (v: unknown): Obj | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);

/**
 * The resource with only the named attributes (id and schemas are always returned), or without
 * the excluded ones (RFC 7644 §3.9). Names may be "attr", "attr.sub" or carry a schema URN.
 */
export function project(kind: ResourceKind, resource: Obj, only?: string[], excluded?: string[]): Obj {
  if (only) return pick(kind, resource, only);
  if (excluded) return omit(kind, resource, excluded);
  return resource;
}

function pick(kind: ResourceKind, resource: Obj, paths: string[]): Obj {
  const out: Obj = { schemas: resource.schemas, id: resource.id };
  for (const path of paths) {
    const { ext, attr, sub } = splitPath(kind, path);
    const from = ext ? asObj(resource[ext]) : resource;
    if (!from) continue;
    if (attr === '') {
      out[ext!] = from;
      continue;
    }
    const key = keyOf(from, attr);
    if (!key) continue;
    const to = ext ? ((asObj(out[ext]) ?? (out[ext] = {})) as Obj) : out;
    to[key] = sub ? pickSub(from[key], sub, to[key]) : from[key];
  }
  return out;
}

function omit(kind: ResourceKind, resource: Obj, paths: string[]): Obj {
  const out = structuredClone(resource);
  for (const path of paths) {
    const { ext, attr, sub } = splitPath(kind, path);
    const from = ext ? asObj(out[ext]) : out;
    if (!from) continue;
    if (attr === '') {
      delete out[ext!];
      continue;
    }
    const key = keyOf(from, attr);
    if (!key || (!ext && (key === 'id' || key === 'schemas'))) continue;
    if (!sub) delete from[key];
    else
      for (const item of Array.isArray(from[key]) ? (from[key] as unknown[]) : [from[key]]) {
        const o = asObj(item);
        const k = o && keyOf(o, sub);
        if (k) delete o[k];
      }
  }
  return out;
}

/** One sub-attribute of a complex value, or of each element of a multi-valued one, added to what was picked already. */
function pickSub(value: unknown, sub: string, already: unknown): unknown {
  const one = (v: unknown, prev: unknown): unknown => {
    const o = asObj(v);
    const k = o && keyOf(o, sub);
    return k ? { ...asObj(prev), [k]: o[k] } : prev;
  };
  if (Array.isArray(value)) return value.map((v, i) => one(v, Array.isArray(already) ? already[i] : undefined) ?? {});
  return one(value, already);
}

// Discovery documents (RFC 7643 §5, §6, §7).

export function serviceProviderConfig(base: string): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: 'https://datatracker.ietf.org/doc/html/rfc7644',
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'SCIM bearer token',
        description: 'A SCIM token (svc_scim_…) an admin creates with POST /api/v1/admin/scim-tokens',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

/** The largest page a list answers (count above it is lowered to it). */
export const MAX_COUNT = 200;

export function resourceTypes(base: string): Record<string, unknown>[] {
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A person of the organization (a hub user of kind person)',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'A hub group; its scope is group:<path>',
      schema: GROUP_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

function describe(d: AttrDef): Record<string, unknown> {
  return {
    name: d.name,
    type: d.type,
    multiValued: d.multiValued ?? false,
    description: d.name,
    required: d.required ?? false,
    caseExact: d.caseExact ?? false,
    mutability: d.mutability ?? 'readWrite',
    returned: d.returned ?? 'default',
    uniqueness: d.uniqueness ?? 'none',
    ...(d.subAttributes ? { subAttributes: d.subAttributes.map(describe) } : {}),
  };
}

export function schemas(base: string): Record<string, unknown>[] {
  const doc = (id: string, name: string, attrs: AttrDef[]) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id,
    name,
    description: `${name} schema`,
    attributes: attrs.map(describe),
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    doc(USER_SCHEMA, 'User', USER_ATTRS),
    doc(GROUP_SCHEMA, 'Group', GROUP_ATTRS),
    doc(ENTERPRISE_SCHEMA, 'EnterpriseUser', ENTERPRISE_ATTRS),
  ];
}
