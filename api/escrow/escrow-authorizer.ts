// The member-action authorizer of escrows (docs/platform/escrows.md "Member approval"): a hosted member
// funds or releases an escrow from its wallet with one batch member action of purpose
// {type: "escrow", id}. Member-actions calls `authorize` under the escrow's lock, in the batch that stores
// the action; it accepts only the escrow's exact calls from the payer's wallet, by the payer holder's
// member: funding [approve, deposit] while the escrow awaits funding, release [release] while it is funded.
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodeIntent } from '../../core/intents/intent.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { PurposeAuthorizer, PurposeCheck } from '../member-auth/member-actions.ts';
import { ACCOUNT_HOLDERS } from '../account-holders/collections.ts';
import { escrowView, type EscrowService } from './escrow-service.ts';
import type { EscrowCall } from './token-escrow.ts';

const mismatch = (why: string) => new CustodyError('validation_failed', `intents: ${why}`);

/** Whether the intent bytes are exactly `call` from the wallet: a native-asset call of amount 0 with that calldata. */
function isCall(bytes: Uint8Array, c: PurposeCheck, call: EscrowCall, payer: string): boolean {
  let i;
  try {
    i = decodeIntent(bytes);
  } catch {
    return false;
  }
  return i.kind === 'evm.transfer' && i.organization === c.org && i.walletId === c.walletId && `0x${bytesToHex(i.from)}` === payer
    && i.asset.kind === 'native' && i.amount === 0n && `0x${bytesToHex(i.to)}` === call.to.toLowerCase() && `0x${bytesToHex(i.data)}` === call.data.toLowerCase();
}

export class EscrowAuthorizer implements PurposeAuthorizer {
  constructor(private readonly store: RecordRepository, private readonly escrows: EscrowService) {}

  async authorize(c: PurposeCheck): Promise<Op[]> {
    const r = await this.escrows.byId(c.purposeId);
    // Another workspace's escrow is answered as one that does not exist.
    if (!r || r.tenant !== c.tenant || r.workspace !== c.workspace || r.org !== c.org) throw new CustodyError('not_found', `no escrow ${c.purposeId}`);
    if (c.walletId !== r.payer_wallet_id) throw mismatch(`an escrow's calls come from its payer's wallet ${r.payer_wallet_id}`);
    const holder = await ACCOUNT_HOLDERS.in(this.store).get(r.payer_account_holder_id);
    // A BYO member is linked to a holder by its member id; a hosted member by its hosted subject (hsub_…).
    const isPayerMember = !!holder?.member_id && (holder.member_id === c.memberId || (holder.member_kind === 'hosted' && holder.member_id === c.subject));
    if (!isPayerMember) {
      throw new CustodyError('member_subject_mismatch', 'only the member of the escrow\'s payer holder approves its funding or release');
    }
    const { calls } = escrowView(r);
    let purpose: 'funding' | 'release';
    let want: EscrowCall[];
    if (r.status === 'awaiting_funding') [purpose, want] = ['funding', calls.funding];
    else if (r.status === 'funded') [purpose, want] = ['release', [calls.release]];
    else throw new CustodyError('invalid_transition', `the escrow is ${r.status}: nothing is left to approve`);
    if (c.intents.length !== want.length || !want.every((call, k) => isCall(c.intents[k]!, c, call, r.payer_address))) {
      throw mismatch(purpose === 'funding'
        ? 'funding an escrow is exactly [approve, deposit] from the payer\'s wallet, as the escrow\'s calls.funding give them (native asset, amount 0, that calldata)'
        : 'releasing an escrow is exactly [release] from the payer\'s wallet, as the escrow\'s calls.release gives it');
    }
    return this.escrows.approvalOps(r, purpose, c.actionId, c.memberId);
  }
}
