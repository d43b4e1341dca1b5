// A member's approval of an escrow's calls (docs/platform/escrows.md "Member approval"), through the real
// member-action path: a BYO member signs in at a real OpenID provider, begins a batch action of purpose
// {type: "escrow", id} over the intents its customer built, and the escrow authorizer accepts exactly the
// escrow's calls from the payer's wallet by the payer holder's member. A cancel revokes an approval not
// used yet, and refuses while one is in use; a cancel and an approval racing never both take effect.
import t from 'tap';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { Hex } from 'viem';
import { memberActionSetup, P, type Begun, type Completed } from '../member-auth/member-action-harness.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../../core/intents/evm-fields.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import { ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';
import { ESCROWS, ESCROW_ACTIONS, ESCROW_EVENTS } from '../../../api/escrow/collections.ts';
import { EscrowService, escrowView, type StoredEscrow } from '../../../api/escrow/escrow-service.ts';
import type { EscrowChain } from '../../../api/escrow/escrow-chain.ts';
import { PlatformLedger } from '../../../api/ledger/platform-ledger.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { newId } from '../../../api/store/ids.ts';
import { onchainEscrowId, type EscrowCall } from '../../../api/escrow/token-escrow.ts';
import type { WalletRecord } from '../../../api/vaults/records.ts';

const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const CONTRACT = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';
const PAYEE = '0x00000000000000000000000000000000000000b0';

