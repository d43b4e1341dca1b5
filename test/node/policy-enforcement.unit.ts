// Every signer node enforces the vault's policy from its own verified trust log (docs/policies.md): three
// nodes in one process, each with its own store, trust registry, intent ledger and authorizer, and a
// malicious coordinator that holds the customer's API key (so it can sign any intent and chain link)
// but no approver's key. It rotates 2-of-3 subsets, forks the chain, withholds links: the window still
// holds exactly. Approvals forged, reused, from outside the set or duplicated are refused with a reason,
// and a loosening policy change waits out its delay on every node while a tightening applies at once.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { toHex as viemHex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { encodeIntent, signIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { IntentAuthorizer, type SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { vaultPolicy } from '../../node/runtime/authorization/trust-state.ts';
import { SessionRefused } from '../../node/runtime/session-host.ts';
import { chainLinkHash, nextChainLink, signChainLink, type ChainLink } from '../../core/policy/intent-chain.ts';
import { intentApprovalMessage, policyChangeApprovalMessage, signApproval, type Approval } from '../../core/policy/policy-approval.ts';
import { parsePolicyDocument, policyHash } from '../../core/policy/policy-document.ts';
import { FIRST_SIGHT_GRACE_S } from '../../core/policy/policy-log.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';
import { signParams } from '../../core/session/session-contract.ts';
import { alice, bob, carol, mallory } from '../core/policy/policy-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_governed';
const VAULT = 'vault_governed';
const operator = seed('policy operator');
const customer = signer(ORG, seed('policy customer'));
const bootstrap = signBootstrap(ORG, customer.publicKey, 1_795_000_000, operator);
const groupSecret = seed('policy group key');
const groupKey = bytesToHex(secp256k1.getPublicKey(groupSecret, true));
const FROM = publicKeyToAddress(viemHex(secp256k1.getPublicKey(groupSecret, false)));
const T0 = 1_795_100_000;
const NATIVE = 'eip155:1:native';
const approvers = [alice, bob, carol].map((a) => ({ id: a.id, public_key: a.publicKey }));

const basePolicy = {
  format: 1, version: 1, vault_id: VAULT, change_delay_seconds: 3600, approvers,
  rolling_window: { seconds: 86_400, caps: { [NATIVE]: '5000' } },
  quorums: [
    { k: 2, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '2000' } } },
    { k: 2, approvers: ['alice', 'bob', 'carol'], when: { rule: 'policy_change' } },
  ],
};
const policyEntry = (body: unknown, created = T0 - 100) => signedEntry(customer, 'PUT', `/v1/vaults/${VAULT}/policy`, body, { created });

interface Node {
  name: string;
  authorizer: IntentAuthorizer;
  ledger: IntentLedger;
  trust: TrustRegistry;
}

async function cluster(t: Test, clock: { s: number }): Promise<Node[]> {
  return Promise.all(['A', 'B', 'C'].map(async (name) => {
    const store = await SealedStore.open(mkdtempSync(join(tmpdir(), `policy-${name}-`)), new Uint8Array(32).fill(7));
    t.teardown(() => store.close());
    const now = () => clock.s * 1000;
    const trust = new TrustRegistry(store, { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))], now });
    const ledger = new IntentLedger(store, { now });
    return { name, trust, ledger, authorizer: new IntentAuthorizer(trust, now, { chainHead: (v) => ledger.chainHead(v) }) };
  }));
}

let nonce = 0;
interface Signed {
  intent: EvmTransferIntent;
  bytes: Uint8Array;
  link: ChainLink;
  linkBytes: Uint8Array;
}

/** An intent of `amount` wei, chained after `prev` (undefined: the vault's first), signed with the customer's key. */
function intent(amount: bigint, prev: ChainLink | undefined, clock: { s: number }): Signed {
  const fields: EvmTransferIntent = {
    kind: 'evm.transfer', organization: ORG, walletId: 'w', chainId: 1n, nonce: BigInt(nonce++), from: hexToBytes(FROM.slice(2)), to: new Uint8Array(20).fill(0xb0),
    asset: { kind: 'native' }, amount, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: `p-${nonce}`, notAfter: BigInt(clock.s + 600),
  };
  const bytes = encodeIntent(fields);
  const link = nextChainLink({ organization: ORG, vaultId: VAULT, prev, intentHash: bytesToHex(sha256(bytes)), notAfter: fields.notAfter });
  return { intent: fields, bytes, link, linkBytes: signChainLink(link, customer.secret) };
}

