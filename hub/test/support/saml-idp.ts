import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';

// A SAML 2.0 identity provider on a loopback port that signs real responses (xml-crypto, RSA-SHA256,
// exclusive c14n) with a test key pair kept in hub/test/fixtures. Its SSO endpoint reads the
// AuthnRequest (HTTP-Redirect binding) and answers the auto-posting form a browser would submit
// to the ACS; `mode` makes it lie in one way or another, for the attacks the SP must refuse.

export type SamlMode =
  | 'honest'
  | 'unsigned'
  | 'wrong-audience'
  | 'expired'
  | 'wrong-recipient'
  | 'wrong-issuer'
  | 'other-key'
  | 'wrapped'
  | 'unsolicited'
  | 'response-signed';

export interface SamlIdp {
  url: string;
  entityId: string;
  /** The signing certificate (PEM). */
  cert: string;
  mode: SamlMode;
  next: { nameId: string; email: string };
  /** The person has not finished at the IdP yet: its form comes without the script that posts it. */
  hold: boolean;
  /** The IdP's metadata XML. */
  metadata(): string;
  close(): Promise<void>;
}

const KEY = readFileSync(new URL('../fixtures/saml-idp.key', import.meta.url), 'utf8');
const CERT = readFileSync(new URL('../fixtures/saml-idp.crt', import.meta.url), 'utf8');
const OTHER_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';

function sign(xml: string, element: 'Assertion' | 'Response', key: string): string {
  const sig = new SignedXml({
    privateKey: key,
    canonicalizationAlgorithm: C14N,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  });
  const at = `/*[local-name(.)='Response']${element === 'Assertion' ? "/*[local-name(.)='Assertion']" : ''}`;
  sig.addReference({
    xpath: at,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', C14N],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  sig.computeSignature(xml, { location: { reference: `${at}/*[local-name(.)='Issuer']`, action: 'after' } });
  return sig.getSignedXml();
}

/** `host`: the name in the IdP's URLs (it listens on 127.0.0.1); "localhost" puts it on another site than a hub at 127.0.0.1. */
export async function startSamlIdp(opts: { host?: string } = {}): Promise<SamlIdp> {
  const server = createServer((req, res) => {
    const url = new URL(req.url!, idp.url);
    if (url.pathname !== '/sso') {
      res.writeHead(404);
      return res.end();
    }
    const request = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
    const id = /\sID="([^"]+)"/.exec(request)![1]!;
    const acs = /AssertionConsumerServiceURL="([^"]+)"/.exec(request)![1]!;
    const audience = /<(?:\w+:)?Issuer[^>]*>([^<]+)</.exec(request)![1]!;
    const response = respond(idp, { requestId: id, acs, audience });
    res.writeHead(200, { 'content-type': 'text/html' });
    // The auto-posting form IdPs answer with: a browser running scripts posts it at once.
    res.end(
      `<form method="post" action="${acs}"><input type="hidden" name="SAMLResponse" value="${Buffer.from(response).toString('base64')}"><input type="hidden" name="RelayState" value="${url.searchParams.get('RelayState') ?? ''}"></form>` +
        (idp.hold ? '' : '<script>document.forms[0].submit()</script>'),
    );
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const url = `http://${opts.host ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`;
  const idp: SamlIdp = {
    url,
    entityId: `${url}/metadata`,
    cert: CERT,
    mode: 'honest',
    hold: false,
    next: { nameId: 'nobody@example.com', email: 'nobody@example.com' },
    metadata: () => `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${url}/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${CERT.replace(/-----[A-Z ]+-----|\s/g, '')}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${url}/sso-post"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${url}/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`,
    close: () => new Promise((done) => server.close(() => done())),
  };
  return idp;
}

/** A Response to one AuthnRequest, signed (or not) as the IdP's mode says. */
function respond(idp: SamlIdp, to: { requestId: string; acs: string; audience: string }): string {
  const m = idp.mode;
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const until = m === 'expired' ? now - 600_000 : now + 300_000;
  const issued = m === 'expired' ? now - 900_000 : now;
  const inResponse = m === 'unsolicited' ? '' : ` InResponseTo="${to.requestId}"`;
  const issuer = m === 'wrong-issuer' ? 'https://someone-else.example/idp' : idp.entityId;
  const assertion = (nameId: string, email: string, id = `_${randomUUID()}`) =>
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${iso(issued)}"><saml:Issuer>${issuer}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${nameId}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
    `<saml:SubjectConfirmationData NotOnOrAfter="${iso(until)}" Recipient="${m === 'wrong-recipient' ? 'https://elsewhere.example/acs' : to.acs}"${inResponse}/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${iso(issued - 1000)}" NotOnOrAfter="${iso(until)}"><saml:AudienceRestriction><saml:Audience>${m === 'wrong-audience' ? 'https://another-sp.example' : to.audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(issued)}" SessionIndex="_s${randomUUID()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:Password</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement><saml:Attribute Name="email"><saml:AttributeValue>${email}</saml:AttributeValue></saml:Attribute></saml:AttributeStatement></saml:Assertion>`;
  const wrap = (inner: string) =>
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${randomUUID()}" Version="2.0" IssueInstant="${iso(issued)}" Destination="${to.acs}"${inResponse}>` +
    `<saml:Issuer>${issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>${inner}</samlp:Response>`;
  const honest = assertion(idp.next.nameId, idp.next.email);
  if (m === 'unsigned') return wrap(honest);
  if (m === 'response-signed') return sign(wrap(honest), 'Response', KEY);
  const signed = sign(wrap(honest), 'Assertion', m === 'other-key' ? OTHER_KEY : KEY);
  if (m !== 'wrapped') return signed;
  // Signature wrapping: an unsigned assertion for someone else, with the signed one's ID, in
  // front; the genuinely signed assertion tucked inside it, where a careless verifier finds it.
  const original = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(signed)![0];
  const id = /ID="([^"]+)"/.exec(original)![1]!;
  const evil = assertion('admin@acme.example', 'admin@acme.example', id).replace(
    '</saml:Subject>',
    `</saml:Subject><saml:Advice>${original}</saml:Advice>`,
  );
  return signed.replace(original, evil);
}
