import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

// Requests the hub makes on a user's behalf (packs by URL, webhooks, sign-in providers) go only where a user
// of a hosted service could legitimately point them: https, a public address, no redirect, a
// deadline and a size cap. The name is resolved once and the connection made to the address
// that was checked, so a DNS answer that changes between check and connect (rebinding) cannot
// reach an internal service. A deployment that must reach its own network (tests, a lab) sets
// SVC_HUB_ALLOW_PRIVATE_URLS=1, which also allows plain http.

export interface OutboundPolicy {
  allowPrivate: boolean;
  timeoutMs: number;
  maxBytes: number;
}

/** A URL the policy refuses (the caller answers 400). */
export class RefusedUrl extends Error {
  override name = 'RefusedUrl';
}
/** The destination failed: unreachable, slow, an error status, too large (the caller answers 502). */
export class UpstreamFailed extends Error {
  override name = 'UpstreamFailed';
}

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/** The IPv4 address an IPv6 one carries, for the forms that route to it; null for the others. */
function embeddedIpv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const [, p1 = 0, p2 = 0, , , , p6 = 0, p7 = 0] = a.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (a.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return v4(p6, p7);
    case 'rfc6052': // NAT64 64:ff9b::a.b.c.d (the local-use 64:ff9b:1::/48 is refused before)
      return v4(p6, p7);
    case '6to4': // 2002:aabb:ccdd::
      return v4(p1, p2);
    default:
      return null;
  }
}

/** A public IPv4 address: ipaddr.js's plain "unicast", none of its special ranges. */
const publicV4 = (a: ipaddr.IPv4): boolean => a.range() === 'unicast';

function publicV6(a: ipaddr.IPv6): boolean {
  // Local-use NAT64 (RFC 8215) translates into the operator's own network.
  if (a.match(ipaddr.IPv6.parse('64:ff9b:1::'), 48)) return false;
  const range = a.range();
  if (range === 'teredo') {
    // 2001:0:<server v4>:<flags>:<port>:<client v4, inverted>: both must be public.
    const [, , s1 = 0, s2 = 0, , , c1 = 0, c2 = 0] = a.parts;
    const server = new ipaddr.IPv4([s1 >> 8, s1 & 0xff, s2 >> 8, s2 & 0xff]);
    const client = new ipaddr.IPv4([(~c1 >> 8) & 0xff, ~c1 & 0xff, (~c2 >> 8) & 0xff, ~c2 & 0xff]);
    return publicV4(server) && publicV4(client);
  }
  const inner = embeddedIpv4(a);
  if (inner) return publicV4(inner);
  // Anything else ipaddr.js names (loopback, link-local, unique local, site-local, multicast,
  // unspecified, documentation, ...) is not public; nor is unicast outside 2000::/3, where
  // IPv4-compatible addresses (::a.b.c.d, deprecated) and other reserved blocks live.
  return range === 'unicast' && a.match(ipaddr.IPv6.parse('2000::'), 3);
}

/** Loopback, private, link-local, shared, documentation, multicast or reserved (an embedded IPv4 address counted as itself): not the public internet. */
export function isPrivateAddress(address: string): boolean {
  let a: Parsed;
  try {
    const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
    // ipaddr.js reads a dotted tail as IPv4-mapped (::8.8.8.8 as ::ffff:808:808); the URL parser writes it in hex first.
    a = ipaddr.parse(bare.includes(':') ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare);
  } catch {
    return true;
  }
  return a.kind() === 'ipv4' ? !publicV4(a as ipaddr.IPv4) : !publicV6(a as ipaddr.IPv6);
}

/** The URL, checked against the policy, and the address to connect to. */
export async function checkUrl(raw: string, policy: OutboundPolicy): Promise<{ url: URL; address: string; family: number }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedUrl(`"${raw.slice(0, 200)}" is not a URL`);
  }
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:'))
    throw new RefusedUrl(`only https URLs are fetched (got ${url.protocol.replace(':', '')})`);
  if (url.username || url.password) throw new RefusedUrl('URLs with credentials in them are not fetched');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await dnsLookup(host, { all: true, verbatim: true });
  } catch {
    throw new UpstreamFailed(`${host} does not resolve`);
  }
  if (addresses.length === 0) throw new UpstreamFailed(`${host} does not resolve`);
  if (!policy.allowPrivate) {
    const inside = addresses.find((a) => isPrivateAddress(a.address));
    if (inside)
      throw new RefusedUrl(`${host} is a private, loopback or link-local address (${inside.address}); this hub fetches only public ones`);
  }
  return { url, ...addresses[0]! };
}

/** GETs a URL under the policy; the body as bytes, with its content type. Anything but a 200 fails. */
export async function fetchOutbound(raw: string, policy: OutboundPolicy): Promise<{ body: Buffer; contentType: string }> {
  const res = await send(raw, 'GET', { accept: 'application/json' }, undefined, policy);
  if (res.status !== 200) throw new UpstreamFailed(`${res.host} answered ${res.status}`);
  return { body: res.body, contentType: res.contentType };
}

/** POSTs a body under the policy (webhooks); the receiver's status, whatever it is but a redirect. */
export async function postOutbound(raw: string, body: string, headers: Record<string, string>, policy: OutboundPolicy): Promise<number> {
  return (await send(raw, 'POST', headers, body, policy)).status;
}

/** Any request under the policy (sign-in providers' endpoints): the answer whatever its status but a redirect. */
export async function requestOutbound(
  raw: string,
  init: { method: string; headers: Record<string, string>; body?: string | Buffer },
  policy: OutboundPolicy,
): Promise<Sent> {
  const headers = { ...init.headers };
  // A length rather than chunks: some token endpoints take nothing else.
  if (init.body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length'))
    headers['content-length'] = String(Buffer.byteLength(init.body));
  return send(raw, init.method, headers, init.body, policy);
}

export interface Sent {
  host: string;
  status: number;
  body: Buffer;
  contentType: string;
  headers: IncomingMessage['headers'];
}

async function send(
  raw: string,
  method: string,
  headers: Record<string, string>,
  payload: string | Buffer | undefined,
  policy: OutboundPolicy,
): Promise<Sent> {
  const { url, address, family } = await checkUrl(raw, policy);
  // Connect to the checked address whatever the resolver would say now.
  const pinned: LookupFunction = (_host, opts, cb) => {
    if ((opts as { all?: boolean }).all)
      (cb as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else cb(null, address, family);
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(
      () => req.destroy(new UpstreamFailed(`${url.host} did not answer within ${policy.timeoutMs} ms`)),
      policy.timeoutMs,
    );
    const fail = (err: Error) => {
      clearTimeout(deadline);
      reject(err instanceof UpstreamFailed || err instanceof RefusedUrl ? err : new UpstreamFailed(`${url.host}: ${err.message}`));
    };
    const req = request(url, { method, lookup: pinned, headers: { 'user-agent': 'svc-hub', ...headers } }, (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.resume();
        return fail(new UpstreamFailed(`${url.host} answered ${status} (a redirect); redirects are not followed`));
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > policy.maxBytes) {
        res.destroy();
        return fail(new UpstreamFailed(`${url.host} sends ${declared} bytes; at most ${policy.maxBytes} are taken`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > policy.maxBytes) res.destroy(new UpstreamFailed(`${url.host} sent more than ${policy.maxBytes} bytes`));
        else chunks.push(c);
      });
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(deadline);
        resolve({
          host: url.host,
          status,
          body: Buffer.concat(chunks),
          contentType: String(res.headers['content-type'] ?? ''),
          headers: res.headers,
        });
      });
    });
    req.on('error', fail);
    req.end(payload);
  });
}
