// The check a node runs before it contributes to any signature (DESIGN.md "Trust"): the carried trust
// log applies (docs/trust.md), the intent verifies under an active API key of the key's organization in
// the node's own registry, has not expired, a hosted vault's end-user token names it, it sends from the
// address of the key and path being signed with, the intent fixes what makes its transaction unique on
// chain (the EVM nonce, the Bitcoin outputs spent) and the template agrees, and every digest requested is
// one this node recomputes from the intent and the service's template (for a Safe transaction, the
// SafeTx EIP-712 digest from the intent alone). A node refuses anything else,
// whatever the coordinator or API says. What it agrees to sign comes back as a grant (the EVM nonce, or the exact Bitcoin input set
// with amounts) for the intent ledger to claim before anything derived from the signing leaves.
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { publicKeyToAddress } from 'viem/utils';
import { toHex as viemHex } from 'viem';
import { decodeIntent, intentExpiryProblem, verifyIntentSignature, type BtcTransferIntent, type EvmTransferIntent, type Intent, type SafeTxIntent } from '../../../core/intents/intent.ts';
import { safeOperationProblem, safeTxHash } from '../../../core/chains/evm/safe-tx.ts';
import { IntentFormatError } from '../../../core/intents/canonical.ts';
import { evmSigningDigest, evmTransaction, EvmTemplateError, type EvmTemplate } from '../../../core/chains/evm/evm-transaction.ts';
import { derive } from '../../../core/keys/bip32.ts';
import { outputKey } from '../../../core/keys/taproot.ts';
import { pointHex } from '../../../core/keys/point.ts';
import { decodeBlob } from '../../../core/codec/blob.ts';
import { SessionRefused } from '../session-host.ts';
import type { ErrorCode } from '../../../core/errors/error-codes.ts';
import type { TrustRegistry } from './trust-registry.ts';
import { applyCarriedLog } from './carried-log.ts';
import { vaultPolicy, type OrgTrust } from './trust-state.ts';
import { ChainLinkError, decodeChainLink, verifyChainLinkSignature, type SignedChainLink } from '../../../core/policy/intent-chain.ts';
import { checkChain, type ChainHead } from '../../../core/policy/chain-check.ts';
import { decodeRelayedKept } from './relayed-links.ts';
import { evaluatePolicy } from '../../../core/policy/policy-evaluator.ts';
import { verifyPasskeyApprovals } from '../../../core/policy/passkey-approval.ts';
import { intentApprovalMessage } from '../../../core/policy/policy-approval.ts';
import { checkEndUserToken } from './end-user-token.ts';
import { BoundedMemo } from '../../../common/memo.ts';
import type { SignFields } from '../../../core/session/sign-fields.ts';
import { BITCOIN_NETWORK_PARAMS } from '../../../core/chains/bitcoin/network-params.ts';
import { bitcoinSighashes, checkSpentOutputs } from '../../../core/chains/bitcoin/sighash.ts';

/** A hosted key's end-user binding, fixed at key generation (docs/trust.md). */
export interface EndUserBinding {
  /** Whether every signature needs an end-user token. */
  required: boolean;
  /** The end user the vault is bound to, if its creation request named one. */
  subject?: string;
}

export interface SignRequestView extends SignFields {
  /** The vault (its key id): whose policy and intent chain apply. */
  keyId?: string;
  owner: string;
  groupKey: string;
  chainCode: string;
  /** Hosted keys: the end-user binding stored with the share at key generation. */
  endUser?: EndUserBinding | undefined;
}

/** An EVM transaction of an intent: one nonce of one sender on one chain can be mined once. */
export interface EvmUse {
  chain: 'evm';
  chainId: bigint;
  /** 0x address, lower case. */
  from: string;
  nonce: number;
}

/** A Bitcoin spend of an intent: the exact set of outputs it spends, with their amounts. */
export interface BtcUse {
  chain: 'bitcoin';
  /** Sorted by txid then vout; txid in display order, hex. */
  inputs: { txid: string; vout: number; amount: bigint }[];
}

/**
 * A Safe owner's signature on one SafeTx: the EIP-712 digest, which the intent fixes whole (the Safe's
 * nonce included), so every signing of the intent is over this one digest.
 */
export interface SafeTxUse {
  chain: 'evm-safe-tx';
  chainId: bigint;
  /** 0x addresses, lower case. */
  safe: string;
  owner: string;
  safeNonce: bigint;
  /** The SafeTx digest, hex. */
  digest: string;
}

