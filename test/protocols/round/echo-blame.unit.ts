// Echo blame: a reporter whose echo digest differs about a third party is named together with that
// party, never that party alone; a false echo about the verifying party itself, or about the reporter's
// own values, names the reporter alone. Checked on the primitive, in the DKG and in ECDSA signing.
import t from 'tap';
import { checkEcho } from '../../../node/protocols/round/echo.ts';
import { ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { dkg, type DkgParams } from '../../../node/protocols/dkg/dkg.ts';
import { simulate } from '../simulate.ts';
import { committee, online, presign, sid } from '../ecdsa/harness.ts';
import { ONLINE_R1_KIND } from '../../../node/protocols/ecdsa/online.ts';

const dkgParams = (session: string): Map<number, DkgParams> =>
  new Map([1, 2, 3].map((me) => [me, { sessionId: sid(session), keyId: 'vault-echo', epoch: 0, threshold: 2, parties: [1, 2, 3], me }]));

const summary = (e: ProtocolAbort | undefined) => ({ code: e?.code, culprits: e?.culprits });

const culpritsOf = (f: () => void): number[] | undefined => {
  try {
    f();
  } catch (err) {
    if (err instanceof ProtocolAbort) return [...err.culprits];
    throw err;
  }
  return undefined;
};

t.test('checkEcho names the pair for a third party, the reporter alone about itself or us', async (t) => {
  const mine = { '1': 'a'.repeat(64), '2': 'b'.repeat(64), '3': 'c'.repeat(64) };
  t.equal(culpritsOf(() => checkEcho(mine, { ...mine }, 3, 1, 'values')), undefined, 'agreeing echo passes');
  t.same(culpritsOf(() => checkEcho(mine, { ...mine, '2': 'd'.repeat(64) }, 3, 1, 'values')), [2, 3], 'about honest party 2: reporter and subject');
  t.same(culpritsOf(() => checkEcho(mine, { ...mine, '1': 'd'.repeat(64) }, 3, 1, 'values')), [3], 'about us: the reporter alone');
  t.same(culpritsOf(() => checkEcho(mine, { ...mine, '3': 'd'.repeat(64) }, 3, 1, 'values')), [3], 'about its own values: the reporter alone');
  t.same(culpritsOf(() => checkEcho(mine, { ...mine, '1': 'd'.repeat(64), '2': 'd'.repeat(64) }, 3, 1, 'values')), [3], 'a lie about us outweighs one about a third party');
  t.same(culpritsOf(() => checkEcho(mine, 'nonsense', 3, 1, 'values')), [3], 'a malformed echo names the reporter');
});

t.test('DKG: a false echo about an honest party names reporter and subject, and the subject names the reporter', async (t) => {
  // Party 3 is honest in round 1 but echoes a wrong digest of party 2's round-1 message.
  const lie = (m: Message): Message[] => {
    if (m.round !== 2 || m.to !== 'all') return [m];
    const e = decodeBlob<Record<string, string>>('dkg/r2-echo', m.payload);
    return [{ ...m, payload: encodeBlob('dkg/r2-echo', { ...e, '2': '0'.repeat(64) }) }];
  };
  const { results, aborts } = simulate(dkg, dkgParams('echo-lie'), { tamper: new Map([[3, lie]]) });
  t.equal(results.size, 0, 'nobody outputs a key');
  t.same(summary(aborts.get(1)), { code: 'equivocation', culprits: [2, 3] }, 'party 1 names the disputed pair, not party 2 alone');
  t.same(summary(aborts.get(2)), { code: 'equivocation', culprits: [3] }, 'party 2 knows what it sent: names the reporter alone');
});

t.test('ECDSA online: a false echo about an honest signer\'s images names reporter and subject', async (t) => {
  const c = committee(3, 2, 'echo-blame');
  const pre = presign(c, [1, 2, 3], 'echo-blame presign');
  t.equal(pre.results.size, 3, 'presigning completes');
  const lie = (m: Message): Message[] => {
    const v = decodeBlob<{ echo: Record<string, string> }>(ONLINE_R1_KIND, m.payload);
    return [{ ...m, payload: encodeBlob(ONLINE_R1_KIND, { ...v, echo: { ...v.echo, '2': 'f'.repeat(64) } }) }];
  };
  const res = online(pre.results, sid('echo-blame digest'), { tamper: new Map([[3, lie]]) });
  t.same(summary(res.aborts.get(1)), { code: 'equivocation', culprits: [2, 3] }, 'party 1 names the disputed pair');
  t.same(summary(res.aborts.get(2)), { code: 'equivocation', culprits: [3] }, 'party 2 names the reporter alone');
  t.notOk(res.results.has(1) || res.results.has(2), 'no honest signer releases a signature');
});
