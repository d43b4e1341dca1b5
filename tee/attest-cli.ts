// `npm run tee-attest`: a TEE node's enrolment (docs/tee.md "Enrolling a TEE node"). From the node's
// identity as `npm run node-identity` prints it and the organization's id, it computes the binding
// (core/trust/tee-binding.ts), obtains an attestation document whose user_data is that binding, and
// prints {node_id, kind: "tee", signing_key, encryption_key, attestation} (the document in base64): the
// body of POST /v1/nodes, and an --identity file for `npm run cli -- nodes enrol`.
//
// Providers: `nsm`, inside a Nitro enclave, runs an external command (`<path> --user-data <hex>`) that
// asks the Nitro Security Module for the document (Node.js cannot issue the NSM's ioctl itself); `dev` signs it with a DEV-ONLY
// authority kept in a directory (tee/attestation/dev-authority-dir.ts), for local clusters and tests.
// Exits 2 on a usage error (bad arguments, an identity file that is not one), 1 on any other failure.
import { runNsmCommand } from './nsm-command.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { parseArgs } from 'node:util';
import { bytesToHex, equalBytes, hexToBytes } from '@noble/curves/utils.js';
import { teeNodeBinding } from '../core/trust/tee-binding.ts';
import { nodeIdFor } from '../core/trust/node-id.ts';
import { decodeCoseSign1 } from './attestation/cose-sign1.ts';
import { decodeNitroPayload } from './attestation/nitro-payload.ts';
import { MAX_DOCUMENT_BYTES } from './attestation/nitro.ts';
import { openDevAuthorityDir } from './attestation/dev-authority-dir.ts';

const USAGE = `usage: npm run tee-attest -- --identity <file|-> --organization <org> --provider nsm --nsm-command <absolute path> [--document-out <file>]
       npm run tee-attest -- --identity <file|-> --organization <org> --provider dev --authority-dir <dir>
                             --pcr0 <hex> [--pcr1 <hex>] [--pcr2 <hex>] [--document-out <file>]
Prints a TEE node's enrolment as one JSON line, {node_id, kind, signing_key, encryption_key, attestation}:
the attestation document (base64) whose user_data binds the node's keys to the organization.
  --identity       the JSON npm run node-identity printed on the node (NODE_KIND=tee); - reads it from stdin
  --organization   the organization that enrols the node (its NODE_OWNER)
  --provider nsm   inside a Nitro enclave: runs <path> --user-data <hex>, with no environment; the command asks
                   the NSM for an attestation with that user_data and prints the document, base64, on stdout
                   (docs/tee.md "Enrolling a TEE node")
  --provider dev   DEV-ONLY: signs the document with the authority kept in --authority-dir, created at first
                   use (pin <dir>/root.pem with NODE_TEE_ALLOW_DEV_ROOT / API_TEE_ALLOW_DEV_ROOT=true);
                   --pcr0/1/2 are the measurements it claims (48 bytes, hex; 1 and 2 default to zero)
  --document-out   also write the document's bytes to <file>, for nodes enrol --attestation-file
Exits 2 on a usage error, 1 on any other failure.`;

class UsageError extends Error {}