/**
 * What an authorized request signs for its intent. Two signings of one intent may differ in fees, but
 * never in the EVM nonce or the Bitcoin input set: only one of them can then be mined. A Safe
 * transaction's has no fees: every signing of it is over the one SafeTx digest.
 */
export interface SignGrant {
  /** SHA-256 of the intent bytes, hex (the API's `intent_sha256`). */
  intentHash: string;
  /** The intent's expiry: a node may forget the grant once it has passed. */
  notAfter: bigint;
  use: EvmUse | BtcUse | SafeTxUse;
  /**
   * A vault under a policy: the link this signing adds to the node's view of the vault's intent chain,
   * and the head it was checked against; the ledger writes it with the claim, if the head is unchanged.
   */
  chain?: ChainAdvance;
}

export interface ChainAdvance {
  vaultId: string;
  /** The node's head when the chain was checked (undefined: none). */
  expected: ChainHead | undefined;
  head: ChainHead;
  /** The head itself signed again: nothing moves. */
  retry: boolean;
  /** The verified chain, seq -> link hash (chain-check.ts). */
  known: Map<bigint, string>;
}

export interface SignAuthorizer {
  /** Refuses (SessionRefused) or returns what is to be signed, for the intent ledger to claim. */
  authorize(req: SignRequestView): Promise<SignGrant>;
}

bitcoin.initEccLib(ecc);

// The sender's address and output script depend only on public inputs; computing them (a point check
// and an address encoding) on every signature cost more than the sighashes themselves.
interface OwnPayment {
  address: string;
  output: Uint8Array;
}

const ownPayments = new BoundedMemo<OwnPayment>(4096);

function ownPayment(scheme: 'taproot' | 'ecdsa', derivedKey: string, networkName: BtcTransferIntent['network']): OwnPayment {
  return ownPayments.get(`${scheme}/${networkName}/${derivedKey}`, () => {
    const network = BITCOIN_NETWORK_PARAMS[networkName];
    const p = scheme === 'taproot' ? bitcoin.payments.p2tr({ pubkey: outputKey(derivedKey), network }) : bitcoin.payments.p2wpkh({ pubkey: hexToBytes(derivedKey), network });
    return { address: p.address!, output: p.output! };
  });
}

/** The EVM address of a 33-byte compressed key (hex), lower case. */
const evmAddress = (derivedKey: string) => publicKeyToAddress(viemHex(secp256k1.Point.fromBytes(hexToBytes(derivedKey)).toBytes(false))).toLowerCase();

const refuse = (code: ErrorCode, message: string): never => {
  throw new SessionRefused(code, message);
};

export interface IntentAuthorizerOptions {
  /** This node's last signed link of a vault's intent chain (the intent ledger keeps it). */
  chainHead?: (vaultId: string) => Promise<ChainHead | undefined>;
}

export class IntentAuthorizer implements SignAuthorizer {
  constructor(private readonly trust: TrustRegistry, private readonly now: () => number = Date.now, private readonly opts: IntentAuthorizerOptions = {}) {}

