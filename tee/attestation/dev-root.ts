// Telling a development attestation root from a real one. The dev authority (dev-provider.ts) names its
// root, and every certificate under it, with DEV_ROOT_MARKER; the verifier refuses a pinned root carrying
// the marker unless the caller says `allowDevRoot: true`, so a production configuration cannot trust the
// dev authority by accident.
import { OID_COMMON_NAME, OID_ORGANIZATION, nameValues, parseRootCertificates, type ParsedCertificate, type RootCertificate } from './certificate.ts';

export const DEV_ROOT_MARKER = 'DEV-ONLY';
export const DEV_ROOT_COMMON_NAME = `custody ${DEV_ROOT_MARKER} Nitro attestation root — not for production`;
export const DEV_ORGANIZATION = `custody development (${DEV_ROOT_MARKER})`;

/** Whether a certificate's subject (common name or organization) marks it as a development certificate. */
export function isDevCertificate(cert: ParsedCertificate): boolean {
  const subject = cert.asn.tbsCertificate.subject;
  return [...nameValues(subject, OID_COMMON_NAME), ...nameValues(subject, OID_ORGANIZATION)].some((v) => v.includes(DEV_ROOT_MARKER));
}

/** Whether a root (PEM text or DER) is, or in a PEM bundle includes, a development root. */
export function isDevRoot(root: RootCertificate): boolean {
  return parseRootCertificates([root]).some(isDevCertificate);
}
