import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

// Requests the hub makes on a user's behalf (packs by URL, webhooks) go only where a user
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
export class RefusedUrl extends Error {}
/** The destination failed: unreachable, slow, an error status, too large (the caller answers 502). */
export class UpstreamFailed extends Error {}

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) PRIVATE.addSubnet(net, bits, 'ipv6');

/** Loopback, private, link-local, shared, documentation, multicast or reserved: not the public internet. */
export function isPrivateAddress(address: string): boolean {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4mapped) return PRIVATE.check(v4mapped[1]!, 'ipv4');
  return PRIVATE.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** The URL, checked against the policy, and the address to connect to. */
export async function checkUrl(raw: string, policy: OutboundPolicy): Promise<{ url: URL; address: string; family: number }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedUrl(`"${raw.slice(0, 200)}" is not a URL`);
  }
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:')) throw new RefusedUrl(`only https URLs are fetched (got ${url.protocol.replace(':', '')})`);
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
    if (inside) throw new RefusedUrl(`${host} is a private, loopback or link-local address (${inside.address}); this hub fetches only public ones`);
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

interface Sent {
  host: string;
  status: number;
  body: Buffer;
  contentType: string;
}

async function send(raw: string, method: 'GET' | 'POST', headers: Record<string, string>, payload: string | undefined, policy: OutboundPolicy): Promise<Sent> {
  const { url, address, family } = await checkUrl(raw, policy);
  // Connect to the checked address whatever the resolver would say now.
  const pinned: LookupFunction = (_host, opts, cb) => {
    if ((opts as { all?: boolean }).all) (cb as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else cb(null, address, family);
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => req.destroy(new UpstreamFailed(`${url.host} did not answer within ${policy.timeoutMs} ms`)), policy.timeoutMs);
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
        resolve({ host: url.host, status, body: Buffer.concat(chunks), contentType: String(res.headers['content-type'] ?? '') });
      });
    });
    req.on('error', fail);
    req.end(payload);
  });
}
