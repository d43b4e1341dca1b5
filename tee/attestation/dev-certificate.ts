// Issuing X.509 v3 certificates (RFC 5280 §4.1) for the development attestation authority: P-384 keys,
// ECDSA-SHA384 signatures, basic constraints and key usage shaped like the AWS Nitro chain's (CAs: critical
// cA with a path length, keyCertSign; leaf: critical cA false, digitalSignature). DEV-ONLY: production
// certificates come from AWS.
import { randomBytes, sign, type KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { id_ecdsaWithSHA384 } from '@peculiar/asn1-ecc';
import {
  AlgorithmIdentifier, AttributeTypeAndValue, AttributeValue, BasicConstraints, Certificate, Extension, Extensions, KeyUsage,
  KeyUsageFlags, Name, RelativeDistinguishedName, SubjectPublicKeyInfo, TBSCertificate, Validity, Version,
  id_ce_basicConstraints, id_ce_keyUsage,
} from '@peculiar/asn1-x509';
import { OID_COMMON_NAME, OID_ORGANIZATION } from './certificate.ts';

export interface CertificateSubject {
  readonly commonName: string;
  readonly organization?: string;
}

export interface IssueCertificateParameters {
  readonly subject: CertificateSubject;
  /** The subject's public key. */
  readonly publicKey: KeyObject;
  /** Who signs: its subject becomes the issuer name. Absent: self-signed with `signingKey`. */
  readonly issuer?: CertificateSubject;
  /** The issuer's private key (the subject's own for a self-signed root). */
  readonly signingKey: KeyObject;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** A CA, with the number of CAs allowed below it (undefined: no limit); absent: an end-entity leaf. */
  readonly ca?: { readonly pathLength?: number };
  /** Overrides for tests that need a malformed certificate. */
  readonly signatureAlgorithm?: string;
  readonly keyUsage?: number;
}

function name(subject: CertificateSubject): Name {
  const rdn = (type: string, value: string) => new RelativeDistinguishedName([new AttributeTypeAndValue({ type, value: new AttributeValue({ utf8String: value }) })]);
  return new Name([...(subject.organization === undefined ? [] : [rdn(OID_ORGANIZATION, subject.organization)]), rdn(OID_COMMON_NAME, subject.commonName)]);
}

const extension = (extnID: string, critical: boolean, value: unknown) =>
  new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });

/** A positive 16-byte serial number whose first byte needs no sign padding. */
function serialNumber(): ArrayBuffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  return new Uint8Array(serial).buffer;
}

/** Issues a certificate and returns its DER. */
export function issueCertificate(p: IssueCertificateParameters): Uint8Array {
  const algorithm = new AlgorithmIdentifier({ algorithm: p.signatureAlgorithm ?? id_ecdsaWithSHA384 });
  const usage = p.keyUsage ?? (p.ca
    ? KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign | KeyUsageFlags.digitalSignature
    : KeyUsageFlags.digitalSignature | KeyUsageFlags.nonRepudiation);
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: serialNumber(),
    signature: algorithm,
    issuer: name(p.issuer ?? p.subject),
    validity: new Validity({ notBefore: p.notBefore, notAfter: p.notAfter }),
    subject: name(p.subject),
    subjectPublicKeyInfo: AsnConvert.parse(p.publicKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo),
    extensions: new Extensions([
      extension(id_ce_basicConstraints, true, new BasicConstraints(p.ca ? { cA: true, ...(p.ca.pathLength === undefined ? {} : { pathLenConstraint: p.ca.pathLength }) } : { cA: false })),
      extension(id_ce_keyUsage, p.ca !== undefined, new KeyUsage(usage)),
    ]),
  });
  const signature = sign('sha384', new Uint8Array(AsnConvert.serialize(tbs)), p.signingKey);
  const cert = new Certificate({ tbsCertificate: tbs, signatureAlgorithm: algorithm, signatureValue: new Uint8Array(signature).buffer });
  return new Uint8Array(AsnConvert.serialize(cert));
}

/** PEM text of a DER certificate. */
export function toPem(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').trimEnd();
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}