function request(s: Signed, relayed: Signed[], approvals: Approval[] = [], log: Uint8Array[] = []): SignRequestView {
  const template = { nonce: Number(s.intent.nonce), gasLimit: 21_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 1n };
  return {
    keyId: VAULT, path: [], scheme: 'ecdsa', digests: [evmSigningDigest(evmTransaction(s.intent, template))],
    intent: s.bytes, intentSignature: signIntent(s.bytes, customer.secret), apiKeyId: customer.keyId,
    template: encodeBlob('evm-template', { nonce: template.nonce, gasLimit: '21000', maxFeePerGas: String(10n ** 9n), maxPriorityFeePerGas: '1' }),
    endUserToken: '', owner: ORG, groupKey, chainCode: '00'.repeat(32), trustLog: [bootstrap, ...log],
    chainLink: s.linkBytes, chain: relayed.map((r) => ({ link: r.linkBytes, intent: r.bytes })), approvals,
  };
}

/** One node's part: authorize, then claim (what a node does before any signature share leaves it). */
async function nodeSigns(n: Node, req: SignRequestView): Promise<string | undefined> {
  try {
    await n.ledger.claim(await n.authorizer.authorize(req));
    return undefined;
  } catch (err) {
    if (err instanceof SessionRefused) return err.code;
    throw err;
  }
}

/** Both nodes of a pair; the signature exists only if both took part. Returns the refusal codes. */
async function pairSigns(pair: Node[], req: SignRequestView): Promise<(string | undefined)[]> {
  const out: (string | undefined)[] = [];
  for (const n of pair) out.push(await nodeSigns(n, req));
  return out;
}

const approve = (a: typeof alice, s: Signed, version = 1) => signApproval(a.id, intentApprovalMessage(VAULT, version, bytesToHex(sha256(s.bytes))), a.secret);

t.test('a vault under a policy signs only chained intents', async (t) => {
  const clock = { s: T0 };
  const [a] = await cluster(t, clock);
  const s = intent(100n, undefined, clock);
  t.equal(await nodeSigns(a!, { ...request(s, [], [], [policyEntry({ policy: basePolicy })]), chainLink: undefined }), 'chain_link_required');
  const other = signer(ORG, seed('not the customer'));
  t.equal(await nodeSigns(a!, { ...request(s, []), chainLink: signChainLink(s.link, other.secret) }), 'bad_chain', 'a link signed by another key');
  t.equal(await nodeSigns(a!, request(s, [])), undefined);
});

