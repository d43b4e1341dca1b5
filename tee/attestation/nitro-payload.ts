// The payload of an AWS Nitro Enclaves attestation document (AWS, "Nitro Enclaves attestation process",
// syntactical validation; the CDDL of aws-nitro-enclaves-nsm-api): a CBOR map of module_id, digest,
// timestamp, pcrs, certificate, cabundle and the optional public_key, user_data and nonce. Decoding checks
// every field's type and size; nothing here is trusted until the signature and chain are checked.
import { decodeCbor, plainBytes } from './cose-sign1.ts';
import { AttestationError } from './attestation-error.ts';

/** PCR values are digests: SHA-256, SHA-384 or SHA-512 sized. */
export const PCR_LENGTHS: readonly number[] = [32, 48, 64];
/** PCR indexes run 0..31. */
export const MAX_PCR_INDEX = 31;
/** A certificate in the document, DER, is 1 to 1024 bytes. */
export const MAX_CERTIFICATE_BYTES = 1024;
/**
 * public_key, user_data and nonce hold up to 1024 bytes each: the NSM accepts that much, although the AWS
 * documentation says 512 for user_data and nonce.
 */
export const MAX_USER_FIELD_BYTES = 1024;

export interface NitroAttestationPayload {
  readonly moduleId: string;
  readonly digest: 'SHA384';
  /** Milliseconds since the Unix epoch, as the NSM's clock read it when it made the document. */
  readonly timestamp: number;
  readonly pcrs: ReadonlyMap<number, Uint8Array>;
  /** The leaf certificate, DER: its key signed the document. */
  readonly certificate: Uint8Array;
  /** The issuing CAs, DER, from the root (index 0) down to the leaf's issuer. */
  readonly cabundle: readonly Uint8Array[];
  readonly publicKey?: Uint8Array;
  readonly userData?: Uint8Array;
  readonly nonce?: Uint8Array;
}

const bad = (message: string) => new AttestationError('bad_attestation', message);

function bytesField(value: unknown, name: string, min: number, max: number): Uint8Array {
  if (!(value instanceof Uint8Array)) throw bad(`${name} is not a byte string`);
  if (value.length < min || value.length > max) throw bad(`${name} has ${value.length} bytes, not ${min} to ${max}`);
  return plainBytes(value);
}

/** An optional field: absent and CBOR null both read as undefined. */
function optionalBytes(payload: Map<unknown, unknown>, name: string, min: number): Uint8Array | undefined {
  const value = payload.get(name);
  return value === undefined || value === null ? undefined : bytesField(value, name, min, MAX_USER_FIELD_BYTES);
}

function decodePcrs(value: unknown): Map<number, Uint8Array> {
  if (!(value instanceof Map) || value.size < 1 || value.size > MAX_PCR_INDEX + 1) throw bad('pcrs is not a map of 1 to 32 PCRs');
  const pcrs = new Map<number, Uint8Array>();
  for (const [index, pcr] of value as Map<unknown, unknown>) {
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > MAX_PCR_INDEX) throw bad(`pcrs has an index ${String(index)} outside 0..${MAX_PCR_INDEX}`);
    if (!(pcr instanceof Uint8Array) || !PCR_LENGTHS.includes(pcr.length)) throw bad(`PCR${index} is not a byte string of ${PCR_LENGTHS.join(', ')} bytes`);
    pcrs.set(index, plainBytes(pcr));
  }
  // The debug-mode check reads PCR0, PCR1 and PCR2: a document without them cannot be judged.
  for (const index of [0, 1, 2]) if (!pcrs.has(index)) throw bad(`pcrs has no PCR${index}`);
  return pcrs;
}

/** Decodes and checks the payload's fields. Unknown keys are ignored: they are signed but mean nothing here. */
export function decodeNitroPayload(bytes: Uint8Array): NitroAttestationPayload {
  const payload = decodeCbor(bytes, 'the attestation payload');
  if (!(payload instanceof Map)) throw bad('the attestation payload is not a map');

  const moduleId = payload.get('module_id');
  if (typeof moduleId !== 'string' || moduleId.length === 0) throw bad('module_id is not a non-empty text string');
  const digest = payload.get('digest');
  if (digest !== 'SHA384') throw bad(`digest is ${JSON.stringify(digest)}, not "SHA384"`);
  const timestamp = payload.get('timestamp');
  if (typeof timestamp !== 'number' || !Number.isSafeInteger(timestamp) || timestamp <= 0) throw bad('timestamp is not a positive integer of milliseconds');
  const pcrs = decodePcrs(payload.get('pcrs'));
  const certificate = bytesField(payload.get('certificate'), 'certificate', 1, MAX_CERTIFICATE_BYTES);
  const cabundle = payload.get('cabundle');
  if (!Array.isArray(cabundle) || cabundle.length === 0) throw bad('cabundle is not a non-empty array');

  const publicKey = optionalBytes(payload, 'public_key', 1);
  const userData = optionalBytes(payload, 'user_data', 0);
  const nonce = optionalBytes(payload, 'nonce', 0);
  return {
    moduleId,
    digest,
    timestamp,
    pcrs,
    certificate,
    cabundle: cabundle.map((cert: unknown, i) => bytesField(cert, `cabundle[${i}]`, 1, MAX_CERTIFICATE_BYTES)),
    ...(publicKey === undefined ? {} : { publicKey }),
    ...(userData === undefined ? {} : { userData }),
    ...(nonce === undefined ? {} : { nonce }),
  };
}
