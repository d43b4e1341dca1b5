// The storage key sealed to the enclave build through AWS KMS (docs/tee.md "Sealing the storage key").
// At first start the node asks KMS for a data key (GenerateDataKey) and keeps only KMS's CiphertextBlob
// on the untrusted disk; at every start it asks KMS to Decrypt it. Both requests carry a Recipient: the
// enclave's attestation document (from the NSM) whose public_key is an RSA-2048 key made for that one
// request, so KMS first checks the document and its key policy (kms:RecipientAttestation:ImageSha384 =
// PCR0, ...) and then answers the key only encrypted to that RSA key (CMS EnvelopedData,
// recipient-ciphertext.ts). The RSA private key never leaves this process's memory and is dropped after
// the one answer it opens; the plaintext key never crosses the host, not even inside TLS.
import { generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { KmsClient, type KmsClientOptions } from './kms-client.ts';
import { openRecipientCiphertext } from './recipient-ciphertext.ts';
import { SealError } from './seal-error.ts';
import { checkUnsealedKey, decodeSealedKey, encodeSealedKey } from './sealed-key-blob.ts';
import { SEALED_KEY_BYTES, type GeneratedStorageKey, type StorageKeySealer } from './sealer.ts';

/**
 * The enclave's attestation document binding `publicKeyDer` (an RSA SubjectPublicKeyInfo, DER) as its
 * public_key: the NSM inside an enclave (nsm-command-attester.ts), the DEV-ONLY authority in tests.
 */
export type AttestPublicKey = (publicKeyDer: Uint8Array) => Promise<Uint8Array>;

/** Bound to every data key as KMS encryption context; a key policy can require it (kms:EncryptionContext:purpose). */
export const STORAGE_KEY_ENCRYPTION_CONTEXT: Readonly<Record<string, string>> = Object.freeze({ purpose: 'custody/node-storage-key/v1' });

export interface KmsSealerOptions {
  /** A client, or the options to make one. */
  kms: KmsClient | KmsClientOptions;
  /** The KMS key: key id, key ARN, alias name or alias ARN. */
  keyId: string;
  attest: AttestPublicKey;
  encryptionContext?: Readonly<Record<string, string>>;
}

const newRsaKeyPair = promisify(generateKeyPair);

interface Ephemeral {
  privateKey: KeyObject;
  attestationDocument: Uint8Array;
}

export class KmsSealer implements StorageKeySealer {
  readonly kind = 'kms' as const;
  private readonly kms: KmsClient;
  private readonly context: Readonly<Record<string, string>>;

  constructor(private readonly o: KmsSealerOptions) {
    if (!o.keyId) throw new SealError('bad_config', 'the KMS sealer needs a key id');
    this.kms = o.kms instanceof KmsClient ? o.kms : new KmsClient(o.kms);
    this.context = o.encryptionContext ?? STORAGE_KEY_ENCRYPTION_CONTEXT;
  }

  /** A fresh RSA-2048 key for one request, and the attestation document that carries its public half. */
  private async ephemeral(): Promise<Ephemeral> {
    const { publicKey, privateKey } = await newRsaKeyPair('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
    const spki = new Uint8Array(publicKey.export({ type: 'spki', format: 'der' }));
    let attestationDocument: Uint8Array;
    try {
      attestationDocument = await this.o.attest(spki);
    } catch (err) {
      if (err instanceof SealError) throw err;
      throw new SealError('unavailable', `no attestation document for the KMS request: ${(err as Error).message}`, { cause: err });
    }
    return { privateKey, attestationDocument };
  }

  async generate(): Promise<GeneratedStorageKey> {
    const { privateKey, attestationDocument } = await this.ephemeral();
    const r = await this.kms.generateDataKey({ keyId: this.o.keyId, encryptionContext: this.context, recipient: { attestationDocument } });
    const key = openRecipientCiphertext(r.ciphertextForRecipient, privateKey);
    if (key.length !== SEALED_KEY_BYTES) {
      key.fill(0);
      throw new SealError('unseal_failed', `KMS GenerateDataKey answered a ${key.length}-byte key, not ${SEALED_KEY_BYTES}`);
    }
    return { key, sealed: encodeSealedKey('kms', key, r.ciphertextBlob) };
  }

  async unseal(sealed: Uint8Array): Promise<Uint8Array> {
    const blob = decodeSealedKey(sealed, 'kms');
    const { privateKey, attestationDocument } = await this.ephemeral();
    const r = await this.kms.decrypt({ keyId: this.o.keyId, ciphertextBlob: blob.payload, encryptionContext: this.context, recipient: { attestationDocument } });
    return checkUnsealedKey(blob, openRecipientCiphertext(r.ciphertextForRecipient, privateKey));
  }
}
