// Vault policies on the API's side (docs/policies.md). The nodes enforce a vault's policy from the
// customer-signed trust log; the API keeps the same log, reads it with the same rules (core/policy/) to
// answer fast and to show it, extends the vault's intent chain with the links the customer signs, and
// relays to the nodes what they need to check an intent: the chain around its link and the approvals.
// Nothing here is trusted by a node: a malicious API can withhold, never forge.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { applyPolicyChange, parsePolicyChange, pendingPolicies, policyInForce, type PolicyVersion } from '../../core/policy/policy-log.ts';
import { intentApprovalMessage, policyChangeApprovalMessage, type Approval } from '../../core/policy/policy-approval.ts';
import { verifyPasskeyApprovals } from '../../core/policy/passkey-approval.ts';
import { checkApprovals, evaluatePolicy, type PolicyDecision, type QuorumStatus } from '../../core/policy/policy-evaluator.ts';
import { policyHash, type PolicyDocument } from '../../core/policy/policy-document.ts';
import { ChainLinkError, chainLinkHash, decodeChainLink, MAX_RELAYED_LINKS, verifyChainLinkSignature, ZERO_HASH } from '../../core/policy/intent-chain.ts';
import { checkChain, type RelayedLink } from '../../core/policy/chain-check.ts';
import type { Intent } from '../../core/intents/intent.ts';
import type { Op } from '../store/record-repository.ts';
import type { PolicyVersionView, PolicyView } from '../../core/api-schemas/governance.ts';
import { CHAIN_LINKS, END_USER_AUTH, VAULT_POLICIES } from './collections.ts';
import type { ChainLinkRecord, VaultPolicyState, VaultRecord } from './records.ts';
import type { VaultService } from './vault-service.ts';
import { legacyPolicyMigration } from './policy-migration.ts';

/** Links the API reaches back beyond the window's edge, for nodes whose clock runs behind its own. */
const CLOCK_MARGIN_S = 600;

const seqKey = (vaultId: string, seq: number) => `${vaultId}/${String(seq).padStart(12, '0')}`;

/** What a transaction of a vault under a policy takes from admission: its state, the ops that extend the chain, and what the nodes will see. */
export interface Admission {
  state: 'created' | 'awaiting_approval';
  policyVersion: number;
  seq: number;
  approvals: Approval[];
  quorums: QuorumStatus[];
  ops: Op[];
}

const refusal = (d: Extract<PolicyDecision, { allow: false }>, problems?: Map<string, string>) =>
  new CustodyError(d.code as ErrorCode, `policy version ${d.policyVersion}: ${d.message}${problems?.size ? ` (${[...problems].map(([id, why]) => `${id}: ${why}`).join('; ')})` : ''}`);

export class VaultPolicies {
  constructor(private readonly vaults: VaultService, private readonly now: () => Date = () => new Date()) {}

  private nowS(): number {
    return Math.floor(this.now().getTime() / 1000);
  }

  state(vaultId: string): Promise<VaultPolicyState | undefined> {
    return VAULT_POLICIES.in(this.vaults.store).get(vaultId);
  }

  /** The version in force now (undefined: the vault has no policy in its trust log). */
  async inForce(vaultId: string, nowS = this.nowS()): Promise<PolicyVersion | undefined> {
    return policyInForce((await this.state(vaultId))?.record, nowS);
  }

  async view(org: string, vaultId: string): Promise<PolicyView> {
    const v = await this.vaults.vault(org, vaultId);
    const s = await this.state(vaultId);
    const nowS = this.nowS();
    const current = policyInForce(s?.record, nowS);
    const versionView = (p: PolicyVersion): PolicyVersionView => ({ version: p.doc.version, sha256: p.hash, effective_at: p.effectiveAt, tightening: p.tightening, policy: p.doc });
    return {
      vault_id: vaultId,
      in_force: current ? versionView(current) : null,
      pending: pendingPolicies(s?.record, nowS).map(versionView),
      refused: s?.record.refused ?? [],
      chain: s?.head ?? null,
      legacy_policy: v.policy ?? null,
      migration: s?.record.versions.length ? null : legacyPolicyMigration(v),
    };
  }

  /**
   * The member approvers among `approvals` whose passkey approvals of `message` verify, under the
   * organization's end-user auth registration as the API holds it (the nodes check under their own).
   */
  async passkeys(org: string, policy: PolicyDocument, message: Uint8Array, approvals: readonly Approval[]): Promise<{ verified: Set<string>; problems: Map<string, string> }> {
    if (!approvals.some((a) => a.passkey !== undefined)) return { verified: new Set(), problems: new Map() };
    const config = await END_USER_AUTH.in(this.vaults.store).get(org);
    return verifyPasskeyApprovals(policy, message, approvals, config ? { jwks: { keys: config.jwks.keys }, audience: config.audience, ...(config.accountCenter ? { accountCenter: config.accountCenter } : {}) } : undefined, this.nowS());
  }