t.test('a coordinator rotating 2-of-3 subsets, forking and withholding the chain gets no more than the window', async (t) => {
  const clock = { s: T0 };
  const nodes = await cluster(t, clock);
  for (const n of nodes) await n.trust.apply(ORG, [bootstrap, policyEntry({ policy: basePolicy })]);
  const pairs = ([[0, 1], [1, 2], [2, 0]] as const).map(([x, y]) => [nodes[x]!, nodes[y]!]);
  // Every link the attacker made, and which nodes took part in signing each intent.
  const made: Signed[] = [];
  const signedBy = new Map<Signed, Set<string>>();
  const ancestry = (s: Signed | undefined): Signed[] => {
    const out: Signed[] = [];
    for (let cur = s; cur; cur = made.find((m) => chainLinkHash(m.link) === cur!.link.prev)) out.unshift(cur);
    return out;
  };
  const attempts = { total: 0, refusals: new Map<string, number>() };
  // Rounds of 1000 wei spends, each under the quorum threshold; the window allows 5000.
  for (let round = 0; round < 8; round++) {
    // Any recent link may be built on (a fork), or none (a new chain from link 1); relay the whole
    // ancestry, only the prev, or nothing; to each pair in turn.
    const bases: (Signed | undefined)[] = [undefined, ...made.slice(-6)];
    for (const base of bases) {
      const s = intent(1000n, base?.link, clock);
      made.push(s);
      const full = ancestry(base);
      for (const relayed of [full, full.slice(-1), []]) {
        for (const pair of pairs) {
          attempts.total++;
          const codes = await pairSigns(pair, request(s, relayed));
          codes.forEach((c, i) => {
            if (c === undefined) {
              const set = signedBy.get(s) ?? new Set();
              set.add(pair[i]!.name);
              signedBy.set(s, set);
            } else attempts.refusals.set(c, (attempts.refusals.get(c) ?? 0) + 1);
          });
        }
      }
    }
  }
  // A signature exists when 2 nodes took part (at different times, too).
  const complete = [...signedBy].filter(([, set]) => set.size >= 2).map(([s]) => s);
  const total = complete.reduce((a, s) => a + s.intent.amount, 0n);
  t.equal(total, 5000n, `exactly the window was signed (${complete.length} spends of ${attempts.total} attempts)`);
  t.ok((attempts.refusals.get('window_exceeded') ?? 0) > 0, 'over the window: window_exceeded');
  t.ok((attempts.refusals.get('chain_fork') ?? 0) > 0, 'forks: chain_fork');
  t.ok((attempts.refusals.get('chain_incomplete') ?? 0) > 0, 'withheld links: chain_incomplete');
  // Later, out of the window, an honest chain signs again.
  clock.s += 86_400 + 700;
  const head = complete.sort((x, y) => Number(y.link.seq - x.link.seq))[0]!;
  const next = intent(1000n, head.link, clock);
  const relayed = ancestry(head).slice(-1);
  for (const pair of pairs) {
    const codes = await pairSigns(pair, request(next, relayed));
    if (codes.every((c) => c === undefined)) {
      t.pass('a day later the window has room again');
      return;
    }
  }
  t.fail('no pair signed after the window passed');
});

t.test('approvals: forged, reused, from outside the set or duplicated are refused by the node with a reason', async (t) => {
  const clock = { s: T0 };
  const [a] = await cluster(t, clock);
  const withMallory = { ...basePolicy, approvers: [...approvers, { id: 'mallory', public_key: mallory.publicKey }] };
  await a!.trust.apply(ORG, [bootstrap, policyEntry({ policy: withMallory })]);
  const first = intent(100n, undefined, clock);
  t.equal(await nodeSigns(a!, request(first, [])), undefined);
  let prev = first;
  const big = () => intent(3000n, prev.link, clock);
  const cases: [string, (s: Signed) => Approval[], string][] = [
    ['none', () => [], 'approval_required'],
    ['one of two', (s) => [approve(alice, s)], 'approval_required'],
    ['forged: mallory\'s signature under bob\'s id', (s) => [approve(alice, s), { ...approve(mallory, s), approver_id: 'bob' }], 'bad_approval'],
    ['reused from another intent', (s) => [approve(alice, s), approve(bob, intent(3000n, prev.link, clock))], 'bad_approval'],
    ['for another policy version', (s) => [approve(alice, s), approve(bob, s, 2)], 'bad_approval'],
    ['from an approver outside the quorum\'s set', (s) => [approve(alice, s), approve(mallory, s)], 'approval_required'],
    ['from someone not in the policy', (s) => [approve(alice, s), { ...approve(bob, s), approver_id: 'dave' }], 'unknown_approver'],
    ['one approver twice', (s) => [approve(alice, s), approve(alice, s)], 'duplicate_approval'],
  ];
  for (const [what, approvals, code] of cases) {
    const s = big();
    t.equal(await nodeSigns(a!, request(s, [prev], approvals(s))), code, what);
  }
  t.equal(await a!.ledger.chainHead(VAULT).then((h) => h?.seq), 1n, 'no refused intent moved the chain');
  const s = big();
  t.equal(await nodeSigns(a!, request(s, [prev], [approve(alice, s), approve(carol, s)])), undefined, 'two distinct approvers of the set');
  prev = s;
  t.equal(await a!.ledger.chainHead(VAULT).then((h) => h?.seq), 2n);
});

