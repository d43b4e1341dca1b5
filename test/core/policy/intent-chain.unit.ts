// The vault intent chain (docs/policies.md "Windows under any signer subset"): one canonical signed link
// encoding, and the check a node runs: contiguous hash links, reach back out of the window, its own head
// included while it counts, forks refused.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { encodeIntent, type EvmTransferIntent } from '../../../core/intents/intent.ts';
import { chainLinkHash, decodeChainLink, nextChainLink, signChainLink, verifyChainLinkSignature, ChainLinkError, type ChainLink } from '../../../core/policy/intent-chain.ts';
import { checkChain, type ChainHead, type RelayedLink } from '../../../core/policy/chain-check.ts';
import { evm, intentHash, NOW, ORG, seed, VAULT } from './policy-fixtures.ts';

const customer = seed('chain customer');

interface Built {
  link: ChainLink;
  bytes: Uint8Array;
  intent: EvmTransferIntent;
  intentBytes: Uint8Array;
}

/** A chain of intents with the given not_after offsets and amounts. */
function chain(items: { notAfter: number; amount?: bigint }[], from?: Built): Built[] {
  const out: Built[] = [];
  let prev = from?.link;
  for (const it of items) {
    const intent = evm({ notAfter: BigInt(NOW + it.notAfter), amount: it.amount ?? 100n });
    const link = nextChainLink({ organization: ORG, vaultId: VAULT, prev, intentHash: intentHash(intent), notAfter: intent.notAfter });
    out.push({ link, bytes: signChainLink(link, customer), intent, intentBytes: encodeIntent(intent) });
    prev = link;
  }
  return out;
}

const relay = (bs: Built[]): RelayedLink[] => bs.map((b) => ({ link: b.bytes, intent: b.intentBytes }));
const headOf = (b: Built): ChainHead => ({ seq: b.link.seq, hash: chainLinkHash(b.link), until: b.link.until });
const check = (target: Built, relayed: Built[], o: { head?: ChainHead; w?: number; tamper?: (r: RelayedLink[]) => RelayedLink[] } = {}) =>
  checkChain({ link: decodeChainLink(target.bytes), intent: target.intent, intentBytes: target.intentBytes, vaultId: VAULT, relayed: (o.tamper ?? ((r) => r))(relay(relayed)), head: o.head, windowSeconds: o.w ?? 3600, now: NOW });

t.test('a link encodes canonically, verifies under the customer key and names its predecessor', async (t) => {
  const [a, b] = chain([{ notAfter: 600 }, { notAfter: 300 }]);
  const d = decodeChainLink(b!.bytes);
  t.equal(d.seq, 2n);
  t.equal(d.prev, chainLinkHash(a!.link));
  t.equal(d.until, a!.link.until, 'until never decreases');
  t.ok(verifyChainLinkSignature(d, ed25519.getPublicKey(customer)));
  t.notOk(verifyChainLinkSignature(d, ed25519.getPublicKey(seed('someone else'))));
  t.throws(() => decodeChainLink(new Uint8Array([...b!.bytes, 0])), ChainLinkError, 'trailing byte');
  t.throws(() => decodeChainLink(b!.bytes.slice(0, -1)), ChainLinkError, 'short');
});

t.test('the chain back to the first link: every earlier spend in the window counts', async (t) => {
  const c = chain([{ notAfter: -7200, amount: 1n }, { notAfter: 100, amount: 20n }, { notAfter: 200, amount: 300n }, { notAfter: 300 }]);
  const r = check(c[3]!, c.slice(0, 3));
  t.equal(r.ok, true);
  if (r.ok) {
    t.same(r.spends.map((s) => s.amount), [20n, 300n], 'the one out of the window does not count');
    t.equal(r.head.seq, 4n);
  }
  t.equal(check(c[0]!, []).ok, true, 'the first link needs nothing relayed');
});

