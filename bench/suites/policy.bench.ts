// What a vault policy costs a signing (docs/policies.md "Cost"): a coordinator (in this process) and three
// node processes that know only an operator key and learn the organization from the carried trust log.
// Two vaults of one organization, the same log carried with every request: one with no policy, one
// whose policy in force uses every rule kind (per-transaction cap, rolling window, recipient allow and
// deny lists, asset allow list, contract-call rule, default_deny, a 2-of-3 approval quorum). Each run signs
// a fresh EVM transfer intent over gRPC with the full ECDSA protocol (no presignatures); the governed one
// with its chain link, the vault's whole chain relayed (50 links signed in setup, one more per run, as
// the API relays it) and two approvals. Beside them, the policy work alone that a node does per intent,
// with the relayed links' decodings kept from earlier requests (as a node keeps them) and without.
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { publicKeyToAddress } from 'viem/utils';
import { toHex } from 'viem';
import { Cluster } from '../../test/cluster/cluster-harness.ts';
import { signedEntry, signer } from '../../test/core/trust/trust-fixtures.ts';
import { alice, bob, carol } from '../../test/core/policy/policy-fixtures.ts';
import { type RunningCoordinator } from '../../coordinator/coordinator-server.ts';
import { createClient } from '../../proto/grpc.ts';
import { CoordinatorService, Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { rpcFailure } from '../../core/rpc/rpc-error.ts';
import { decodeIntent, encodeIntent, signIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { chainLinkHash, decodeChainLink, nextChainLink, signChainLink, verifyChainLinkSignature, type ChainLink } from '../../core/policy/intent-chain.ts';
import { checkChain, type ChainHead, type DecodedRelayedLink, type RelayedLink } from '../../core/policy/chain-check.ts';
import { decodeRelayedKept } from '../../node/runtime/authorization/relayed-links.ts';
import { evaluatePolicy, ERC20_TRANSFER } from '../../core/policy/policy-evaluator.ts';
import { intentApprovalMessage, signApproval, type Approval } from '../../core/policy/policy-approval.ts';
import { parsePolicyDocument, type PolicyDocument } from '../../core/policy/policy-document.ts';
import type { BenchSuite } from '../harness.ts';
import { inProcessCoordinator, stopInProcess } from './in-process-coordinator.ts';

const ORG = 'org_policy_bench';
const OPEN = 'bench-open';
const GOVERNED = 'bench-governed';
const PATH = [44, 60, 0, 0, 0];
const CHAIN_ID = 31337n;
const NATIVE = `eip155:${CHAIN_ID}:native`;
const TOKEN = `0x${'70'.repeat(20)}`;
const RECIPIENT = new Uint8Array(20).fill(1);
const CAP = 1_000_000n;
const AMOUNT = 1000n;
/** Links of the governed vault's chain signed in setup, relayed with every later intent. */
const EARLIER = 50;
const operator = new Uint8Array(randomBytes(32));
const customer = signer(ORG, new Uint8Array(randomBytes(32)));

const policyBody = {
  format: 1, version: 1, vault_id: GOVERNED, change_delay_seconds: 86_400, default_deny: true,
  per_transaction_cap: { [NATIVE]: String(CAP) },
  rolling_window: { seconds: 86_400, caps: { [NATIVE]: String(CAP * 1000n) } },
  recipient_allowlist: [`0x${bytesToHex(RECIPIENT)}`, TOKEN],
  recipient_denylist: [`0x${'e0'.repeat(20)}`],
  asset_allowlist: [NATIVE, `eip155:${CHAIN_ID}:${TOKEN}`],
  contract_calls: [{ chain: `eip155:${CHAIN_ID}`, contract: TOKEN, selectors: [ERC20_TRANSFER] }],
  approvers: [alice, bob, carol].map((a) => ({ id: a.id, public_key: a.publicKey })),
  quorums: [
    // Every transfer of the native asset needs two of three.
    { k: 2, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '0' } } },
    { k: 1, approvers: ['carol'], when: { rule: 'contract_call' } },
    { k: 2, approvers: ['alice', 'bob', 'carol'], when: { rule: 'policy_change' } },
  ],
};
const policy: PolicyDocument = parsePolicyDocument(policyBody);

let cluster: Cluster;
let coordinator: RunningCoordinator;
let client: ReturnType<typeof createClient<(typeof CoordinatorService)['method']>>;
let dir = '';
let trustLog: Uint8Array[] = [];
const keys = new Map<string, { groupKey: string; chainCode: string; from: Uint8Array; nonce: bigint }>();

