// Second phase of a reshare (docs/sessions.md "Reshare, two phases"). A commit promotes this node's
// pending epoch, or retires the share it dealt away, only on evidence it checks itself: signed receipts
// of a signing threshold of the new committee (core/session/epoch-receipt.ts), each under the identity
// key this node pinned for that member in the reshare it took part in (the pending share's committee,
// or the one it recorded as a dealer). Without them nothing changes. An abandon changes nothing either:
// a pending epoch that may have been committed elsewhere is kept until a later reshare replaces it or
// its commit arrives. No messages.
import { hexToBytes } from '@noble/hashes/utils.js';
import { epochParams, epochResult } from '../../../core/session/session-contract.ts';
import type { EpochResult } from '../../../core/session/session-results.ts';
import type { EpochReceipt, EpochSessionParams } from '../../../core/session/session-params.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import { epochReceiptStatement } from '../../../core/session/epoch-receipt.ts';
import { verifyEd25519 } from '../../../common/ed25519.ts';
import { readParams } from '../protocols/run-protocol.ts';
import { SessionRefused } from '../session-host.ts';
import type { PinnedMember } from '../../storage/vault-shares.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';

/** How long a dealer that left keeps its old share sealed, unusable, before erasing it (NODE_RETIRED_SHARE_RETENTION_HOURS). */
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** What a commit acts on once the receipts checked out. */
type Grant = { action: 'promote' | 'retire' | 'already'; receipts?: EpochReceipt[] };

/**
 * Whether `receipts` hold a valid signature of at least `pkg.threshold` distinct members of
 * `committee` over the statement of `pkg`. Receipts of non-members, duplicates and bad signatures count
 * for nothing.
 */
export function receiptsVouch(pkg: KeyPackage, committee: readonly PinnedMember[], receipts: readonly EpochReceipt[] | undefined): boolean {
  return validReceipts(pkg, committee, receipts).length >= pkg.threshold;
}

/** The receipts of `receipts` that are valid, one per member: what a promoted node keeps. */
export function validReceipts(pkg: KeyPackage, committee: readonly PinnedMember[], receipts: readonly EpochReceipt[] | undefined): EpochReceipt[] {
  const statement = epochReceiptStatement(pkg);
  const good = new Map<number, EpochReceipt>();
  for (const r of receipts ?? []) {
    const m = committee.find((c) => c.index === r.party);
    if (m && !good.has(r.party) && verifyEd25519(r.signature, statement, hexToBytes(m.signingKey))) good.set(r.party, r);
  }
  return [...good.values()].sort((a, b) => a.party - b.party);
}

export function epochSession(deps: NodeProtocolDeps, action: 'commit' | 'abandon'): SessionKind<EpochSessionParams, void, Grant, never> {
  const { vault } = deps;
  const retentionMs = deps.retiredShareRetentionMs ?? DEFAULT_RETENTION_MS;
  return {
    authorization: action === 'commit'
      ? { by: 'receipts', evidence: 'signed receipts of a signing threshold of the new committee, under identity keys this node pinned in the reshare it dealt in or received in' }
      : { by: 'records', evidence: 'none needed: an abandon keeps every share', adds: [] },
    parse: (ctx) => readParams(epochParams, ctx.open.params),
    async preflight() {},
    async authorize({ params: p }) {
      if (action === 'abandon') return { action: 'already' };
      const [current, pending, dealt] = await Promise.all([vault.current(p.keyId), vault.pending(p.keyId), vault.dealt(p.keyId)]);
      if (current?.key.pkg.epoch === p.epoch && pending?.key.pkg.epoch !== p.epoch) return { action: 'already' };
      let grant: Grant;
      let pkg: KeyPackage;
      let committee: PinnedMember[];
      if (pending && pending.key.pkg.epoch === p.epoch) {
        grant = { action: 'promote' };
        ({ pkg } = pending.key);
        committee = pending.committee;
      } else if (current && current.key.pkg.epoch < p.epoch && dealt?.pkg.epoch === p.epoch) {
        grant = { action: 'retire' };
        ({ pkg, committee } = dealt);
      } else if (!current && !pending) {
        return { action: 'already' };
      } else {
        throw new SessionRefused('no_pending', `this node took part in no reshare of ${p.keyId} to epoch ${p.epoch}: it keeps what it holds`);
      }
      if (pkg.groupKey !== (current ?? pending)!.key.pkg.groupKey) throw new SessionRefused('package_mismatch', 'the reshare\'s package has another group key');
      if (!receiptsVouch(pkg, committee, p.receipts)) {
        throw new SessionRefused('bad_receipts', `epoch ${p.epoch} of ${p.keyId} needs signed receipts of ${pkg.threshold} members of the new committee`);
      }
      return grant.action === 'promote' ? { ...grant, receipts: validReceipts(pkg, committee, p.receipts) } : grant;
    },
    // The store change is the session's whole work and its outcome is the result, so it runs in
    // start(), before the result exists; there is nothing left for commit.
    run({ params: p, grant }) {
      return {
        start: async () => {
          let outcome: EpochResult['outcome'] = action === 'abandon' ? 'kept' : 'already';
          if (grant.action === 'promote') outcome = await vault.promote(p.keyId, p.epoch, grant.receipts);
          if (grant.action === 'retire') outcome = await vault.retire(p.keyId, p.epoch, Date.now() + retentionMs);
          return { kind: 'done', out: [], result: epochResult.encode({ outcome }) };
        },
        deliver: () => ({ kind: 'abort', code: 'bad_message', message: 'no messages in this session', culprits: [] }),
        dispose() {},
      };
    },
  };
}
