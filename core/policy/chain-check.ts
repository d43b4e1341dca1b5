// The check a signer node runs on a vault's intent chain before it signs (docs/policies.md "Windows
// under any signer subset"), pure so the API can run it too. Given the signed link of the intent to sign,
// the links the coordinator relayed before it (oldest first, each with its intent), the node's own head
// (the last link it signed for the vault) and the window, it answers the spends that still count, or a
// refusal:
// - the relayed links are contiguous and hash-linked up to the link to sign, each names this vault and
//   its intent's hash, and `until` never decreases and covers each intent's not_after;
// - they reach back to the vault's first link, or to a link whose `until` is out of the window (so no
//   earlier intent can count: until never decreases);
// - they include the node's head at its position, unless that head is out of the window too; a link at
//   the head's position that is not the head, or a link to sign at or below it that is not the head
//   itself, is a fork.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { decodeIntent, type Intent } from '../intents/intent.ts';
import { chainLinkHash, decodeChainLink, MAX_RELAYED_LINKS, type SignedChainLink } from './intent-chain.ts';
import { intentEffects, type Spend } from './policy-evaluator.ts';

export interface ChainHead {
  seq: bigint;
  /** The link's hash, hex. */
  hash: string;
  /** The link's `until`, Unix seconds. */
  until: bigint;
}

export interface RelayedLink {
  /** The signed link bytes. */
  link: Uint8Array;
  /** Its intent's bytes. */
  intent: Uint8Array;
}

export type ChainRefusalCode = 'bad_chain' | 'chain_fork' | 'chain_incomplete';

export type ChainCheck =
  | { ok: true; spends: Spend[]; head: ChainHead; retry: boolean }
  | { ok: false; code: ChainRefusalCode; message: string };

export interface ChainCheckInput {
  /** The link of the intent to sign, decoded; its signature is the caller's to check. */
  link: SignedChainLink;
  intent: Intent;
  intentBytes: Uint8Array;
  vaultId: string;
  relayed: readonly RelayedLink[];
  /** This node's last signed link for the vault, if any. */
  head?: ChainHead | undefined;
  /** The policy's window, seconds; 0 when it has none (nothing to count, no reach-back needed). */
  windowSeconds: number;
  /** Unix seconds. */
  now: number;
}

const bad = (code: ChainRefusalCode, message: string): ChainCheck => ({ ok: false, code, message });

export function checkChain(input: ChainCheckInput): ChainCheck {
  const { link, intent, vaultId, head, windowSeconds: w } = input;
  const horizon = BigInt(input.now - w);
  const linkHash = chainLinkHash(link);
  if (link.organization !== intent.organization || link.vaultId !== vaultId) return bad('bad_chain', `the chain link names ${link.organization}/${link.vaultId}, not ${intent.organization}/${vaultId}`);
  if (link.intentHash !== bytesToHex(sha256(input.intentBytes))) return bad('bad_chain', 'the chain link names another intent');
  if (link.until < intent.notAfter) return bad('bad_chain', "the chain link's until is before the intent's not_after");
  if (head && head.seq >= link.seq) {
    if (head.seq === link.seq && head.hash === linkHash) return { ok: true, spends: [], head, retry: true };
    return bad('chain_fork', `this node signed link ${head.seq} of the vault's chain already; link ${link.seq} ${head.seq === link.seq ? 'is another one at that position' : 'is behind it'}`);
  }
  if (input.relayed.length > MAX_RELAYED_LINKS) return bad('bad_chain', `at most ${MAX_RELAYED_LINKS} links are relayed`);
  const links: { l: SignedChainLink; i: Intent }[] = [];
  for (const r of input.relayed) {
    let l: SignedChainLink;
    let i: Intent;
    try {
      l = decodeChainLink(r.link);
      i = decodeIntent(r.intent);
    } catch (err) {
      return bad('bad_chain', `a relayed link or intent is malformed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (l.organization !== link.organization || l.vaultId !== vaultId) return bad('bad_chain', `relayed link ${l.seq} is of another vault`);
    if (l.intentHash !== bytesToHex(sha256(r.intent))) return bad('bad_chain', `relayed link ${l.seq} names another intent than the one relayed with it`);
    if (i.organization !== link.organization) return bad('bad_chain', `relayed intent ${l.seq} is of another organization`);
    if (l.until < i.notAfter) return bad('bad_chain', `relayed link ${l.seq}'s until is before its intent's not_after`);
    links.push({ l, i });
  }
  // Each link names the one before it; until never decreases.
  const all = [...links.map((x) => x.l), link];
  for (let n = 1; n < all.length; n++) {
    const [p, c] = [all[n - 1]!, all[n]!];
    if (c.seq !== p.seq + 1n || c.prev !== chainLinkHash(p)) return bad('bad_chain', `link ${c.seq} does not follow link ${p.seq}`);
    if (c.until < p.until) return bad('bad_chain', `link ${c.seq}'s until is before link ${p.seq}'s`);
  }
  const start = all[0]!;
  if (w > 0 && start.seq !== 1n && start.until > horizon) {
    return bad('chain_incomplete', `the relayed chain starts at link ${start.seq}, which may still count in the ${w} s window: relay the links before it`);
  }
  if (head) {
    if (head.seq >= start.seq) {
      const at = all[Number(head.seq - start.seq)]!;
      if (chainLinkHash(at) !== head.hash) return bad('chain_fork', `link ${head.seq} of the relayed chain is not the one this node signed`);
    } else if (w > 0 && head.until > horizon) {
      return bad('chain_incomplete', `the relayed chain starts at link ${start.seq}, after this node's last signed link ${head.seq}, which still counts in the window`);
    }
  }
  const spends: Spend[] = [];
  if (w > 0) {
    for (const { i } of links) if (i.notAfter > horizon) for (const t of intentEffects(i).transfers) spends.push({ asset: t.asset, amount: t.amount, at: Number(i.notAfter) });
  }
  return { ok: true, spends, head: { seq: link.seq, hash: linkHash, until: link.until }, retry: false };
}