t.test('policy changes: a loosening waits out the delay on the node, a tightening applies at once, and each needs the change quorum', async (t) => {
  const clock = { s: T0 };
  const [a] = await cluster(t, clock);
  const v1 = parsePolicyDocument(basePolicy);
  const change = (over: Record<string, unknown>, signers: (typeof alice)[], created?: number) => {
    const doc = parsePolicyDocument({ ...basePolicy, ...over });
    const approvals = signers.map((s) => signApproval(s.id, policyChangeApprovalMessage(VAULT, v1.version, policyHash(doc)), s.secret));
    return policyEntry({ policy: { ...basePolicy, ...over }, approvals }, created);
  };
  const looser = { version: 2, rolling_window: { seconds: 86_400, caps: { [NATIVE]: '50000' } } };
  const first = intent(5000n, undefined, clock);
  await a!.trust.apply(ORG, [bootstrap, policyEntry({ policy: basePolicy })]);
  t.equal(await nodeSigns(a!, request(first, [], [approve(alice, first), approve(bob, first)])), undefined, 'the window filled');

  // Without the change quorum: kept as refused, nothing changes.
  let st = await a!.trust.apply(ORG, [change(looser, [alice])]);
  t.equal(vaultPolicy(st, VAULT, clock.s)?.doc.version, 1);
  t.match(st.policies?.[VAULT]?.refused, [{ version: 2, reason: /needs 2 approvals/ }]);

  // With it, backdated by a day: the delay runs from when the node saw it, less the ten-minute grace
  // that lets nodes seeing a change a little late agree on its time (FIRST_SIGHT_GRACE_S).
  st = await a!.trust.apply(ORG, [change(looser, [alice, bob], T0 - 86_400)]);
  t.equal(vaultPolicy(st, VAULT, clock.s)?.doc.version, 1, 'a loosening is not in force at once');
  const second = intent(1000n, first.link, clock);
  t.equal(await nodeSigns(a!, request(second, [first])), 'window_exceeded', 'the node still enforces version 1');
  clock.s += 3599 - FIRST_SIGHT_GRACE_S;
  const later = intent(1000n, first.link, clock);
  t.equal(await nodeSigns(a!, request(later, [first])), 'window_exceeded', 'one second before the delay ends');
  clock.s += 1;
  t.equal(vaultPolicy(await a!.trust.state(ORG), VAULT, clock.s)?.doc.version, 2);
  const third = intent(1000n, first.link, clock);
  t.equal(await nodeSigns(a!, request(third, [first])), undefined, 'after the delay, version 2 applies');

  // A tightening (from version 2, in force now) applies at once, with the quorum version 2 names.
  const v2 = vaultPolicy(await a!.trust.state(ORG), VAULT, clock.s)!.doc;
  const tighter = parsePolicyDocument({ ...basePolicy, version: 3, rolling_window: { seconds: 86_400, caps: { [NATIVE]: '6000' } } });
  const approvals = [alice, carol].map((s) => signApproval(s.id, policyChangeApprovalMessage(VAULT, v2.version, policyHash(tighter)), s.secret));
  st = await a!.trust.apply(ORG, [policyEntry({ policy: { ...basePolicy, version: 3, rolling_window: tighter.rolling_window }, approvals })]);
  t.equal(vaultPolicy(st, VAULT, clock.s)?.doc.version, 3, 'in force at once');
  const fourth = intent(1000n, third.link, clock);
  t.equal(await nodeSigns(a!, request(fourth, [first, third])), 'window_exceeded', '5000 + 1000 spent of 6000');
});

t.test('the chain link, the relayed chain and the approvals reach the nodes through the session contract unchanged', async (t) => {
  const clock = { s: T0 };
  const first = intent(100n, undefined, clock);
  const s = intent(3000n, first.link, clock);
  const req = request(s, [first], [approve(alice, s), approve(bob, s)]);
  const { owner: _o, groupKey: _g, chainCode: _c, endUser: _e, ...fields } = req;
  const params = { ...fields, epoch: 0, keyId: VAULT };
  const back = signParams.decode(signParams.encode(params));
  t.same(back.chainLink, req.chainLink);
  t.same(back.chain, req.chain);
  t.same(back.approvals, req.approvals);
  t.throws(() => signParams.encode({ ...params, approvals: [{ approver_id: 'alice', signature: 'ab' }] }), 'a malformed approval is refused before any session opens');
});