async function setup(t: Parameters<typeof memberActionSetup>[0]) {
  const h = await memberActionSetup(t);
  const session = await h.signIn('alice');
  // The member's id as member-actions sees it: from an action of its own.
  const probe = await h.begin(session);
  const memberId = (await ACTION_COLLECTIONS.actions.in(h.store).get(probe.json().id))!.member_id;
  const holder = await h.bearer('POST', '/v1/account-holders', { type: 'individual', given_name: 'Alice', family_name: 'Payer' });
  const holderId = holder.json().id as string;
  const stored = (await ACCOUNT_HOLDERS.in(h.store).get(holderId))!;
  await h.store.batch([ACCOUNT_HOLDERS.putOp(holderId, { ...stored, member_id: memberId, member_kind: 'byo_oidc' })]);
  // The escrow service's cancel over a chain where nothing was deposited; the app's authorizer shares its store.
  const chain = { contract: CONTRACT, escrowAt: async () => ({ state: 'none', token: '', payer: '', payee: '', amount: 0n, refundableAfter: 0n }) } as unknown as EscrowChain;
  const service = new EscrowService({
    store: h.store, audit: h.platform.audit, cursors: h.platform.cursors, deliveries: h.platform.deliveries, links: new CustomerLinks(h.store),
    ledger: new PlatformLedger(h.store), escrow: () => chain, stablecoin: () => TOKEN as Hex, fundingWindowMs: 3_600_000, clock: Date.now,
  });
  service.useActions(h.memberActions());

  /** An escrow of Acme's sandbox workspace paid from `wallet`, as POST /escrows stores it. */
  const escrow = async (status: StoredEscrow['status'] = 'awaiting_funding', wallet: WalletRecord = h.wallet, payer = holderId) => {
    const id = newId('esc');
    const now = new Date().toISOString();
    const r: StoredEscrow = {
      v: 1, id, tenant: h.acme.tenant.id, workspace: h.acme.sandbox.id, org: h.acme.org, chain: 'evm-local', contract: CONTRACT, escrow_id: onchainEscrowId(id),
      asset: `evm-local:${TOKEN}`, token: TOKEN, payer_account_holder_id: payer, payer_wallet_id: wallet.id, payer_address: wallet.address.toLowerCase(),
      payee_account_holder_id: 'ah_0000000000000000000000000b', payee_wallet_id: 'wal_payee', payee_address: PAYEE, amount: '1000000000000000000',
      refundable_after: new Date(Math.floor(Date.now() / 1000) * 1000 + 86_400_000).toISOString(), funding_deadline: new Date(Date.now() + 3_600_000).toISOString(),
      status, deposit_tx_hash: null, deposit_block: null, settlement_tx_hash: null, settlement_block: null, refunded_by: null, description: null,
      created_at: now, updated_at: now, funded_at: null, completed_at: null, from_block: 0,
    };
    await h.store.batch([ESCROWS.putOp(id, r, { index: [`${r.workspace}\x00all\x00${id}`, `open\x00${id}`] })]);
    return r;
  };

  let seq = 0;
  /** The customer's intent for `call` from `wallet` (native asset, amount 0, the calldata), signed with Acme's API key. */
  const intentOf = (call: Pick<EscrowCall, 'to' | 'data'>, wallet: WalletRecord = h.wallet, amount = '0') => {
    const i = evmIntentFromFields({
      organization: h.acme.org, walletId: wallet.id, chainId: 31337n, nonce: BigInt(seq), from: wallet.address, to: call.to, amount,
      idempotencyKey: `esc-${process.pid}-${++seq}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    });
    i.data = hexToBytes(call.data.slice(2));
    const bytes = encodeIntent(i);
    return { bytes, b64: Buffer.from(bytes).toString('base64'), hex: bytesToHex(bytes), key: i.idempotencyKey, sig: bytesToHex(signIntent(bytes, h.acme.creds.secretKey)) };
  };
  const beginEscrow = (r: { id: string }, intents: { b64: string }[], o: { session?: string; wallet?: WalletRecord } = {}) =>
    h.bff('POST', P.begin, { kind: 'transaction.sign_batch', wallet_id: (o.wallet ?? h.wallet).id, intents: intents.map((i) => i.b64), purpose: { type: 'escrow', id: r.id } }, { session: o.session ?? session });
  const count = async (c: string) => {
    let n = 0;
    for await (const _ of h.store.all(c)) n++;
    return n;
  };
  return { h, session, memberId, holderId, service, escrow, intentOf, beginEscrow, count };
}

const calls = (r: StoredEscrow) => escrowView(r).calls;

t.test('the payer\'s member approves exactly [approve, deposit] of an escrow awaiting funding, then [release] once funded', async (t) => {
  const { h, memberId, escrow, intentOf, beginEscrow, count } = await setup(t);
  const r = await escrow();
  const [approve, deposit] = calls(r).funding;
  const res = await beginEscrow(r, [intentOf(approve), intentOf(deposit)]);
  t.equal(res.statusCode, 201, res.body);
  const begun = res.json() as Begun & { purpose: unknown };
  t.same(begun.purpose, { type: 'escrow', id: r.id });
  t.match(await ESCROW_ACTIONS.in(h.store).get(`${r.id}/${begun.id}`), { escrow_id: r.id, action_id: begun.id, purpose: 'funding', org: h.acme.org }, 'recorded on the escrow in the action\'s batch');
  const history = await ESCROW_EVENTS.in(h.store).byIndex(`escrow/${r.id}/`, 10);
  t.match(history, [{ type: 'funding_approved', member_action_id: begun.id, actor: { type: 'member', id: memberId } }]);
  t.equal((await count('escrow_member_actions')), 1);

  const funded = await escrow('funded');
  const rel = await beginEscrow(funded, [intentOf(calls(funded).release)]);
  t.equal(rel.statusCode, 201, rel.body);
  t.match(await ESCROW_ACTIONS.in(h.store).get(`${funded.id}/${rel.json().id}`), { purpose: 'release' });
});

t.test('anything but the escrow\'s exact calls, by its payer\'s member, is refused and stores nothing', async (t) => {
  const { h, escrow, intentOf, beginEscrow, count } = await setup(t);
  const r = await escrow();
  const [approve, deposit] = calls(r).funding;
  const other = await escrow();
  const funded = await escrow('funded');
  const unbound = await h.hostedWallet();
  const foreign = await escrow('awaiting_funding', unbound, 'ah_00000000000000000000000000');
  const done = await escrow('released');
  const before = await h.snapshot();
  const cases: [string, Parameters<typeof beginEscrow>, number, string][] = [
    ['the calls in the other order', [r, [intentOf(deposit), intentOf(approve)]], 422, 'validation_failed'],
    ['the approval alone', [r, [intentOf(approve)]], 422, 'validation_failed'],
    ['an extra call', [r, [intentOf(approve), intentOf(deposit), intentOf(calls(r).release)]], 422, 'validation_failed'],
    ['another escrow\'s deposit', [r, [intentOf(approve), intentOf(calls(other).funding[1])]], 422, 'validation_failed'],
    ['a value with the call', [r, [intentOf(approve), intentOf(deposit, h.wallet, '1')]], 422, 'validation_failed'],
    ['a release while awaiting funding', [r, [intentOf(calls(r).release)]], 422, 'validation_failed'],
    ['the funding of a funded escrow', [funded, [intentOf(calls(funded).funding[0]), intentOf(calls(funded).funding[1])]], 422, 'validation_failed'],
    ['an escrow that ended', [done, [intentOf(calls(done).release)]], 409, 'invalid_transition'],
    ['a wallet that is not the payer\'s', [foreign, [intentOf(calls(foreign).funding[0]), intentOf(calls(foreign).funding[1])]], 422, 'validation_failed'],
    ['an unknown escrow', [{ id: 'esc_0123456789abcdef0123456789' }, [intentOf(approve), intentOf(deposit)]], 404, 'not_found'],
  ];
  for (const [what, args, status, code] of cases) {
    const res = await beginEscrow(...args);
    t.match([res.statusCode, res.json().code], [status, code], what);
  }
  // From its own (unbound) wallet the member is not the payer holder's member.
  const notPayer = await beginEscrow(foreign, [intentOf(calls(foreign).funding[0], unbound), intentOf(calls(foreign).funding[1], unbound)], { wallet: unbound });
  t.match([notPayer.statusCode, notPayer.json().code], [403, 'member_subject_mismatch'], 'only the payer holder\'s member');
  t.equal(await h.snapshot(), before, 'no action, proof or audit entry stored');
  t.equal(await count('escrow_member_actions'), 0, 'nothing recorded on any escrow');
});

t.test('cancel revokes an approval not used yet; refuses while one is in use', async (t) => {
  const { h, session, service, escrow, intentOf, beginEscrow } = await setup(t);
  const scope = { tenant: h.acme.tenant.id, workspace: h.acme.sandbox.id };
  const actor = { type: 'api_key' as const, id: 'key_test' };

  const r = await escrow();
  const [approve, deposit] = calls(r).funding;
  const pending = (await beginEscrow(r, [intentOf(approve), intentOf(deposit)])).json() as Begun;
  const canceled = await service.cancel(scope, actor, r.id);
  t.equal(canceled.status, 'canceled');
  t.match(await h.memberActions().batchTransactions(pending.id), { status: 'revoked' }, 'the pending approval is revoked with the cancel');
  const after = await beginEscrow(r, [intentOf(approve), intentOf(deposit)]);
  t.match([after.statusCode, after.json().code], [409, 'invalid_transition'], 'a canceled escrow takes no approval');

  // An approval whose approve was submitted: its deposit may follow, so the escrow is not canceled.
  const s2 = await escrow();
  const [a2, d2] = calls(s2).funding.map((c) => intentOf(c));
  const begun = (await beginEscrow(s2, [a2!, d2!])).json() as Begun;
  const idToken = await h.op.signIn({ sub: 'alice', nonce: begun.proof.nonce, maxAge: 300 });
  const done = (await h.complete(session, begun.id, idToken)).json() as Completed;
  const sub = await h.submit(a2!, { member_signing_session: done.signing_session.id });
  t.equal(sub.statusCode, 202, sub.body);
  await t.rejects(service.cancel(scope, actor, s2.id), { code: 'transactions_in_flight' }, 'in use: refused');
  t.equal((await ESCROWS.in(h.store).get(s2.id))!.status, 'awaiting_funding', 'unchanged');
  t.match(await h.memberActions().batchTransactions(begun.id), { status: 'completed' }, 'and the approval stands');
  const sub2 = await h.submit(d2!, { member_signing_session: done.signing_session.id });
  t.equal(sub2.statusCode, 202, sub2.body);
  await t.rejects(service.cancel(scope, actor, s2.id), { code: 'transactions_in_flight' }, 'its deposit submitted: refused');
});

t.test('an approval and a cancel racing: never an approval left usable on a canceled escrow', async (t) => {
  const { h, service, escrow, intentOf, beginEscrow } = await setup(t);
  const scope = { tenant: h.acme.tenant.id, workspace: h.acme.sandbox.id };
  for (let round = 0; round < 4; round++) {
    const r = await escrow();
    const [approve, deposit] = calls(r).funding;
    const [begin, cancel] = await Promise.all([
      beginEscrow(r, [intentOf(approve), intentOf(deposit)]),
      service.cancel(scope, { type: 'api_key', id: 'key_test' }, r.id).then((x) => x.status, (e: { code: string }) => e.code),
    ]);
    t.equal(cancel, 'canceled', `round ${round}: the cancel takes effect`);
    if (begin.statusCode === 201) {
      t.match(await h.memberActions().batchTransactions(begin.json().id), { status: 'revoked' }, `round ${round}: the approval came first and was revoked by the cancel`);
    } else {
      t.match([begin.statusCode, begin.json().code], [409, 'invalid_transition'], `round ${round}: the cancel came first; the approval is a clean 409`);
    }
  }
});
