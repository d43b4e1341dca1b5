// The storage-key sealer's attestations inside a Nitro enclave: the NSM command (tee/nsm-command.ts) is
// called as `<command> --public-key <hex DER>`, and the document it prints must be a Nitro document
// that carries exactly the public key asked for.
import { runNsmCommand } from '../nsm-command.ts';
import { isAbsolute } from 'node:path';
import { equalBytes } from '@noble/curves/utils.js';
import { decodeCoseSign1 } from '../attestation/cose-sign1.ts';
import { decodeNitroPayload } from '../attestation/nitro-payload.ts';
import { MAX_DOCUMENT_BYTES } from '../attestation/nitro.ts';
import { SealError } from './seal-error.ts';
import type { AttestPublicKey } from './kms-sealer.ts';

async function run(command: string, args: string[]): Promise<string> {
  try {
    return await runNsmCommand(command, args, `attestation command ${command}`);
  } catch (err) {
    throw new SealError('unavailable', (err as Error).message, { cause: err });
  }
}

/** An attester that runs `command` (an absolute path) for each document. */
export function nsmCommandAttester(command: string): AttestPublicKey {
  if (!isAbsolute(command)) throw new SealError('bad_config', `the attestation command must be an absolute path; got ${command}`);
  return async (publicKeyDer) => {
    const printed = (await run(command, ['--public-key', Buffer.from(publicKeyDer).toString('hex')])).trim();
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(printed) || printed.length > Math.ceil(MAX_DOCUMENT_BYTES / 3) * 4) {
      throw new SealError('unavailable', `attestation command ${command} did not print one base64 document of at most ${MAX_DOCUMENT_BYTES} bytes`);
    }
    const doc = new Uint8Array(Buffer.from(printed, 'base64'));
    let publicKey: Uint8Array | undefined;
    try {
      publicKey = decodeNitroPayload(decodeCoseSign1(doc).payload).publicKey;
    } catch (err) {
      throw new SealError('unavailable', `attestation command ${command} printed something that is not a Nitro attestation document: ${(err as Error).message}`, { cause: err });
    }
    if (!publicKey || !equalBytes(publicKey, publicKeyDer)) throw new SealError('unavailable', `attestation command ${command} printed a document for another public key`);
    return doc;
  };
}
