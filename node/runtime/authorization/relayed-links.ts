// A vault under a policy relays its intent chain back out of the window with every intent
// (docs/policies.md), so a node sees the same links again and again; decoding them and hashing each link
// and intent was most of a signing's policy cost (docs/policies.md "Cost"). Decoding is a pure function
// of the bytes, so its results are kept here by the exact bytes; every check of the chain still runs on
// each request. Only pairs of at most 1 KiB are kept (an EVM transfer and its link take about 380 bytes),
// 4096 of them: whatever the coordinator relays, this stays at some MiB.
import { MAX_RELAYED_LINKS } from '../../../core/policy/intent-chain.ts';
import { decodeRelayedLink, type DecodedRelayedLink, type RelayedLink } from '../../../core/policy/chain-check.ts';
import { BoundedMemo } from '../../../common/memo.ts';

/** The largest link and intent, together, whose decoding is kept. */
export const KEPT_RELAYED_BYTES = 1024;

const kept = new BoundedMemo<DecodedRelayedLink>(MAX_RELAYED_LINKS);

const base64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

/** `decodeRelayedLink`, its result kept by the link's and the intent's exact bytes. */
export function decodeRelayedKept(r: RelayedLink): DecodedRelayedLink {
  if (!(r.link instanceof Uint8Array) || !(r.intent instanceof Uint8Array) || r.link.length + r.intent.length > KEPT_RELAYED_BYTES) return decodeRelayedLink(r);
  return kept.get(`${base64(r.link)}.${base64(r.intent)}`, () => decodeRelayedLink(r));
}
