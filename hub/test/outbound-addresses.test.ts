import { describe, expect, it } from 'vitest';
import { checkUrl, isPrivateAddress } from '../net/outbound.js';

// The outbound policy's address check (webhooks, packs by URL, sign-in providers): every way of
// writing a private, loopback or link-local address, IPv6 forms that carry an IPv4 address
// included, is refused; public addresses, however written, are not.

const REFUSED = [
  // IPv4, as the webhook and pack tests had them
  '127.0.0.1',
  '10.1.2.3',
  '172.20.0.1',
  '192.168.1.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '224.0.0.1',
  '198.18.0.1',
  '255.255.255.255',
  '240.0.0.1',
  // IPv6 plain
  '::1',
  '::',
  'fe80::1',
  'fd00::1',
  'fc00::1',
  'fdff:ffff::1',
  'fec0::1',
  'ff02::1',
  'ff0e::1',
  '2001:db8::1',
  '100::1',
  // IPv4-mapped and translated (RFC 6145)
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '::ffff:a9fe:a9fe',
  '::ffff:0:10.0.0.1',
  '::ffff:0:7f00:1',
  // IPv4-compatible (deprecated)
  '::127.0.0.1',
  '::7f00:1',
  '::a9fe:a9fe',
  '::8.8.8.8',
  // NAT64, well-known and local-use prefixes
  '64:ff9b::127.0.0.1',
  '64:ff9b::a9fe:a9fe',
  '64:ff9b::10.0.0.1',
  '64:ff9b:1::a9fe:a9fe',
  '64:ff9b:1::8.8.8.8',
  '64:ff9b:1:ffff::1',
  // 6to4 with a private address inside
  '2002:a9fe:a9fe::',
  '2002:7f00:1::1',
  '2002:a00:1::',
  // Teredo whose client (inverted in the last 32 bits) is private: 10.0.0.1 -> f5ff:fffe
  '2001:0:808:808::f5ff:fffe',
];

const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '140.82.112.3',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
  '64:ff9b::8.8.8.8',
  '2002:808:808::1',
  '2a00:1450:4001:80b::200e',
];

describe('outbound address check', () => {
  it.each(REFUSED)('refuses %s', (a) => {
    expect(isPrivateAddress(a)).toBe(true);
  });
  it.each(PUBLIC)('lets %s through', (a) => {
    expect(isPrivateAddress(a)).toBe(false);
  });

  it('refuses URLs naming those addresses, in the forms a URL normalizes', async () => {
    const policy = { allowPrivate: false, timeoutMs: 1000, maxBytes: 1000 };
    for (const host of [
      '[::127.0.0.1]',
      '[::a9fe:a9fe]',
      '[::ffff:0:10.0.0.1]',
      '[64:ff9b:1::a9fe:a9fe]',
      '[64:ff9b::a9fe:a9fe]',
      '[2002:a9fe:a9fe::]',
      '[fec0::1]',
      '[fc00::1]',
      '[ff02::1]',
      '[::]',
      '0x7f.1',
      '2130706433',
      '0177.0.0.1',
      '127.1',
      '[::ffff:7f00:1]',
    ]) {
      await expect(checkUrl(`https://${host}/hook`, policy), host).rejects.toThrow(/private, loopback or link-local/);
    }
  });
});