t.test('a relayed chain must reach back out of the window, and past the node\'s head while it counts', async (t) => {
  const c = chain([{ notAfter: -7200 }, { notAfter: -4000 }, { notAfter: 100 }, { notAfter: 200 }]);
  t.equal(check(c[3]!, c.slice(1, 3)).ok, true, 'starting at a link out of the window');
  t.match(check(c[3]!, c.slice(2, 3)), { ok: false, code: 'chain_incomplete' }, 'starting at a link that may still count');
  t.match(check(c[3]!, []), { ok: false, code: 'chain_incomplete' }, 'nothing relayed');
  t.equal(check(c[3]!, [], { w: 0 }).ok, true, 'no window: nothing to count');
  t.equal(check(c[3]!, c.slice(1, 3), { head: headOf(c[2]!) }).ok, true, 'head inside the relayed chain');
  t.equal(check(c[3]!, c.slice(1, 3), { head: headOf(c[0]!) }).ok, true, 'a head out of the window may be skipped');
  const d = chain([{ notAfter: 100 }, { notAfter: -7200 }, { notAfter: 200 }]);
  t.equal(d[1]!.link.until, d[0]!.link.until, 'until carries the larger not_after forward');
  t.match(check(d[2]!, d.slice(1, 2)), { ok: false, code: 'chain_incomplete' }, 'a short not_after after a long one does not end the window early');
});

t.test('forks, gaps and substitutions are refused', async (t) => {
  const c = chain([{ notAfter: 100 }, { notAfter: 200 }, { notAfter: 300 }]);
  const fork = chain([{ notAfter: 150 }, { notAfter: 250 }], c[0]);
  t.match(check(fork[1]!, [c[0]!, fork[0]!], { head: headOf(c[1]!) }), { ok: false, code: 'chain_fork' }, 'another link at the head\'s position');
  t.match(check(fork[0]!, [c[0]!], { head: headOf(c[1]!) }), { ok: false, code: 'chain_fork' }, 'another link at the head\'s own position');
  t.match(check(c[0]!, [], { head: headOf(c[1]!) }), { ok: false, code: 'chain_incomplete' }, 'behind the head, without the links up to it');
  t.match(check(c[1]!, [c[0]!], { head: headOf(c[1]!) }), { ok: true, retry: true }, 'the head itself again is a retry');
  t.match(check(c[2]!, [c[0]!]), { ok: false, code: 'bad_chain' }, 'a gap');
  t.match(check(c[2]!, c.slice(0, 2), { tamper: (r) => [r[0]!, { ...r[1]!, intent: encodeIntent(evm({ amount: 0n })) }] }), { ok: false, code: 'bad_chain' }, 'another intent under a link');
  t.match(check(c[2]!, [c[1]!, c[0]!]), { ok: false, code: 'bad_chain' }, 'out of order');
  const other = chain([{ notAfter: 100 }]);
  t.match(check(c[1]!, other), { ok: false, code: 'bad_chain' }, 'a link that is not the predecessor');
});

t.test('a link below the node\'s head is signed only with the links after it reaching that very head', async (t) => {
  // Link 2 waited for approvals while link 4 was signed: the node's head is 4.
  const c = chain([{ notAfter: 100, amount: 5n }, { notAfter: 200, amount: 7n }, { notAfter: 300, amount: 11n }, { notAfter: 400 }]);
  const r = check(c[1]!, [c[0]!, c[2]!, c[3]!], { head: headOf(c[3]!) });
  t.equal(r.ok, true, 'signed, with the links before and after it relayed');
  if (r.ok) {
    t.equal(r.head.seq, 4n, 'the head stays where it was');
    t.same(r.spends.map((x) => x.amount), [5n], 'the window counts the links before it only (each after it counted it)');
    t.equal(r.known.size, 4, 'the whole verified chain is known');
  }
  t.match(check(c[1]!, [c[0]!, c[2]!], { head: headOf(c[3]!) }), { ok: false, code: 'chain_incomplete' }, 'the links after it stop short of the head');
  const fork = chain([{ notAfter: 250 }, { notAfter: 350 }], c[1]);
  t.match(check(c[1]!, [c[0]!, fork[0]!, fork[1]!], { head: headOf(c[3]!) }), { ok: false, code: 'chain_fork' }, 'links after it that fork from the chain the node signed');
  const other = chain([{ notAfter: 210 }], c[0]);
  t.match(check(other[0]!, [c[0]!, c[2]!, c[3]!], { head: headOf(c[3]!) }), { ok: false, code: 'bad_chain' }, 'another link at position 2 does not hash-link to the chain after it');
  t.match(check(c[1]!, [c[0]!, c[3]!, c[2]!], { head: headOf(c[3]!) }), { ok: false, code: 'bad_chain' }, 'out of order after it');
  t.match(check(c[1]!, [c[0]!, c[1]!, c[2]!, c[3]!], { head: headOf(c[3]!) }), { ok: false, code: 'bad_chain' }, 'the link to sign relayed too');
});
