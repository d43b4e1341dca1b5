// Inside a Nitro enclave the attestation document comes from the Nitro Security Module, through an
// ioctl on /dev/nsm that Node.js cannot issue itself. So, as for enrolment (tee/attest-cli.ts), the node
// runs a small external command that can: it is called as `<command> --public-key <hex DER>` and prints
// the NSM's document for that public_key, base64, on stdout. The command gets no environment (the
// node's KMS credentials are in it), no input, a deadline and a cap on what it prints; the document it
// prints must be a Nitro document that carries exactly the public key asked for.
import { spawn } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { equalBytes } from '@noble/curves/utils.js';
import { decodeCoseSign1 } from '../attestation/cose-sign1.ts';
import { decodeNitroPayload } from '../attestation/nitro-payload.ts';
import { MAX_DOCUMENT_BYTES } from '../attestation/nitro.ts';
import { SealError } from './seal-error.ts';
import type { AttestPublicKey } from './kms-sealer.ts';

export const NSM_COMMAND_TIMEOUT_MS = 30_000;
const MAX_OUTPUT = 64 * 1024;

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'], env: {} });
    // A deadline of our own, cleared however the command ends (spawn's `timeout` outlives a command that
    // never started).
    const deadline = setTimeout(() => child.kill('SIGKILL'), NSM_COMMAND_TIMEOUT_MS);
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_OUTPUT) chunks.push(c);
      else child.kill('SIGKILL');
    });
    child.on('error', (err) => {
      clearTimeout(deadline);
      reject(new SealError('unavailable', `attestation command ${command}: ${err.message}`, { cause: err }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      if (size > MAX_OUTPUT) return reject(new SealError('unavailable', `attestation command ${command} printed more than ${MAX_OUTPUT} bytes`));
      if (signal === 'SIGKILL') return reject(new SealError('unavailable', `attestation command ${command} gave no document in ${NSM_COMMAND_TIMEOUT_MS} ms`));
      if (code !== 0) return reject(new SealError('unavailable', `attestation command ${command} failed (${signal ? `signal ${signal}` : `exit ${code}`})`));
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
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