interface Built {
  fields: EvmTransferIntent;
  bytes: Uint8Array;
  request: Parameters<typeof client.sign>[0];
}

/** A signed EVM transfer intent of the vault's next nonce, and its gRPC request (without a policy's evidence). */
function transfer(vaultId: string, amount: bigint): Built {
  const k = keys.get(vaultId)!;
  const fields: EvmTransferIntent = {
    kind: 'evm.transfer', organization: ORG, walletId: 'w', chainId: CHAIN_ID, nonce: k.nonce++, from: k.from, to: RECIPIENT,
    asset: { kind: 'native' }, amount, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: bytesToHex(randomBytes(8)), notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const template = { nonce: Number(fields.nonce), gasLimit: 21_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  const bytes = encodeIntent(fields);
  return {
    fields, bytes,
    request: {
      vaultId, path: PATH, scheme: Scheme.ECDSA, digests: [evmSigningDigest(evmTransaction(fields, template))],
      authorization: {
        intent: bytes, intentSignature: signIntent(bytes, customer.secret), apiKeyId: customer.keyId, trustLog,
        template: encodeBlob('evm-template', { nonce: template.nonce, gasLimit: '21000', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000' }),
      },
    },
  };
}

// The governed vault's chain as the API keeps it: every link so far with its intent, oldest first.
const chain: RelayedLink[] = [];
let last: ChainLink | undefined;

const approve = (a: typeof alice, bytes: Uint8Array): Approval => signApproval(a.id, intentApprovalMessage(GOVERNED, policy.version, bytesToHex(sha256(bytes))), a.secret);

/**
 * A governed intent chained on the last link, with the whole chain relayed and two approvals. `extend`
 * false: a request that is not expected to be signed (the chain does not move).
 */
function governed(amount: bigint, extend = true): Built & { link: Uint8Array; relayed: RelayedLink[]; approvals: Approval[] } {
  const b = transfer(GOVERNED, amount);
  const link = nextChainLink({ organization: ORG, vaultId: GOVERNED, prev: last, intentHash: bytesToHex(sha256(b.bytes)), notAfter: b.fields.notAfter });
  const linkBytes = signChainLink(link, customer.secret);
  const relayed = [...chain];
  const approvals = [approve(alice, b.bytes), approve(bob, b.bytes)];
  b.request.authorization = {
    ...b.request.authorization!, chainLink: linkBytes, chain: relayed, approvals: approvals.map((a) => ({ approverId: a.approver_id, signature: a.signature })),
  } as NonNullable<typeof b.request.authorization>;
  if (extend) {
    chain.push({ link: linkBytes, intent: b.bytes });
    last = link;
  }
  return { ...b, link: linkBytes, relayed, approvals };
}

// Requests are built and signed ahead (as the customer's SDK and approvers would), in chain order, so
// the timed runs hold what the cluster does.
const POOL = 150;
let openPool: Built[] = [];
let governedPool: Built[] = [];
const signOpen = () => client.sign((openPool.shift() ?? transfer(OPEN, AMOUNT)).request);
const signGoverned = () => client.sign((governedPool.shift() ?? governed(AMOUNT)).request);

// The micro line: a node's per-intent policy work on link EARLIER + 1 with the EARLIER links before it
// relayed, the node's head at link EARLIER (decoding and verifying the link, checking the chain,
// evaluating the policy with its approvals).
let micro: { link: Uint8Array; bytes: Uint8Array; relayed: RelayedLink[]; approvals: Approval[]; head: ChainHead } | undefined;
function policyCheck(decode?: (r: RelayedLink) => DecodedRelayedLink): void {
  const m = micro!;
  const nowS = Math.floor(Date.now() / 1000);
  const link = decodeChainLink(m.link);
  if (!verifyChainLinkSignature(link, hexToBytes(customer.publicKey))) throw new Error('link does not verify');
  const intent = decodeIntent(m.bytes);
  const c = checkChain({ link, intent, intentBytes: m.bytes, vaultId: GOVERNED, relayed: m.relayed, head: m.head, windowSeconds: policy.rolling_window!.seconds, now: nowS, ...(decode ? { decode } : {}) });
  if (!c.ok) throw new Error(`chain refused: ${c.message}`);
  const d = evaluatePolicy({ policy, intent, intentHash: bytesToHex(sha256(m.bytes)), approvals: m.approvals, priorSpends: c.spends, now: nowS });
  if (!d.allow) throw new Error(`policy refused: ${d.message}`);
}

async function vault(vaultId: string): Promise<void> {
  const creationRequest = signedEntry(customer, 'POST', '/v1/vaults', { tier: 'hosted' }, { created: Math.floor(Date.now() / 1000) });
  const v = (await client.createVault({ vaultId, owner: ORG, tier: Tier.HOSTED, trustLog, creationRequest }, { deadline: Date.now() + 120_000 })).vault!;
  const groupKey = bytesToHex(v.publicKey);
  const chainCode = bytesToHex(v.chainCode);
  const derived = derive(groupKey, chainCode, PATH).publicKey;
  const from = publicKeyToAddress(toHex(secp256k1.Point.fromBytes(derived.toBytes(true)).toBytes(false)));
  keys.set(vaultId, { groupKey, chainCode, from: hexToBytes(from.slice(2)), nonce: 0n });
}

export const suite: BenchSuite = {
  title: 'signing under a node-enforced vault policy',
  async setup() {
    cluster = new Cluster();
    let port: number;
    ({ coordinator, dir, port } = await inProcessCoordinator(cluster, 'bench-policy-'));
    await Promise.all(['n1', 'n2', 'n3'].map((name) => cluster.startNode(name, { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) })));
    client = createClient(CoordinatorService, `127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const nowS = Math.floor(Date.now() / 1000);
    trustLog = [signBootstrap(ORG, customer.publicKey, nowS, operator), signedEntry(customer, 'PUT', `/v1/vaults/${GOVERNED}/policy`, { policy: policyBody }, { created: nowS })];
    await vault(OPEN);
    await vault(GOVERNED);

    // The same history on both vaults (and each node's OT setups done): EARLIER signings each, the
    // governed ones making the chain every later intent relays.
    for (let i = 0; i < EARLIER; i++) {
      await client.sign(transfer(OPEN, AMOUNT).request);
      await client.sign(governed(AMOUNT).request);
    }

    // Honest setup: the nodes evaluate the policy. An intent over the cap, chained and approved like
    // every other, is refused by them with the policy's code; one with no link at all likewise.
    const over = governed(CAP + 1n, false);
    const refusal = await client.sign(over.request).then(() => undefined, (err: unknown) => rpcFailure(err).code);
    if (refusal !== 'cap_exceeded') throw new Error(`an intent over the cap came back ${refusal ?? 'signed'}, not refused cap_exceeded: the nodes do not enforce the policy`);
    const unlinked = transfer(GOVERNED, AMOUNT);
    const noLink = await client.sign(unlinked.request).then(() => undefined, (err: unknown) => rpcFailure(err).code);
    if (noLink !== 'chain_link_required') throw new Error(`an intent without a chain link came back ${noLink ?? 'signed'}, not chain_link_required`);
    // The micro line checks link EARLIER + 1 of the same shape, allowed (not sent: the chain stays put).
    const ok = governed(AMOUNT, false);
    micro = { link: ok.link, bytes: ok.bytes, relayed: ok.relayed, approvals: ok.approvals, head: { seq: last!.seq, hash: chainLinkHash(last!), until: last!.until } };
    policyCheck();
    policyCheck(decodeRelayedKept);

    openPool = Array.from({ length: 300 }, () => transfer(OPEN, AMOUNT));
    governedPool = Array.from({ length: POOL }, () => governed(AMOUNT));
  },
  // Also after a setup that failed halfway (bench/harness.ts): stops only what was started.
  async teardown() {
    await stopInProcess({ client, cluster, coordinator, dir });
  },
  cases: [
    { name: 'policy.grpc.ecdsa.2of3.none', runs: 40, fn: signOpen },
    {
      name: 'policy.grpc.ecdsa.2of3.every-rule', baseline: 'policy.grpc.ecdsa.2of3.none', runs: 60, fn: signGoverned,
      extra: () => ({ relayed_links_first: EARLIER, relayed_links_last: EARLIER + POOL - governedPool.length - 1 }),
    },
    // As a node does it: the relayed links' decodings kept from earlier requests (relayed-links.ts).
    { name: 'policy.node-check.every-rule', runs: 200, fn: () => policyCheck(decodeRelayedKept), extra: () => ({ relayed_links: EARLIER }) },
    // The same on a node that sees the chain for the first time (every relayed link decoded).
    { name: 'policy.node-check.every-rule.cold', runs: 200, fn: () => policyCheck(), extra: () => ({ relayed_links: EARLIER }) },
  ],
};