  async authorize(req: SignRequestView): Promise<SignGrant> {
    let bytes: Uint8Array;
    let intent: Intent;
    try {
      bytes = req.intent;
      intent = decodeIntent(bytes);
    } catch (err) {
      return refuse('bad_intent', err instanceof IntentFormatError ? err.message : 'malformed intent');
    }
    if (intent.organization !== req.owner) refuse('wrong_organization', 'the intent names another organization than the key\'s owner');
    const org = await applyCarriedLog(this.trust, req.owner, req.trustLog);
    const pub = await this.trust.activeKey(req.owner, req.apiKeyId);
    if (!pub) refuse('unknown_api_key', `API key ${req.apiKeyId} is not active for ${req.owner}`);
    if (!(req.intentSignature instanceof Uint8Array) || req.intentSignature.length !== 64 || !verifyIntentSignature(bytes, req.intentSignature, pub!)) {
      refuse('bad_intent_signature', 'intent signature does not verify');
    }
    const expiry = intentExpiryProblem(intent.notAfter, BigInt(Math.floor(this.now() / 1000)));
    if (expiry === 'intent_expiry_required') refuse(expiry, 'the intent has no not_after; nodes sign only intents that expire');
    if (expiry === 'intent_expiry_too_far') refuse(expiry, 'the intent\'s not_after is more than 24 hours ahead');
    if (expiry === 'intent_expired') refuse(expiry, 'the intent has expired');
    if (req.endUser?.required) {
      await checkEndUserToken({ token: req.endUserToken, config: org.endUser, subject: req.endUser.subject, intent: bytes, nowMs: this.now(), memberAction: req.memberAction });
    } else if (req.memberAction !== undefined) {
      // A binding means a member's approval was asked for: a key that needs none is not what was meant.
      refuse('member_action_mismatch', 'a member-action binding came for a key that signs without end-user authorization');
    }
    const derived = derive(req.groupKey, req.chainCode, req.path).publicKey;
    const { digests: expected, use } = intent.kind === 'evm.transfer' ? this.evmDigests(intent, req, pointHex(derived))
      : intent.kind === 'evm.safe_tx' ? this.safeTxDigests(intent, req, pointHex(derived)) : this.btcDigests(intent, req, pointHex(derived));
    if (expected.length !== req.digests.length || expected.some((d, i) => d !== bytesToHex(req.digests[i]!))) {
      refuse('digest_mismatch', 'the digests asked for are not the ones this intent and template produce');
    }
    const intentHash = bytesToHex(sha256(bytes));
    const chain = await this.checkPolicy(req, org, intent, bytes, intentHash, pub!);
    return { intentHash, notAfter: intent.notAfter, use, ...(chain ? { chain } : {}) };
  }

  /**
   * The vault's policy in force on this node, from its own trust log (docs/policies.md): the intent's
   * chain link and the relayed chain verify and reach back as far as the window needs, and the
   * evaluator allows the intent with the approvals given and the spends the chain shows. Nothing to
   * check (undefined) for a vault without a policy.
   */
  private async checkPolicy(req: SignRequestView, org: OrgTrust, intent: Intent, bytes: Uint8Array, intentHash: string, pub: Uint8Array): Promise<ChainAdvance | undefined> {
    const nowS = Math.floor(this.now() / 1000);
    const policy = req.keyId === undefined ? undefined : vaultPolicy(org, req.keyId, nowS);
    if (!policy) return undefined;
    const vaultId = req.keyId!;
    if (!req.chainLink?.length) return refuse('chain_link_required', `vault ${vaultId} is under policy version ${policy.doc.version}: its intents come with a link of the vault's intent chain`);
    let link: SignedChainLink;
    try {
      link = decodeChainLink(req.chainLink);
    } catch (err) {
      return refuse('bad_chain', err instanceof ChainLinkError ? err.message : 'malformed chain link');
    }
    if (!verifyChainLinkSignature(link, pub)) refuse('bad_chain', 'the chain link is not signed by the key that signed the intent');
    if (!this.opts.chainHead) return refuse('bug', 'this node keeps no intent chain heads');
    const expected = await this.opts.chainHead(vaultId);
    const chain = checkChain({ link, intent, intentBytes: bytes, vaultId, relayed: req.chain ?? [], head: expected, windowSeconds: policy.doc.rolling_window?.seconds ?? 0, now: nowS, decode: decodeRelayedKept });
    if (!chain.ok) return refuse(chain.code, chain.message);
    const approvals = req.approvals ?? [];
    // Members' passkey approvals verify under the end-user auth keys of this node's own trust state.
    const passkeys = approvals.some((a) => a.passkey !== undefined)
      ? await verifyPasskeyApprovals(policy.doc, intentApprovalMessage(policy.doc.vault_id, policy.doc.version, intentHash), approvals, org.endUser ? { jwks: { keys: org.endUser.jwks.keys }, audience: org.endUser.audience, ...(org.endUser.accountCenter ? { accountCenter: org.endUser.accountCenter } : {}) } : undefined, nowS)
      : undefined;
    const decision = evaluatePolicy({ policy: policy.doc, intent, intentHash, approvals, priorSpends: chain.spends, now: nowS, ...(passkeys ? { passkeyVerified: passkeys.verified } : {}) });
    if (!decision.allow) refuse(decision.code, `policy version ${policy.doc.version}: ${decision.message}`);
    return { vaultId, expected, head: chain.head, retry: chain.retry, known: chain.known };
  }

