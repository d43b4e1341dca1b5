// A stand-in for the NSM attestation command a tee node runs (tee/seal/nsm-command-attester.ts): an
// executable script, called as `<script> --public-key <hex>`, that asks a loopback
// HTTP server of the test for a document and prints it in base64. The server makes the document with the
// DEV-ONLY authority, for the enclave the test says it is (its PCRs), or misbehaves as told; it refuses
// to answer a script that was handed the node's KMS credentials in its environment.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';

export type StandInMode = 'attest' | 'other-key' | 'garbage' | 'fail';

export interface NsmStandIn {
  /** Absolute path of the script. */
  readonly command: string;
  /** The enclave's measurements the next documents carry. */
  pcrs: Record<number, Uint8Array>;
  mode: StandInMode;
  /** The public keys asked for, hex, in order. */
  readonly asked: string[];
  close(): Promise<void>;
}

export async function startNsmStandIn(authority: DevAttestationAuthority, pcrs: Record<number, Uint8Array>): Promise<NsmStandIn> {
  const standIn: NsmStandIn = { command: '', pcrs, mode: 'attest', asked: [], close: async () => {} };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const publicKey = url.searchParams.get('public_key') ?? '';
    standIn.asked.push(publicKey);
    // The test runner may add its own variables to every child; the node's credentials must not be there.
    if ((url.searchParams.get('environment') ?? '').split(',').some((name) => /^(NODE_KMS_|AWS_)/.test(name))) {
      res.end('the command was given the node environment');
      return;
    }
    if (standIn.mode === 'fail') {
      res.writeHead(500).end();
      return;
    }
    if (standIn.mode === 'garbage') {
      res.end('this is not a document');
      return;
    }
    const key = standIn.mode === 'other-key' ? new Uint8Array(294).fill(1) : new Uint8Array(Buffer.from(publicKey, 'hex'));
    res.end(Buffer.from(authority.attest({ at: new Date(), pcrs: standIn.pcrs, publicKey: key })).toString('base64'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'nsm-stand-in-'));
  const command = join(dir, 'nsm-attest.mjs');
  writeFileSync(command, `#!${process.execPath}
const args = process.argv.slice(2);
if (args.length !== 2 || args[0] !== '--public-key' || !/^[0-9a-f]+$/.test(args[1])) process.exit(64);
const res = await fetch('http://127.0.0.1:${port}/?public_key=' + args[1] + '&environment=' + Object.keys(process.env).join(','));
if (!res.ok) process.exit(1);
process.stdout.write(await res.text() + '\\n');
`);
  chmodSync(command, 0o755);
  Object.assign(standIn, {
    command,
    close: () => new Promise<void>((resolve) => server.close(() => {
      rmSync(dir, { recursive: true, force: true });
      resolve();
    })),
  });
  return standIn;
}