  /**
   * PUT /v1/vaults/{id}/policy: a change the nodes would accept, appended to the trust log with
   * `vault.policy.changed`; one they would refuse is refused here and changes nothing (a stale version
   * 409, missing or bad approvals 403, a malformed document 400).
   */
  async put(org: string, vaultId: string, body: unknown, created: number, entry: Uint8Array): Promise<PolicyView> {
    await this.vaults.vault(org, vaultId);
    const change = parsePolicyChange(body, vaultId);
    await this.vaults.withOrgLock(org, async () => {
      const s = await this.state(vaultId);
      const nowS = this.nowS();
      const latest = s?.record.versions.at(-1);
      if (latest && change.policy.version <= latest.doc.version) throw new CustodyError('conflict', `policy version ${change.policy.version} is not above version ${latest.doc.version}`);
      const current = policyInForce(s?.record, Math.max(created, nowS));
      if (current) {
        const checked = checkApprovals(current.doc, policyChangeApprovalMessage(vaultId, current.doc.version, policyHash(change.policy)), change.approvals);
        if ('code' in checked) throw new CustodyError(checked.code as ErrorCode, `a change of policy version ${current.doc.version}: ${checked.message}`);
        const short = (current.doc.quorums ?? []).find((q) => 'rule' in q.when && q.when.rule === 'policy_change' && q.approvers.filter((id) => checked.ids.has(id)).length < q.k);
        if (short) throw new CustodyError('approval_required', `policy version ${current.doc.version} needs ${short.k} approvals of a change from ${short.approvers.join(', ')}; ${short.approvers.filter((id) => checked.ids.has(id)).length} given`);
      }
      const record = applyPolicyChange(s?.record, change, created, nowS);
      const added = record.versions.find((x) => x.doc.version === change.policy.version);
      if (!added) throw new CustodyError('conflict', `the change is not accepted: ${record.refused?.at(-1)?.reason ?? 'unknown reason'}`);
      const next: VaultPolicyState = { org, vault_id: vaultId, record, head: s?.head ?? null, updated_at: this.now().toISOString() };
      await this.vaults.appendTrustLocked(org, entry, [
        VAULT_POLICIES.putOp(vaultId, next),
        this.vaults.event(org, 'vault.policy.changed', 'vault', vaultId, { vault_id: vaultId, version: added.doc.version, effective_at: added.effectiveAt, tightening: added.tightening }),
      ]);
    });
    return this.view(org, vaultId);
  }

  /**
   * Admits an intent of a vault under a policy (the caller holds the organization's transaction lock):
   * its chain link must be signed by the intent's key and follow the head exactly (409 chain_conflict
   * otherwise); the policy's rules are checked as a node will (403 with the node's code); an intent that
   * lacks only approvals waits for them. Undefined when the vault has no policy in force.
   */
  async admit(o: { vault: VaultRecord; intent: Intent; bytes: Uint8Array; apiPublicKey: Uint8Array; chainLink?: string | undefined; approvals?: Approval[] | undefined; transactionId: string }): Promise<Admission | undefined> {
    const nowS = this.nowS();
    const s = await this.state(o.vault.id);
    const policy = policyInForce(s?.record, nowS);
    if (!policy) {
      if (o.chainLink !== undefined || o.approvals !== undefined) throw new CustodyError('invalid_request', `chain_link and approvals apply to vaults under a policy; vault ${o.vault.id} has none in force`);
      return undefined;
    }
    if (o.chainLink === undefined) {
      throw new CustodyError('chain_link_required', `vault ${o.vault.id} is under policy version ${policy.doc.version}: sign the intent's link of the vault's intent chain (after seq ${s?.head?.seq ?? 0}, GET /v1/vaults/${o.vault.id}/policy) and send it as chain_link`);
    }
    let link;
    try {
      link = decodeChainLink(hexToBytes(o.chainLink));
    } catch (err) {
      throw new CustodyError('bad_chain', err instanceof ChainLinkError ? err.message : 'chain_link is not a chain link');
    }
    if (!verifyChainLinkSignature(link, o.apiPublicKey)) throw new CustodyError('bad_chain', 'the chain link is not signed by the key that signed the intent');
    const head = s!.head;
    const expectSeq = (head?.seq ?? 0) + 1;
    if (link.seq !== BigInt(expectSeq) || link.prev !== (head?.hash ?? ZERO_HASH)) {
      throw new CustodyError('chain_conflict', `the chain link is seq ${link.seq} after ${link.prev.slice(0, 16)}…; the vault's chain continues at seq ${expectSeq} after ${(head?.hash ?? ZERO_HASH).slice(0, 16)}…`);
    }
    const windowSeconds = policy.doc.rolling_window?.seconds ?? 0;
    const relayed = await this.relay(o.vault.id, expectSeq, windowSeconds, nowS, head?.seq ?? 0);
    const checked = checkChain({ link, intent: o.intent, intentBytes: o.bytes, vaultId: o.vault.id, relayed, windowSeconds, now: nowS });
    if (!checked.ok) throw new CustodyError(checked.code, checked.message);
    const approvals = o.approvals ?? [];
    const intentHash = bytesToHex(sha256(o.bytes));
    const passkeys = await this.passkeys(o.vault.org, policy.doc, intentApprovalMessage(o.vault.id, policy.doc.version, intentHash), approvals);
    const decision = evaluatePolicy({ policy: policy.doc, intent: o.intent, intentHash, approvals, priorSpends: checked.spends, now: nowS, passkeyVerified: passkeys.verified });
    if (!decision.allow && decision.code !== 'approval_required') throw refusal(decision, passkeys.problems);
    const hash = chainLinkHash(link);
    const rec: ChainLinkRecord = {
      vault_id: o.vault.id, seq: expectSeq, link: o.chainLink.toLowerCase(), intent: bytesToHex(o.bytes), hash, until: Number(link.until),
      transaction_id: o.transactionId, created_at: this.now().toISOString(),
    };
    const next: VaultPolicyState = { ...s!, head: { seq: expectSeq, hash, until: Number(link.until), link: rec.link }, updated_at: rec.created_at };
    return {
      state: decision.allow ? 'created' : 'awaiting_approval', policyVersion: policy.doc.version, seq: expectSeq, approvals,
      quorums: decision.quorums ?? [], ops: [CHAIN_LINKS.putOp(seqKey(o.vault.id, expectSeq), rec), VAULT_POLICIES.putOp(o.vault.id, next)],
    };
  }

