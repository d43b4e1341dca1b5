// What a member approves, in words (docs/platform/member-actions.md "On the Account Center"): each intent
// of a member action read from its exact bytes, the ones the nodes sign and the nonce commits to, never
// from a description the BFF sends. Amounts are in the chain's base units, as the intent holds them.
import { bytesToHex } from '@noble/hashes/utils.js';
import { decodeIntent } from '../../core/intents/intent.ts';

const hex = (b: Uint8Array) => `0x${bytesToHex(b)}`;

/** One line per intent: what moves, how much, to whom, on which chain, until when. */
export function intentLine(bytes: Uint8Array): string {
  const i = decodeIntent(bytes);
  const until = (s: bigint) => new Date(Number(s) * 1000).toISOString();
  switch (i.kind) {
    case 'evm.transfer': {
      const what = i.asset.kind === 'native' ? `${i.amount} wei` : `${i.amount} base units of the token ${hex(i.asset.contract)}`;
      const call = i.data.length ? ` with a contract call of ${i.data.length} bytes` : '';
      return `Send ${what} from ${hex(i.from)} to ${hex(i.to)}${call} on EVM chain ${i.chainId} (network fee at most ${i.maxFee} wei; valid until ${until(i.notAfter)})`;
    }
    case 'btc.transfer':
      return `Send ${i.outputs.map((o) => `${o.amount} sat to ${o.address}`).join(', ')} from ${i.from} on bitcoin ${i.network} (fee at most ${i.maxFee} sat; valid until ${until(i.notAfter)})`;
    case 'evm.safe_tx':
      return `Sign, as an owner of the Safe ${hex(i.safe)}, a call to ${hex(i.to)} sending ${i.value} wei with ${i.data.length} bytes of data on EVM chain ${i.chainId} (valid until ${until(i.notAfter)})`;
  }
}
