// One X.509 certificate read twice: by Node's X509Certificate (OpenSSL), which checks issuance and
// signatures, and by @peculiar/asn1-x509, which reads what Node 20 does not expose (signature algorithm,
// validity as dates, basic constraints with path length, key usage, which extensions are critical).
// Also the PEM reading of pinned roots.
import { X509Certificate } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { BasicConstraints, Certificate, KeyUsage, id_ce_basicConstraints, id_ce_keyUsage, type Name } from '@peculiar/asn1-x509';
import { AttestationError } from './attestation-error.ts';

export interface ParsedCertificate {
  readonly der: Uint8Array;
  readonly x509: X509Certificate;
  readonly asn: Certificate;
  /** A short name for messages: the subject's common name. */
  readonly label: string;
}

export const OID_COMMON_NAME = '2.5.4.3';
export const OID_ORGANIZATION = '2.5.4.10';

/** Parses DER; throws a plain Error that the caller turns into its own code. */
export function parseCertificate(der: Uint8Array): ParsedCertificate {
  const x509 = new X509Certificate(der);
  const asn = AsnConvert.parse(der, Certificate);
  const label = nameValues(asn.tbsCertificate.subject, OID_COMMON_NAME)[0] ?? x509.subject.replace(/\n/g, ', ');
  return { der: new Uint8Array(der), x509, asn, label };
}

/** The string values of one attribute type in a name, in order. */
export function nameValues(name: Name, type: string): string[] {
  return name.flatMap((rdn) => rdn.filter((atv) => atv.type === type).map((atv) => atv.value.toString()));
}

export function extension(cert: ParsedCertificate, oid: string) {
  return cert.asn.tbsCertificate.extensions?.find((e) => e.extnID === oid);
}

/** The basic constraints, or undefined when the extension is absent. */
export function basicConstraints(cert: ParsedCertificate): BasicConstraints | undefined {
  const ext = extension(cert, id_ce_basicConstraints);
  return ext && AsnConvert.parse(ext.extnValue, BasicConstraints);
}

/** The key usage bits (KeyUsageFlags), or undefined when the extension is absent. */
export function keyUsage(cert: ParsedCertificate): number | undefined {
  const ext = extension(cert, id_ce_keyUsage);
  return ext && AsnConvert.parse(ext.extnValue, KeyUsage).toNumber();
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/g;

/** The DER of every CERTIFICATE block of a PEM text, in order; empty when there is none. */
export function certificatesFromPem(pem: string): Uint8Array[] {
  return [...pem.matchAll(PEM_CERTIFICATE)].map((m) => new Uint8Array(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64')));
}

/** A pinned root as configured: PEM text (one or more certificates) or DER bytes. */
export type RootCertificate = string | Uint8Array;

/** Parses pinned roots; a root that holds no certificate or does not parse is a configuration error. */
export function parseRootCertificates(roots: readonly RootCertificate[]): ParsedCertificate[] {
  const ders = roots.flatMap((root) => (typeof root === 'string' ? certificatesFromPem(root) : [root]));
  if (ders.length === 0) throw new AttestationError('bad_config', 'no root certificate is pinned');
  return ders.map((der, i) => {
    try {
      return parseCertificate(der);
    } catch (err) {
      throw new AttestationError('bad_config', `pinned root ${i} does not parse as an X.509 certificate: ${(err as Error).message}`, { cause: err });
    }
  });
}
