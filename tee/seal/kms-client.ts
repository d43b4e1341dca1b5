// The two AWS KMS operations a tee node's sealer needs, GenerateDataKey and Decrypt, each with a
// Recipient (AWS KMS API Reference; "Cryptographic attestation support in AWS KMS"). The KMS JSON 1.1
// protocol: POST / with `X-Amz-Target: TrentService.<Operation>` and `Content-Type:
// application/x-amz-json-1.1`, a JSON body whose binary fields are base64, signed with SigV4 (service
// `kms`); an error is a 4xx or 5xx whose body names its `__type`. With a Recipient, KMS answers the
// plaintext only as CiphertextForRecipient, encrypted to the attested key (recipient-ciphertext.ts);
// an answer that carries a Plaintext anyway is refused, never used.
import type { SignatureV4 } from '@smithy/signature-v4';
import { signHeaders, sigv4Signer, type AwsCredentials } from '../../common/aws-sigv4.ts';
import { SealError, type SealErrorCode } from './seal-error.ts';

export interface KmsClientOptions {
  /** e.g. eu-west-1; part of the signature's scope. */
  region: string;
  credentials: AwsCredentials;
  /** Origin of the KMS API; default https://kms.<region>.amazonaws.com. */
  endpoint?: string;
  clock?: () => number;
  timeoutMs?: number;
}

/** The enclave the answer is for: its attestation document, whose public_key is an RSA-2048 SPKI. */
export interface KmsRecipient {
  attestationDocument: Uint8Array;
}

export interface GenerateDataKeyParameters {
  keyId: string;
  encryptionContext: Readonly<Record<string, string>>;
  recipient: KmsRecipient;
}

export interface GenerateDataKeyReturnType {
  /** The data key under the KMS key: what is stored. */
  ciphertextBlob: Uint8Array;
  /** The key ARN KMS used. */
  keyId: string;
  /** The data key, CMS EnvelopedData to the recipient's key. */
  ciphertextForRecipient: Uint8Array;
}

export interface DecryptParameters {
  keyId: string;
  ciphertextBlob: Uint8Array;
  encryptionContext: Readonly<Record<string, string>>;
  recipient: KmsRecipient;
}

export interface DecryptReturnType {
  keyId: string;
  ciphertextForRecipient: Uint8Array;
}

/** The only key encryption algorithm KMS offers a recipient. */
export const RECIPIENT_KEY_ENCRYPTION_ALGORITHM = 'RSAES_OAEP_SHA_256';
const MAX_RESPONSE_BYTES = 64 * 1024;

/** A failed KMS call: the code says what the node can do about it, `awsType` what KMS said. */
export class KmsError extends SealError {
  constructor(code: SealErrorCode, readonly awsType: string, readonly status: number | null, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'KmsError';
  }
}

/** KMS's error types (the API reference's "Errors" and "Common Errors") by what they mean here. */
const ERROR_CODES: Record<string, SealErrorCode> = {
  IncompleteSignatureException: 'unauthorized', InvalidSignatureException: 'unauthorized', UnrecognizedClientException: 'unauthorized',
  MissingAuthenticationTokenException: 'unauthorized', ExpiredTokenException: 'unauthorized', InvalidClientTokenId: 'unauthorized',
  AccessDeniedException: 'forbidden', DisabledException: 'forbidden', KMSInvalidStateException: 'forbidden',
  InvalidCiphertextException: 'unseal_failed', IncorrectKeyException: 'unseal_failed',
  ThrottlingException: 'unavailable', LimitExceededException: 'unavailable', KeyUnavailableException: 'unavailable',
  DependencyTimeoutException: 'unavailable', KMSInternalException: 'unavailable',
};

function errorCode(type: string, status: number): SealErrorCode {
  return ERROR_CODES[type] ?? (status >= 500 ? 'unavailable' : 'bad_config');
}

const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

function blob(body: Record<string, unknown>, field: string, op: string): Uint8Array {
  const v = body[field];
  if (typeof v !== 'string' || v.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(v)) throw new KmsError('unavailable', 'SerializationException', 200, `KMS ${op} answered without a base64 ${field}`);
  return new Uint8Array(Buffer.from(v, 'base64'));
}

