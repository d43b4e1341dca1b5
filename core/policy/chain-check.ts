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
//   the head's position that is not the head is a fork;
// - a link below the node's head (intents are signed as they become ready, not in chain order: one
//   waiting for approvals, or for a lower EVM nonce, is signed after later ones) is signed only when the
//   relayed links after it reach the head and hash-link to it: then it is the very link at its position
//   of the chain this node verified before, so no node signs two links at one position. Its window counts
//   the links before it; each link after it counted it already when it was checked.
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

/** A relayed link and its intent, decoded, with the two hashes the check compares. */
export interface DecodedRelayedLink {
  link: SignedChainLink;
  /** `chainLinkHash(link)`. */
  linkHash: string;
  intent: Intent;
  /** SHA-256 of the intent bytes, hex. */
  intentHash: string;
}

/**
 * Decodes one relayed link and its intent (throws on malformed bytes). A pure function of the bytes: a
 * node may keep its results by those exact bytes, since the same links come relayed with every later
 * intent of the vault, and every check below still runs on each request.
 */
export function decodeRelayedLink(r: RelayedLink): DecodedRelayedLink {
  const link = decodeChainLink(r.link);
  return { link, linkHash: chainLinkHash(link), intent: decodeIntent(r.intent), intentHash: bytesToHex(sha256(r.intent)) };
}

export type ChainRefusalCode = 'bad_chain' | 'chain_fork' | 'chain_incomplete';

export type ChainCheck =
  | {
    ok: true; spends: Spend[];
    /** The node's head once this link is signed: the link, or the node's head when the link is below it. */
    head: ChainHead; retry: boolean;
    /** Every link of the verified chain, seq -> hash: a head that moved to one of them while the intent was checked is still on this chain. */
    known: Map<bigint, string>;
  }
  | { ok: false; code: ChainRefusalCode; message: string };

export interface ChainCheckInput {
  /**
   * The link of the intent to sign, decoded; its signature is the caller's to check. `relayed` holds the
   * links before it and, when it is below the node's head, the links after it up to at least that head.
   */
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
  /** `decodeRelayedLink`, or a memo of it keyed by the exact bytes (the node's). */
  decode?: (r: RelayedLink) => DecodedRelayedLink;
}

const bad = (code: ChainRefusalCode, message: string): ChainCheck => ({ ok: false, code, message });

export function checkChain(input: ChainCheckInput): ChainCheck {
  const { link, intent, vaultId, head, windowSeconds: w } = input;
  const horizon = BigInt(input.now - w);
  const linkHash = chainLinkHash(link);
  if (link.organization !== intent.organization || link.vaultId !== vaultId) return bad('bad_chain', `the chain link names ${link.organization}/${link.vaultId}, not ${intent.organization}/${vaultId}`);
  if (link.intentHash !== bytesToHex(sha256(input.intentBytes))) return bad('bad_chain', 'the chain link names another intent');
  if (link.until < intent.notAfter) return bad('bad_chain', "the chain link's until is before the intent's not_after");
  if (head && head.seq === link.seq) {
    if (head.hash === linkHash) return { ok: true, spends: [], head, retry: true, known: new Map([[head.seq, head.hash]]) };
    return bad('chain_fork', `this node signed link ${head.seq} of the vault's chain already; this is another link at that position`);
  }
  if (input.relayed.length > MAX_RELAYED_LINKS) return bad('bad_chain', `at most ${MAX_RELAYED_LINKS} links are relayed`);
  const decode = input.decode ?? decodeRelayedLink;
  const links: { l: SignedChainLink; i: Intent; hash: string }[] = [];
  for (const r of input.relayed) {
    let d: DecodedRelayedLink;
    try {
      d = decode(r);
    } catch (err) {
      return bad('bad_chain', `a relayed link or intent is malformed: ${err instanceof Error ? err.message : String(err)}`);
    }
    const { link: l, intent: i } = d;
    if (l.organization !== link.organization || l.vaultId !== vaultId) return bad('bad_chain', `relayed link ${l.seq} is of another vault`);
    if (l.intentHash !== d.intentHash) return bad('bad_chain', `relayed link ${l.seq} names another intent than the one relayed with it`);
    if (i.organization !== link.organization) return bad('bad_chain', `relayed intent ${l.seq} is of another organization`);
    if (l.until < i.notAfter) return bad('bad_chain', `relayed link ${l.seq}'s until is before its intent's not_after`);
    if (l.seq === link.seq) return bad('bad_chain', `the link to sign (${l.seq}) is relayed too`);
    links.push({ l, i, hash: d.linkHash });
  }
  const before = links.filter((x) => x.l.seq < link.seq);
  // Each link names the one before it; until never decreases. The relayed links are in order, those
  // before the link to sign first.
  const all = [...before, { l: link, hash: linkHash }, ...links.filter((x) => x.l.seq > link.seq)];
  if (links.some((x, n) => n > 0 && x.l.seq <= links[n - 1]!.l.seq)) return bad('bad_chain', 'the relayed links are not in chain order');
  for (let n = 1; n < all.length; n++) {
    const [p, c] = [all[n - 1]!, all[n]!];
    if (c.l.seq !== p.l.seq + 1n || c.l.prev !== p.hash) return bad('bad_chain', `link ${c.l.seq} does not follow link ${p.l.seq}`);
    if (c.l.until < p.l.until) return bad('bad_chain', `link ${c.l.seq}'s until is before link ${p.l.seq}'s`);
  }
  const start = all[0]!.l;
  const last = all.at(-1)!.l;
  if (w > 0 && start.seq !== 1n && start.until > horizon) {
    return bad('chain_incomplete', `the relayed chain starts at link ${start.seq}, which may still count in the ${w} s window: relay the links before it`);
  }
  const known = new Map(all.map((x) => [x.l.seq, x.hash]));
  if (head) {
    if (head.seq > last.seq) return bad('chain_incomplete', `link ${link.seq} is below this node's last signed link ${head.seq}: relay the links after it up to that one`);
    if (head.seq >= start.seq) {
      if (known.get(head.seq) !== head.hash) return bad('chain_fork', `link ${head.seq} of the relayed chain is not the one this node signed`);
    } else if (w > 0 && head.until > horizon) {
      return bad('chain_incomplete', `the relayed chain starts at link ${start.seq}, after this node's last signed link ${head.seq}, which still counts in the window`);
    }
  }
  const spends: Spend[] = [];
  if (w > 0) {
    for (const { i } of before) if (i.notAfter > horizon) for (const t of intentEffects(i).transfers) spends.push({ asset: t.asset, amount: t.amount, at: Number(i.notAfter) });
  }
  const below = head !== undefined && head.seq > link.seq;
  return { ok: true, spends, head: below ? head : { seq: link.seq, hash: linkHash, until: link.until }, retry: false, known };
}