  /**
   * The policy's answer for a waiting transaction's intent with `approvals`, counting the spends of the
   * links before its own: allow, approval_required (with each quorum's progress) or another refusal.
   */
  async decide(vaultId: string, seq: number, intent: Intent, bytes: Uint8Array, approvals: Approval[], policyVersion: number): Promise<PolicyDecision> {
    const nowS = this.nowS();
    const policy = await this.inForce(vaultId, nowS);
    if (!policy || policy.doc.version !== policyVersion) {
      return { allow: false, code: 'bad_approval', message: `the vault's policy in force is ${policy ? `version ${policy.doc.version}` : 'none'}, not version ${policyVersion} the approvals were asked under`, policyVersion };
    }
    const windowSeconds = policy.doc.rolling_window?.seconds ?? 0;
    const own = await this.link(vaultId, seq);
    const relayed = await this.relay(vaultId, seq, windowSeconds, nowS, seq - 1);
    const checked = checkChain({ link: decodeChainLink(hexToBytes(own.link)), intent, intentBytes: bytes, vaultId, relayed, windowSeconds, now: nowS });
    if (!checked.ok) throw new CustodyError(checked.code, checked.message);
    const spends = checked.spends;
    // Each passkey approval was verified when it was kept (TransactionService.approve); the nodes verify it again.
    const passkeyVerified = new Set(approvals.filter((a) => a.passkey !== undefined).map((a) => a.approver_id));
    return evaluatePolicy({ policy: policy.doc, intent, intentHash: bytesToHex(sha256(bytes)), approvals, priorSpends: spends, now: nowS, passkeyVerified });
  }

  /** Up to `limit` links of the vault's chain from `fromSeq`, in order. */
  async links(vaultId: string, fromSeq: number, limit: number): Promise<ChainLinkRecord[]> {
    const out: ChainLinkRecord[] = [];
    for await (const r of CHAIN_LINKS.in(this.vaults.store).range({ after: seqKey(vaultId, fromSeq - 1), lt: `${vaultId}/\xff` })) {
      out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Link `seq` of the vault's chain as the API accepted it. */
  async link(vaultId: string, seq: number): Promise<ChainLinkRecord> {
    const r = await CHAIN_LINKS.in(this.vaults.store).get(seqKey(vaultId, seq));
    if (!r) throw new CustodyError('bug', `link ${seq} of vault ${vaultId} is missing`);
    return r;
  }

  /**
   * What the nodes need to check link `seq` (docs/policies.md): the links before it back to one out of
   * the window (by this clock less a margin) or the first, and those after it up to `upTo` (the head the
   * API holds: every node's head is at or below it), at most MAX_RELAYED_LINKS in all.
   */
  async relay(vaultId: string, seq: number, windowSeconds: number, nowS: number, upTo?: number): Promise<RelayedLink[]> {
    const get = (n: number) => CHAIN_LINKS.in(this.vaults.store).get(seqKey(vaultId, n));
    const before: ChainLinkRecord[] = [];
    const horizon = nowS - windowSeconds - CLOCK_MARGIN_S;
    for (let n = seq - 1; n >= 1 && before.length < MAX_RELAYED_LINKS; n--) {
      const r = await get(n);
      if (!r) break;
      before.unshift(r);
      // A link out of the window ends the reach-back (until never decreases); a vault with no window
      // needs only the link before (so a node whose head is there sees it).
      if (windowSeconds === 0 || r.until <= horizon) break;
    }
    const after: ChainLinkRecord[] = [];
    const last = upTo ?? (await this.state(vaultId))?.head?.seq ?? seq;
    for (let n = seq + 1; n <= last && before.length + after.length < MAX_RELAYED_LINKS; n++) {
      const r = await get(n);
      if (!r) break;
      after.push(r);
    }
    return [...before, ...after].map((r) => ({ link: hexToBytes(r.link), intent: hexToBytes(r.intent) }));
  }
}