const OPTIONS = {
  identity: { type: 'string' }, organization: { type: 'string' }, provider: { type: 'string' },
  'authority-dir': { type: 'string' }, pcr0: { type: 'string' }, pcr1: { type: 'string' }, pcr2: { type: 'string' },
  'nsm-command': { type: 'string' }, 'document-out': { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const;

/** Options that belong to one provider only. */
const PROVIDER_OPTIONS = { dev: ['authority-dir', 'pcr0', 'pcr1', 'pcr2'], nsm: ['nsm-command'] } as const;

// As the trust log spells an organization (core/trust/trust-entry.ts).
const ORG = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const NODE_ID = /^n[0-9a-f]{20}$/;
const KEY_HEX = /^[0-9a-fA-F]{64}$/;
const PCR_HEX = /^[0-9a-fA-F]{96}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** How long the NSM command may take, and how much it may print. */

interface Identity {
  node_id: string;
  signing_key: string;
  encryption_key: string;
}

/** The node's public identity; its kind, when the file says one, must be tee. */
function readIdentity(path: string): Identity {
  let j: unknown;
  try {
    j = JSON.parse(readFileSync(path === '-' ? 0 : path, 'utf8'));
  } catch (err) {
    throw new UsageError(`--identity: cannot read JSON from ${path === '-' ? 'stdin' : path}: ${(err as Error).message}`);
  }
  const { node_id: id, signing_key: sk, encryption_key: ek, kind } = (j ?? {}) as Record<string, unknown>;
  if (typeof id !== 'string' || !NODE_ID.test(id) || typeof sk !== 'string' || !KEY_HEX.test(sk) || typeof ek !== 'string' || !KEY_HEX.test(ek)) {
    throw new UsageError('--identity: not a node identity as npm run node-identity prints it (node_id, signing_key, encryption_key)');
  }
  if (nodeIdFor(hexToBytes(sk.toLowerCase())) !== id) throw new UsageError('--identity: node_id is not the id derived from signing_key');
  // A node attaching as another kind is never seated in a customer_tee vault.
  if (kind !== undefined && kind !== 'tee') throw new UsageError(`--identity: printed by a node configured as ${String(kind)}: set its NODE_KIND to tee and print it again`);
  return { node_id: id, signing_key: sk.toLowerCase(), encryption_key: ek.toLowerCase() };
}

function pcr(value: string | undefined, flag: string): Uint8Array | undefined {
  if (value === undefined) return undefined;
  if (!PCR_HEX.test(value)) throw new UsageError(`--${flag} must be 48 bytes of hex (96 characters)`);
  return hexToBytes(value.toLowerCase());
}

/**
 * Runs the NSM command as `<command> --user-data <hex>`, the form the node's storage-key sealer uses with
 * `--public-key` (tee/seal/nsm-command-attester.ts), so one command in the enclave serves both.
 */
function runNsm(command: string, userData: Uint8Array): Promise<string> {
  return runNsmCommand(command, ['--user-data', bytesToHex(userData)], `--nsm-command ${command}`);
}

/**
 * The NSM command's answer: one base64 document that decodes as a Nitro attestation whose user_data is
 * the binding. Its chain and PCRs are for the verifiers (the API and every node) to judge.
 */
function nsmDocument(printed: string, binding: Uint8Array): Uint8Array {
  const text = printed.trim();
  if (!BASE64.test(text) || text.length % 4 !== 0) throw new Error('the NSM command did not print one base64 document');
  const doc = new Uint8Array(Buffer.from(text, 'base64'));
  if (doc.length > MAX_DOCUMENT_BYTES) throw new Error(`the NSM command printed a document of ${doc.length} bytes, more than ${MAX_DOCUMENT_BYTES}`);
  const payload = decodeNitroPayload(decodeCoseSign1(doc).payload);
  if (!payload.userData || !equalBytes(payload.userData, binding)) throw new Error("the NSM document's user_data is not this node's binding");
  return doc;
}

type Provider = (binding: Uint8Array) => Promise<Uint8Array>;
type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];

function devProvider(values: Values): Provider {
  const dir = values['authority-dir'];
  if (dir === undefined || values.pcr0 === undefined) throw new UsageError('--provider dev needs --authority-dir and --pcr0');
  const pcrs = new Map<number, Uint8Array>();
  for (const [i, flag] of [[0, 'pcr0'], [1, 'pcr1'], [2, 'pcr2']] as const) {
    const value = pcr(values[flag], flag);
    if (value) pcrs.set(i, value);
  }
  if (pcrs.get(0)!.every((b) => b === 0)) throw new UsageError('--pcr0 is all zero: that is a debug enclave, which no organization may pin');
  return async (binding) => {
    const { authority, rootFile, created } = openDevAuthorityDir(dir);
    process.stderr.write(`tee-attest: DEV-ONLY authority ${created ? 'created' : 'reused'}; pin ${rootFile} only with NODE_TEE_ALLOW_DEV_ROOT=true / API_TEE_ALLOW_DEV_ROOT=true, never in production\n`);
    return authority.attest({ at: new Date(), pcrs, userData: binding });
  };
}

function nsmProvider(values: Values): Provider {
  const command = values['nsm-command'];
  if (command === undefined) throw new UsageError('--provider nsm needs --nsm-command');
  if (!isAbsolute(command)) throw new UsageError('--nsm-command must be an absolute path (it runs with no environment, so no PATH)');
  return async (binding) => nsmDocument(await runNsm(command, binding), binding);
}

/** The enrolment JSON, or undefined for --help. */
async function run(argv: string[]): Promise<string | undefined> {
  let values: Values;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return undefined;
  const { identity: identityPath, organization: org, provider } = values;
  if (identityPath === undefined || org === undefined || provider === undefined) throw new UsageError('--identity, --organization and --provider are required');
  if (!ORG.test(org)) throw new UsageError('--organization is not an organization id');
  if (provider !== 'dev' && provider !== 'nsm') throw new UsageError('--provider must be nsm or dev');
  const misplaced = PROVIDER_OPTIONS[provider === 'dev' ? 'nsm' : 'dev'].find((o) => values[o] !== undefined);
  if (misplaced) throw new UsageError(`--${misplaced} does not go with --provider ${provider}`);
  const attest = provider === 'dev' ? devProvider(values) : nsmProvider(values);
  const identity = readIdentity(identityPath);

  const doc = await attest(teeNodeBinding(org, identity.node_id, identity.signing_key, identity.encryption_key));
  if (values['document-out'] !== undefined) writeFileSync(values['document-out'], doc);
  return JSON.stringify({ node_id: identity.node_id, kind: 'tee', signing_key: identity.signing_key, encryption_key: identity.encryption_key, attestation: Buffer.from(doc).toString('base64') });
}

try {
  const out = await run(process.argv.slice(2));
  process.stdout.write((out ?? USAGE) + '\n');
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`tee-attest: ${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`tee-attest: ${(err as Error).message}\n`);
  process.exit(1);
}