  private evmDigests(intent: EvmTransferIntent, req: SignRequestView, derivedKey: string): { digests: string[]; use: EvmUse } {
    if (req.scheme !== 'ecdsa') refuse('wrong_scheme', 'EVM transactions are signed with ECDSA');
    const from = evmAddress(derivedKey);
    if (from !== viemHex(intent.from).toLowerCase()) refuse('wrong_sender', 'the intent sends from another address than this key and path');
    // The intent fixes the nonce: whichever nodes sign it, with whatever fees, only one transaction of
    // this sender can be mined for it. Without it, two subsets could sign it at two nonces, each with a
    // node whose own ledger has never seen the other.
    if (intent.nonce === undefined) refuse('intent_nonce_required', 'an EVM intent must name its nonce (intent version 3; POST /v1/transactions/prepare reserves one)');
    let t: EvmTemplate;
    try {
      const raw = decodeBlob<{ nonce: number; gasLimit: string; maxFeePerGas: string; maxPriorityFeePerGas: string }>('evm-template', req.template);
      t = { nonce: raw.nonce, gasLimit: BigInt(raw.gasLimit), maxFeePerGas: BigInt(raw.maxFeePerGas), maxPriorityFeePerGas: BigInt(raw.maxPriorityFeePerGas) };
    } catch {
      return refuse('bad_template', 'malformed EVM template');
    }
    if (!Number.isSafeInteger(t.nonce) || BigInt(t.nonce) !== intent.nonce) refuse('wrong_evm_nonce', `the template's nonce ${String(t.nonce)} is not the intent's ${intent.nonce}`);
    try {
      const digests = [bytesToHex(evmSigningDigest(evmTransaction(intent, t)))];
      return { digests, use: { chain: 'evm', chainId: intent.chainId, from, nonce: t.nonce } };
    } catch (err) {
      return refuse('bad_template', err instanceof EvmTemplateError ? err.message : 'malformed EVM template');
    }
  }

  /**
   * A Safe owner's signature (intent kind 3): the one SafeTx EIP-712 digest this node computes from the
   * intent, by the key and path whose address the intent names as the owner. The intent leaves the
   * service nothing to choose, so the template must be empty; the digest asked for is only compared.
   */
  private safeTxDigests(intent: SafeTxIntent, req: SignRequestView, derivedKey: string): { digests: string[]; use: SafeTxUse } {
    if (req.scheme !== 'ecdsa') refuse('wrong_scheme', 'a Safe owner signs with ECDSA');
    const owner = evmAddress(derivedKey);
    if (owner !== viemHex(intent.owner).toLowerCase()) refuse('wrong_sender', 'the intent names another owner than this key and path\'s address');
    const op = safeOperationProblem(intent);
    if (op) refuse('delegatecall_refused', op);
    if (req.template.length) refuse('bad_template', 'a Safe transaction intent leaves nothing to a template');
    const digest = bytesToHex(safeTxHash(intent));
    return { digests: [digest], use: { chain: 'evm-safe-tx', chainId: intent.chainId, safe: viemHex(intent.safe).toLowerCase(), owner, safeNonce: intent.safeNonce, digest } };
  }