function text(body: Record<string, unknown>, field: string, op: string): string {
  const v = body[field];
  if (typeof v !== 'string' || v.length === 0) throw new KmsError('unavailable', 'SerializationException', 200, `KMS ${op} answered without ${field}`);
  return v;
}

export class KmsClient {
  private readonly signer: SignatureV4;
  private readonly url: URL;
  private readonly clock: () => number;

  constructor(private readonly o: KmsClientOptions) {
    this.signer = sigv4Signer('kms', o.region, o.credentials);
    this.url = new URL('/', o.endpoint ?? `https://kms.${o.region}.amazonaws.com`);
    this.clock = o.clock ?? Date.now;
  }

  /** The endpoint's origin, for messages. */
  get origin(): string {
    return this.url.origin;
  }

  private async call(op: 'GenerateDataKey' | 'Decrypt', request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const body = JSON.stringify(request);
    const headers = await signHeaders(this.signer, {
      method: 'POST', url: this.url, body, signingDate: new Date(this.clock()),
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `TrentService.${op}` },
    });
    let res: Response;
    let raw: ArrayBuffer;
    try {
      res = await fetch(this.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000) });
      raw = await res.arrayBuffer();
    } catch (err) {
      throw new KmsError('unavailable', 'NetworkError', null, `KMS at ${this.origin} unreachable: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`, { cause: err });
    }
    if (raw.byteLength > MAX_RESPONSE_BYTES) throw new KmsError('unavailable', 'SerializationException', res.status, `KMS ${op} answered ${raw.byteLength} bytes`);
    let parsed: Record<string, unknown> = {};
    try {
      const j: unknown = raw.byteLength ? JSON.parse(new TextDecoder().decode(raw)) : {};
      if (j && typeof j === 'object' && !Array.isArray(j)) parsed = j as Record<string, unknown>;
    } catch {
      if (res.ok) throw new KmsError('unavailable', 'SerializationException', res.status, `KMS ${op} answered a body that is not JSON`);
    }
    if (!res.ok) {
      // JSON 1.1 errors: `__type` is "Name" or "namespace#Name"; X-Amzn-ErrorType is "Name:..." when present.
      const type = (res.headers.get('x-amzn-errortype')?.split(':')[0] ?? String(parsed.__type ?? 'UnknownError')).split('#').pop()!;
      const message = String(parsed.message ?? parsed.Message ?? '').slice(0, 300);
      throw new KmsError(errorCode(type, res.status), type, res.status, `KMS ${op} refused (${res.status} ${type})${message ? `: ${message}` : ''}`);
    }
    if (parsed.Plaintext !== undefined && parsed.Plaintext !== null && parsed.Plaintext !== '') {
      throw new KmsError('forbidden', 'UnexpectedPlaintext', res.status, `KMS ${op} answered a Plaintext to a request with a Recipient; it is not used`);
    }
    return parsed;
  }

  private static recipient(r: KmsRecipient) {
    return { KeyEncryptionAlgorithm: RECIPIENT_KEY_ENCRYPTION_ALGORITHM, AttestationDocument: b64(r.attestationDocument) };
  }

  /** A new 256-bit data key, stored as CiphertextBlob and answered only to the recipient. */
  async generateDataKey(p: GenerateDataKeyParameters): Promise<GenerateDataKeyReturnType> {
    const r = await this.call('GenerateDataKey', { KeyId: p.keyId, KeySpec: 'AES_256', EncryptionContext: p.encryptionContext, Recipient: KmsClient.recipient(p.recipient) });
    return { ciphertextBlob: blob(r, 'CiphertextBlob', 'GenerateDataKey'), keyId: text(r, 'KeyId', 'GenerateDataKey'), ciphertextForRecipient: blob(r, 'CiphertextForRecipient', 'GenerateDataKey') };
  }

  /** The plaintext of a CiphertextBlob, answered only to the recipient. */
  async decrypt(p: DecryptParameters): Promise<DecryptReturnType> {
    const r = await this.call('Decrypt', { KeyId: p.keyId, CiphertextBlob: b64(p.ciphertextBlob), EncryptionContext: p.encryptionContext, Recipient: KmsClient.recipient(p.recipient) });
    return { keyId: text(r, 'KeyId', 'Decrypt'), ciphertextForRecipient: blob(r, 'CiphertextForRecipient', 'Decrypt') };
  }
}
