// A DEV-ONLY attestation authority kept in a directory (docs/tee.md "Running locally with the dev
// authority"), so a local cluster pins one dev root across runs: `npm run tee-attest -- --provider dev
// --authority-dir <dir>` creates it at first use and reuses it after. The root certificate is public and
// is what NODE_TEE_ROOTS_FILE / API_TEE_ROOTS_FILE point at; the two private keys attest anything under
// that root, so they are written 0600 into a 0700 directory, never printed, and refused when others may
// read them.
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { certificatesFromPem, parseCertificate } from './certificate.ts';
import { toPem } from './dev-certificate.ts';
import { isDevCertificate } from './dev-root.ts';
import { createDevAuthorityMaterial, devAttestationAuthority, type DevAttestationAuthority, type DevAuthorityMaterial } from './dev-provider.ts';

/** The files of an authority directory. */
export const DEV_AUTHORITY_FILES = {
  /** The root certificate, PEM: the file to pin (public). */
  root: 'root.pem',
  intermediate: 'intermediate.pem',
  /** PKCS#8 PEM private keys (secret, 0600). */
  rootKey: 'root.key',
  intermediateKey: 'intermediate.key',
} as const;

export interface DevAuthorityDir {
  readonly authority: DevAttestationAuthority;
  /** The path of the root certificate: NODE_TEE_ROOTS_FILE / API_TEE_ROOTS_FILE. */
  readonly rootFile: string;
  /** Whether this call created the authority. */
  readonly created: boolean;
}

/** A directory that holds no usable authority; the message names the file and never its contents. */
export class DevAuthorityDirError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'DevAuthorityDirError';
  }
}

const keyPem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }) as string;
const spki = (key: KeyObject) => (key.type === 'private' ? createPublicKey(key) : key).export({ type: 'spki', format: 'der' });

function save(dir: string, m: DevAuthorityMaterial): void {
  // `wx`: a file that appeared meanwhile (another run creating the same directory) is never overwritten.
  // The keys first and the root last, so a directory with a root.pem was written whole.
  const write = (name: string, text: string, mode: number) => writeFileSync(join(dir, name), text, { mode, flag: 'wx' });
  write(DEV_AUTHORITY_FILES.rootKey, keyPem(m.rootKey), 0o600);
  write(DEV_AUTHORITY_FILES.intermediateKey, keyPem(m.intermediateKey), 0o600);
  write(DEV_AUTHORITY_FILES.intermediate, toPem(m.intermediateDer), 0o644);
  write(DEV_AUTHORITY_FILES.root, toPem(m.rootDer), 0o644);
}

function readCertificate(dir: string, name: string): Uint8Array {
  const ders = certificatesFromPem(readFileSync(join(dir, name), 'utf8'));
  if (ders.length !== 1) throw new DevAuthorityDirError(`${join(dir, name)} does not hold exactly one PEM certificate`);
  return ders[0]!;
}

function readKey(dir: string, name: string): KeyObject {
  const path = join(dir, name);
  // Like ssh with its keys: a key others may read is not used.
  if ((statSync(path).mode & 0o077) !== 0) throw new DevAuthorityDirError(`${path} may be read by others: make it 0600 (chmod 600) or create a new authority directory`);
  try {
    return createPrivateKey(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new DevAuthorityDirError(`${path} does not hold a PEM private key`, { cause: err });
  }
}

/** Reads an authority and checks it hangs together: a DEV-ONLY root, an intermediate it issued, the keys of both. */
function load(dir: string): DevAuthorityMaterial {
  const rootDer = readCertificate(dir, DEV_AUTHORITY_FILES.root);
  const intermediateDer = readCertificate(dir, DEV_AUTHORITY_FILES.intermediate);
  const rootKey = readKey(dir, DEV_AUTHORITY_FILES.rootKey);
  const intermediateKey = readKey(dir, DEV_AUTHORITY_FILES.intermediateKey);
  let root, intermediate;
  try {
    root = parseCertificate(rootDer);
    intermediate = parseCertificate(intermediateDer);
  } catch (err) {
    throw new DevAuthorityDirError(`${dir}: a certificate does not parse`, { cause: err });
  }
  if (!isDevCertificate(root)) throw new DevAuthorityDirError(`${join(dir, DEV_AUTHORITY_FILES.root)} is not a DEV-ONLY root`);
  if (!intermediate.x509.checkIssued(root.x509) || !intermediate.x509.verify(root.x509.publicKey)) {
    throw new DevAuthorityDirError(`${join(dir, DEV_AUTHORITY_FILES.intermediate)} is not issued by ${DEV_AUTHORITY_FILES.root}`);
  }
  if (!spki(rootKey).equals(spki(root.x509.publicKey))) throw new DevAuthorityDirError(`${join(dir, DEV_AUTHORITY_FILES.rootKey)} is not the key of ${DEV_AUTHORITY_FILES.root}`);
  if (!spki(intermediateKey).equals(spki(intermediate.x509.publicKey))) {
    throw new DevAuthorityDirError(`${join(dir, DEV_AUTHORITY_FILES.intermediateKey)} is not the key of ${DEV_AUTHORITY_FILES.intermediate}`);
  }
  return { rootDer, rootKey, intermediateDer, intermediateKey };
}

/**
 * Opens the authority kept in `dir`, creating the directory (0700) and a new authority in it when it holds
 * none of its files. A directory holding some of them only (an interrupted creation, a deleted key) is
 * refused rather than completed, so a root already pinned somewhere is never silently replaced.
 */
export function openDevAuthorityDir(dir: string): DevAuthorityDir {
  const rootFile = join(dir, DEV_AUTHORITY_FILES.root);
  const present = Object.values(DEV_AUTHORITY_FILES).filter((name) => existsSync(join(dir, name)));
  let created = false;
  if (present.length === 0) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    try {
      save(dir, createDevAuthorityMaterial());
      created = true;
    } catch (err) {
      // Another run created it first: read theirs below.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  } else if (present.length !== Object.keys(DEV_AUTHORITY_FILES).length) {
    const missing = Object.values(DEV_AUTHORITY_FILES).filter((name) => !present.includes(name));
    throw new DevAuthorityDirError(`${dir} holds part of a dev authority (no ${missing.join(', ')}): remove the directory to start a new one`);
  }
  return { authority: devAttestationAuthority(load(dir)), rootFile, created };
}