  private btcDigests(intent: BtcTransferIntent, req: SignRequestView, derivedKey: string): { digests: string[]; use: BtcUse } {
    // P2TR key path with BIP-340 (taproot), or P2WPKH with ECDSA under the derived key itself.
    if (req.scheme !== 'taproot' && req.scheme !== 'ecdsa') return refuse('unsupported_scheme', 'Bitcoin intents are signed for P2TR (taproot) or P2WPKH (ecdsa) spends');
    const network = BITCOIN_NETWORK_PARAMS[intent.network];
    const own = ownPayment(req.scheme, derivedKey, intent.network);
    if (own.address !== intent.from) refuse('wrong_sender', 'the intent spends from another address than this key and path');
    // BIP-143 commits a P2WPKH signature to its own input's amount only: with amounts from the template,
    // two sessions that each understate the other input would yield one transaction paying any fee.
    // The intent fixes the outputs spent: two subsets of nodes can then only sign spends of the same
    // outputs, of which one can be mined. Left to the service, each could be given other inputs.
    if (!intent.inputs.length) refuse('intent_inputs_required', 'a Bitcoin intent must name the outputs it spends (GET /v1/wallets/{id}/utxos lists them)');
    const namedAmounts = intent.inputs.every((i) => i.amount !== undefined);
    if (req.scheme === 'ecdsa' && !namedAmounts) refuse('input_amounts_required', 'a P2WPKH spend needs an intent naming its inputs with their amounts (intent version 2)');
    let tx: bitcoin.Transaction;
    let prevouts: { script: Uint8Array; value: bigint }[];
    try {
      const t = decodeBlob<{ tx: string; prevouts: { script: string; value: string }[] }>('btc-template', req.template);
      tx = bitcoin.Transaction.fromHex(t.tx);
      prevouts = t.prevouts.map((p) => ({ script: hexToBytes(p.script), value: BigInt(p.value) }));
    } catch {
      return refuse('bad_template', 'malformed Bitcoin template');
    }
    try {
      checkSpentOutputs(tx, prevouts);
    } catch (err) {
      return refuse('bad_template', (err as Error).message);
    }
    for (const p of prevouts) if (bytesToHex(p.script) !== bytesToHex(own.output!)) refuse('foreign_input', 'an input does not spend from the intent\'s address');
    const spent = tx.ins.map((i, n) => ({ txid: bytesToHex(Uint8Array.from(i.hash).reverse()), vout: i.index, amount: prevouts[n]!.value }));
    const outpoint = (i: { txid: string; vout: number }) => `${i.txid}:${i.vout}`;
    if (new Set(spent.map(outpoint)).size !== spent.length) refuse('bad_template', 'an output is spent twice');
    const want = intent.inputs.map((i) => `${bytesToHex(i.txid)}:${i.vout}`).sort();
    const got = spent.map(outpoint).sort();
    if (want.join() !== got.join()) refuse('wrong_inputs', 'the inputs differ from the intent\'s');
    if (namedAmounts) {
      const authorized = new Map(intent.inputs.map((i) => [`${bytesToHex(i.txid)}:${i.vout}`, i.amount!]));
      for (const s of spent) {
        if (authorized.get(outpoint(s)) !== s.amount) refuse('wrong_input_amounts', `the template says ${outpoint(s)} holds ${s.amount} sat, the intent ${authorized.get(outpoint(s))}`);
      }
    }
    const use: BtcUse = { chain: 'bitcoin', inputs: [...spent].sort((a, b) => (a.txid < b.txid ? -1 : a.txid > b.txid ? 1 : a.vout - b.vout)) };
    // Every intent output exactly once, everything else is change back to the sender.
    const outs = tx.outs.map((o) => ({ script: bytesToHex(o.script), value: BigInt(o.value) }));
    for (const o of intent.outputs) {
      let script: string;
      try {
        script = bytesToHex(bitcoin.address.toOutputScript(o.address, network));
      } catch {
        return refuse('bad_intent', `output address ${o.address} is not valid on ${intent.network}`);
      }
      const at = outs.findIndex((x) => x.script === script && x.value === o.amount);
      if (at < 0) refuse('wrong_outputs', `the transaction does not pay ${o.amount} sat to ${o.address}`);
      outs.splice(at, 1);
    }
    if (outs.some((o) => o.script !== bytesToHex(own.output!))) refuse('wrong_outputs', 'an extra output does not return change to the sender');
    const fee = prevouts.reduce((a, p) => a + p.value, 0n) - tx.outs.reduce((a, o) => a + BigInt(o.value), 0n);
    // Signed size: a key-path input adds a 64-byte signature witness (1 item + length = 66 bytes); a
    // P2WPKH input at most a 72-byte DER signature and a 33-byte key (2 items + lengths = 108 bytes).
    const witness = req.scheme === 'taproot' ? 66 : 108;
    const vsize = BigInt(Math.ceil((tx.weight() + (tx.hasWitnesses() ? 0 : 2) + tx.ins.length * witness) / 4));
    if (fee < 0n) refuse('bad_template', 'outputs exceed inputs');
    if (fee > intent.maxFee) refuse('fee_ceiling', `fee ${fee} sat exceeds the intent's ${intent.maxFee}`);
    if (fee > intent.maxFeeRate * vsize) refuse('fee_ceiling', `fee rate exceeds ${intent.maxFeeRate} sat/vB`);
    // BIP-341 key path or BIP-143 P2WPKH: the function the API built the spend with, run here on the
    // template this node has just checked against the intent.
    try {
      return { use, digests: bitcoinSighashes(tx, prevouts, req.scheme === 'taproot' ? 'p2tr' : 'p2wpkh').map(bytesToHex) };
    } catch (err) {
      return refuse('bad_template', (err as Error).message);
    }
  }
}
