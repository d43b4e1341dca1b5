// The wallet ledger (docs/platform/wallets.md "Ledger"): an append-only record of the money a wallet's own
// transactions move. Entries are derived from a transaction's state change and committed in the batch
// that stores the change (the transaction worker's transition), so a state and its entries exist
// together or not at all. An entry is keyed by (transaction, leg) and written only when absent, so a
// transition processed again (after a restart, or by a second worker) adds nothing; entries are never
// updated or deleted. Each wallet numbers its entries 1, 2, 3, ... in the order they were written.
//
//   broadcast            hold debit per transfer, and one for the fee the transaction may spend
//   final                each hold released (credit), then the transfer debits and the fee paid
//   failed, included     each hold released, and the fee paid (an EVM transaction that reverted)
//
// Incoming payments are not observed by the service, so they are not in the ledger.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { IndexList } from '../store/pagination.ts';
import type { TransactionRecord } from '../transactions/records.ts';
import { LEDGER, LEDGER_SEQUENCES } from './collections.ts';

export type LedgerKind = 'hold' | 'hold_release' | 'transfer' | 'fee';

/** An entry as stored (collection `ledger`); version 1. */
export interface LedgerEntryRecord {
  v: 1;
  id: string;
  org: string;
  wallet_id: string;
  transaction_id: string;
  /** 1 for the wallet's first entry, then each entry one more: the order they were written in. */
  sequence: number;
  kind: LedgerKind;
  direction: 'debit' | 'credit';
  /** `<chain>:native` or `<chain>:<token contract>`, as in the transaction's transfers. */
  asset: string;
  /** Base units, a positive decimal integer. */
  amount: string;
  /** The recipient of a transfer (or its hold); null for fees. */
  counterparty: string | null;
  tx_hash: string | null;
  block_number: number | null;
  created_at: string;
}

/** One movement a state change writes: `leg` names it within the transaction, `releases` the hold it undoes. */
export interface LedgerLeg {
  leg: string;
  kind: LedgerKind;
  direction: 'debit' | 'credit';
  asset: string;
  amount: bigint;
  counterparty: string | null;
  releases?: string;
}

const SEQUENCE_DIGITS = 12;

export const ledgerEntryId = (transactionId: string, leg: string) => `led_${transactionId.replace(/^txn_/, '')}_${leg}`;

const nativeOf = (tx: TransactionRecord) => `${tx.chain}:native`;
const heldFee = (tx: TransactionRecord) => BigInt(tx.fee_held ?? tx.fee ?? '0');

/** The legs a transaction's state change from `prev` to `next` writes; none for a change that moves no money. */
export function ledgerLegs(prev: TransactionRecord, next: TransactionRecord): LedgerLeg[] {
  if (prev.state === next.state) return [];
  // What the broadcast transaction may take: each transfer, and the fee as signed (EVM: the ceiling).
  const holds: LedgerLeg[] = [
    ...next.transfers.map((x, i): LedgerLeg => ({ leg: `hold-${i}`, kind: 'hold', direction: 'debit', asset: x.asset, amount: BigInt(x.amount), counterparty: x.recipient })),
    // A Bitcoin transaction adopted after its broadcast (another signing of its intent) keeps the fee it held then.
    ...heldFee(next) > 0n ? [{ leg: 'hold-fee', kind: 'hold' as const, direction: 'debit' as const, asset: nativeOf(next), amount: heldFee(next), counterparty: null }] : [],
  ];
  const releases = holds.map((h): LedgerLeg => ({ ...h, leg: h.leg.replace('hold-', 'release-'), kind: 'hold_release', direction: 'credit', releases: h.leg }));
  // EVM: what the inclusion cost (gas used x effective price), else the signed fee; Bitcoin: the exact fee.
  const paid = BigInt(next.fee_paid ?? next.fee ?? '0');
  const fee: LedgerLeg[] = paid > 0n ? [{ leg: 'fee', kind: 'fee', direction: 'debit', asset: nativeOf(next), amount: paid, counterparty: null }] : [];
  switch (next.state) {
    case 'broadcast':
      return holds;
    case 'final':
      return [
        ...releases,
        ...next.transfers.map((x, i): LedgerLeg => ({ leg: `transfer-${i}`, kind: 'transfer', direction: 'debit', asset: x.asset, amount: BigInt(x.amount), counterparty: x.recipient })),
        ...fee,
      ];
    case 'failed':
      // Included and reverted: the transfer did not happen, the fee was paid. Not included: nothing moved.
      if (prev.state !== 'broadcast' && prev.state !== 'confirmed') return [];
      return [...releases, ...(next.block_number !== undefined ? fee : [])];
    default:
      return [];
  }
}

export class WalletLedger {
  constructor(private readonly store: RecordRepository, private readonly now: () => Date = () => new Date()) {}

  /**
   * Stores `ops` (a transaction's change from `prev` to `next`) in one batch with the ledger entries the
   * change writes that do not exist yet. A release is written only beside its hold: a transaction
   * broadcast before the ledger existed releases nothing it never held. Under a lock per wallet, so
   * its sequence numbers are given once each, on every instance (the store's lock).
   */
  async commit(prev: TransactionRecord, next: TransactionRecord, ops: Op[]): Promise<void> {
    const legs = ledgerLegs(prev, next);
    if (!legs.length) return this.store.batch(ops);
    return this.store.exclusive(`ledger:${next.wallet_id}`, async () => {
      const fresh: LedgerLeg[] = [];
      for (const leg of legs) {
        if (await LEDGER.in(this.store).get(ledgerEntryId(next.id, leg.leg))) continue;
        if (leg.releases && !(await LEDGER.in(this.store).get(ledgerEntryId(next.id, leg.releases)))) continue;
        fresh.push(leg);
      }
      if (!fresh.length) return this.store.batch(ops);
      let sequence = (await LEDGER_SEQUENCES.in(this.store).get(next.wallet_id)) ?? 0;
      const at = this.now().toISOString();
      const entries = fresh.map((leg): LedgerEntryRecord => ({
        v: 1, id: ledgerEntryId(next.id, leg.leg), org: next.org, wallet_id: next.wallet_id, transaction_id: next.id, sequence: ++sequence,
        kind: leg.kind, direction: leg.direction, asset: leg.asset, amount: leg.amount.toString(), counterparty: leg.counterparty,
        tx_hash: next.tx_hash, block_number: next.block_number ?? null, created_at: at,
      }));
      await this.store.batch([
        ...ops,
        ...entries.map((e): Op => LEDGER.putOp(e.id, e, { index: [`wallet/${e.wallet_id}/${String(e.sequence).padStart(SEQUENCE_DIGITS, '0')}`] })),
        LEDGER_SEQUENCES.putOp(next.wallet_id, sequence),
      ]);
    });
  }

  /** GET /v1/wallets/{id}/ledger: the wallet's entries by sequence, oldest first. */
  list(org: string, walletId: string): IndexList<LedgerEntryRecord> {
    return {
      list: `wallet_ledger/${walletId}`, scope: org, filters: {}, collection: LEDGER.name, prefix: `wallet/${walletId}/`,
      keep: (e) => e.org === org && e.wallet_id === walletId,
    };
  }
}
