// The node keeps the decoding of relayed chain links by their exact bytes (node/runtime/authorization/
// relayed-links.ts): the chain check answers exactly as with a fresh decoding, on first sight and on
// every later one. A link seen before with its intent, relayed again with another intent, from another
// vault, or with a byte changed is refused as before; nothing refused is kept.
import t from 'tap';
import { encodeIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { decodeChainLink, nextChainLink, signChainLink, type ChainLink } from '../../core/policy/intent-chain.ts';
import { checkChain, type RelayedLink } from '../../core/policy/chain-check.ts';
import { decodeRelayedKept, KEPT_RELAYED_BYTES } from '../../node/runtime/authorization/relayed-links.ts';
import { evm, intentHash, NOW, ORG, seed, VAULT } from '../core/policy/policy-fixtures.ts';

const customer = seed('relayed customer');

interface Built {
  link: ChainLink;
  bytes: Uint8Array;
  intent: EvmTransferIntent;
  intentBytes: Uint8Array;
}

function chain(n: number, vaultId = VAULT, over: Partial<EvmTransferIntent> = {}): Built[] {
  const out: Built[] = [];
  let prev: ChainLink | undefined;
  for (let k = 0; k < n; k++) {
    const intent = evm({ notAfter: BigInt(NOW + 100 + k), ...over });
    const link = nextChainLink({ organization: ORG, vaultId, prev, intentHash: intentHash(intent), notAfter: intent.notAfter });
    out.push({ link, bytes: signChainLink(link, customer), intent, intentBytes: encodeIntent(intent) });
    prev = link;
  }
  return out;
}

const relay = (bs: Built[]): RelayedLink[] => bs.map((b) => ({ link: b.bytes, intent: b.intentBytes }));

/** The check with a fresh decoding, then twice with the kept one; the three answers. */
function both(target: Built, relayed: RelayedLink[], vaultId = VAULT) {
  const input = { link: decodeChainLink(target.bytes), intent: target.intent, intentBytes: target.intentBytes, vaultId, relayed, windowSeconds: 3600, now: NOW };
  return [checkChain(input), checkChain({ ...input, decode: decodeRelayedKept }), checkChain({ ...input, decode: decodeRelayedKept })];
}

t.test('kept decodings give the fresh answers, allowed and refused', async (t) => {
  const c = chain(4);
  const [fresh, first, again] = both(c[3]!, relay(c.slice(0, 3)));
  t.match(fresh, { ok: true });
  t.same(first, fresh, 'first sight');
  t.same(again, fresh, 'seen before');

  // Link 2 seen with its intent; now relayed with another intent's bytes.
  const swapped = relay(c.slice(0, 3));
  swapped[1] = { ...swapped[1]!, intent: encodeIntent(evm({ amount: 0n, notAfter: BigInt(NOW + 101) })) };
  for (const r of both(c[3]!, swapped)) t.match(r, { ok: false, code: 'bad_chain', message: /names another intent/ }, 'another intent under a link seen before');

  // The same position of another vault's chain, seen and kept, is still of another vault.
  const other = chain(3, 'vault_other');
  t.match(both(other[2]!, relay(other.slice(0, 2)), 'vault_other')[1], { ok: true });
  for (const r of both(c[2]!, relay([c[0]!, other[1]!]))) t.match(r, { ok: false, code: 'bad_chain' }, 'a kept link of another vault');

  // A byte changed in a link seen before: decoded afresh and refused; the refusal is not kept.
  const bent = relay(c.slice(0, 3));
  const changed = Uint8Array.from(bent[2]!.link);
  changed[changed.length - 80]! ^= 1;
  bent[2] = { ...bent[2]!, link: changed };
  for (const r of both(c[3]!, bent)) t.match(r, { ok: false, code: 'bad_chain' }, 'a changed byte');
  const trailing = relay(c.slice(0, 3));
  trailing[0] = { ...trailing[0]!, link: new Uint8Array([...trailing[0]!.link, 0]) };
  for (const r of both(c[3]!, trailing)) t.match(r, { ok: false, code: 'bad_chain', message: /malformed/ }, 'a malformed link, on every sight');
});

t.test('a pair larger than the kept size is decoded every time, with the same answer', async (t) => {
  const big = chain(3, VAULT, { data: new Uint8Array(KEPT_RELAYED_BYTES), amount: 0n });
  t.ok(big[0]!.intentBytes.length > KEPT_RELAYED_BYTES);
  const [fresh, first, again] = both(big[2]!, relay(big.slice(0, 2)));
  t.match(fresh, { ok: true });
  t.same(first, fresh);
  t.same(again, fresh);
  t.not(decodeRelayedKept(relay(big)[0]!), decodeRelayedKept(relay(big)[0]!), 'not kept');
  const small = relay(chain(1))[0]!;
  t.equal(decodeRelayedKept(small), decodeRelayedKept({ link: Uint8Array.from(small.link), intent: Uint8Array.from(small.intent) }), 'kept by the bytes, not the arrays');
});
