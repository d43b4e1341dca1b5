// The certificate chain of a Nitro attestation document (AWS, "Verifying the root of trust"; RFC 5280
// §6.1 reduced to what this profile needs): pinned root ← cabundle[1] ← … ← cabundle[n-1] ← leaf. Every
// certificate is X.509 v3 with a P-384 key and valid at the verification time; every one below the root is
// signed with ECDSA-SHA384 by the one above it, whose subject is its issuer; the root and intermediates are
// CAs allowed to sign certificates, within their path length; the leaf is not a CA. An extension marked
// critical that this profile does not read refuses the certificate.
import type { KeyObject } from 'node:crypto';
import { id_ecdsaWithSHA384 } from '@peculiar/asn1-ecc';
import { KeyUsageFlags, Version, id_ce_basicConstraints, id_ce_keyUsage, type AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { AttestationError } from './attestation-error.ts';
import { basicConstraints, keyUsage, type ParsedCertificate } from './certificate.ts';

const UNDERSTOOD_CRITICAL = new Set([id_ce_basicConstraints, id_ce_keyUsage]);

export interface CertificateChain {
  /** The pinned root the chain is anchored at. */
  readonly root: ParsedCertificate;
  /** The CAs between root and leaf, from the root's child down to the leaf's issuer. */
  readonly intermediates: readonly ParsedCertificate[];
  readonly leaf: ParsedCertificate;
}

const broken = (message: string) => new AttestationError('bad_attestation_chain', message);

const isEcdsaSha384 = (alg: AlgorithmIdentifier) => alg.algorithm === id_ecdsaWithSHA384 && alg.parameters == null;

function checkValidity(cert: ParsedCertificate, at: Date): void {
  const { notBefore, notAfter } = cert.asn.tbsCertificate.validity;
  const from = notBefore.getTime();
  const to = notAfter.getTime();
  if (at.getTime() < from.getTime()) throw new AttestationError('attestation_not_yet_valid', `certificate "${cert.label}" is valid only from ${from.toISOString()}, after ${at.toISOString()}`);
  if (at.getTime() > to.getTime()) throw new AttestationError('attestation_expired', `certificate "${cert.label}" expired at ${to.toISOString()}, before ${at.toISOString()}`);
}

function checkForm(cert: ParsedCertificate): void {
  const tbs = cert.asn.tbsCertificate;
  if (tbs.version !== Version.v3) throw broken(`certificate "${cert.label}" is not X.509 v3`);
  const key = cert.x509.publicKey;
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'secp384r1') throw broken(`certificate "${cert.label}" does not hold a P-384 key`);
  const unknown = (tbs.extensions ?? []).find((e) => e.critical && !UNDERSTOOD_CRITICAL.has(e.extnID));
  if (unknown) throw broken(`certificate "${cert.label}" has an unknown critical extension ${unknown.extnID}`);
}

function checkCa(cert: ParsedCertificate, casBelow: number): void {
  const bc = basicConstraints(cert);
  if (!bc?.cA) throw broken(`certificate "${cert.label}" issues certificates but is not a CA`);
  if (bc.pathLenConstraint !== undefined && casBelow > bc.pathLenConstraint) throw broken(`certificate "${cert.label}" allows ${bc.pathLenConstraint} CAs below it, the chain has ${casBelow}`);
  const usage = keyUsage(cert);
  if (usage === undefined || !(usage & KeyUsageFlags.keyCertSign)) throw broken(`certificate "${cert.label}" is not allowed to sign certificates (key usage)`);
}

function checkIssued(cert: ParsedCertificate, issuer: ParsedCertificate): void {
  const { asn } = cert;
  if (!isEcdsaSha384(asn.signatureAlgorithm) || !isEcdsaSha384(asn.tbsCertificate.signature)) throw broken(`certificate "${cert.label}" is not signed with ECDSA-SHA384`);
  // OpenSSL's issuance check: issuer name = parent's subject, key identifiers agree, parent may sign certificates.
  if (!cert.x509.checkIssued(issuer.x509)) throw broken(`certificate "${cert.label}" is not issued by "${issuer.label}"`);
  if (!cert.x509.verify(issuer.x509.publicKey)) throw broken(`the signature on certificate "${cert.label}" does not verify under "${issuer.label}"`);
}

/**
 * Verifies the chain from its pinned root down to the leaf at time `at`, and returns the leaf's key.
 * Checks run certificate by certificate from the root, so the first failure named is the highest one.
 */
export function verifyCertificateChain(chain: CertificateChain, at: Date): KeyObject {
  const cas = [chain.root, ...chain.intermediates];
  for (const [i, cert] of cas.entries()) {
    checkForm(cert);
    if (i > 0) checkIssued(cert, cas[i - 1]!);
    checkCa(cert, cas.length - 1 - i);
    checkValidity(cert, at);
  }
  const { leaf } = chain;
  checkForm(leaf);
  checkIssued(leaf, cas[cas.length - 1]!);
  if (basicConstraints(leaf)?.cA) throw broken(`the leaf certificate "${leaf.label}" is a CA`);
  const usage = keyUsage(leaf);
  if (usage !== undefined && !(usage & KeyUsageFlags.digitalSignature)) throw broken(`the leaf certificate "${leaf.label}" is not allowed to sign (key usage)`);
  checkValidity(leaf, at);
  return leaf.x509.publicKey;
}
