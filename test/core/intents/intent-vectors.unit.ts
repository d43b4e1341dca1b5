// Intent formats v1, v2 and v3, and kind 3 (a Safe transaction): the published vectors encode byte for
// byte, decode back to their inputs, and their signatures verify; anything not canonical is refused.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { decodeIntent, encodeIntent, verifyIntentSignature, signIntent, INTENT_DOMAIN, type Intent } from '../../../core/intents/intent.ts';
import { IntentFormatError } from '../../../core/intents/canonical.ts';
import { fromHex, toHex } from '../../../common/bytes.ts';
import { intentToJson, intentVectorInputs, intentVectorInputsV2, intentVectorInputsV3, intentVectorInputsSafeTx } from '../../vectors/intent-vector-inputs.ts';
import { safeTxHash } from '../../../core/chains/evm/safe-tx.ts';

interface Vectors {
  api_secret_key_hex: string;
  api_public_key_hex: string;
  vectors: { name: string; intent: Record<string, unknown>; intent_hex: string; signature_hex: string }[];
}
const file = JSON.parse(readFileSync(new URL('../../vectors/intents-v1.json', import.meta.url), 'utf8')) as Vectors;
const inputs = intentVectorInputs();
const pub = fromHex(file.api_public_key_hex);

t.test('every vector encodes, decodes and verifies', async (t) => {
  t.equal(file.vectors.length, inputs.length);
  for (const [i, v] of file.vectors.entries()) {
    const input = inputs[i]!;
    t.equal(v.name, input.name);
    t.equal(toHex(encodeIntent(input.intent)), v.intent_hex, `${v.name}: encoding is pinned`);
    const decoded = decodeIntent(fromHex(v.intent_hex));
    t.same(intentToJson(decoded), v.intent, `${v.name}: decodes to its fields`);
    t.ok(verifyIntentSignature(fromHex(v.intent_hex), fromHex(v.signature_hex), pub), `${v.name}: signature verifies`);
    t.equal(toHex(signIntent(fromHex(v.intent_hex), fromHex(file.api_secret_key_hex))), v.signature_hex, `${v.name}: Ed25519 is deterministic`);
  }
});

t.test('the layout starts with the domain, the version and the kind', async (t) => {
  const b = fromHex(file.vectors[0]!.intent_hex);
  t.equal(new TextDecoder().decode(b.subarray(0, INTENT_DOMAIN.length)), 'custody-intent\0');
  t.equal(b[INTENT_DOMAIN.length], 1, 'version 1');
  t.equal(b[INTENT_DOMAIN.length + 1], 1, 'kind 1: evm.transfer');
  const btc = fromHex(file.vectors[3]!.intent_hex);
  t.equal(btc[INTENT_DOMAIN.length + 1], 2, 'kind 2: btc.transfer');
});

t.test('a signature over one intent does not verify another, nor under another key', async (t) => {
  const [a, b] = file.vectors;
  t.notOk(verifyIntentSignature(fromHex(b!.intent_hex), fromHex(a!.signature_hex), pub));
  t.notOk(verifyIntentSignature(fromHex(a!.intent_hex), fromHex(a!.signature_hex), fromHex(file.vectors[0]!.intent_hex.slice(0, 64))));
  t.notOk(verifyIntentSignature(fromHex(a!.intent_hex), new Uint8Array(63), pub), 'short signature');
});

t.test('non-canonical or malformed bytes are refused', async (t) => {
  const good = fromHex(file.vectors[0]!.intent_hex);
  const bad = (f: (b: Uint8Array) => Uint8Array, what: string, re: RegExp) => {
    const err = t.throws(() => decodeIntent(f(good.slice())), what) as IntentFormatError;
    t.type(err, IntentFormatError, what);
    t.match(err.message, re, what);
    t.equal(err.code, 'bad_intent');
  };
  bad((b) => new Uint8Array([...b, 0]), 'trailing byte', /trailing/);
  bad((b) => b.subarray(0, b.length - 1), 'truncated', /ends inside/);
  bad((b) => { b[0] = 0x43; return b; }, 'wrong domain', /domain/);
  bad((b) => { b[INTENT_DOMAIN.length] = 2; return b; }, 'version 2 on an EVM intent', /version 2/);
  bad((b) => { b[INTENT_DOMAIN.length + 1] = 9; return b; }, 'unknown kind', /kind 9/);
  bad((b) => { b[INTENT_DOMAIN.length + 3] = 0xff; return b; }, 'bad organization length', /organization/);
  const asset = INTENT_DOMAIN.length + 2 + 2 + 8 + 2 + 6 + 8 + 20 + 20;
  bad((b) => { b[asset] = 7; return b; }, 'unknown asset kind', /asset/);
});

t.test('the encoder refuses values outside the rules', async (t) => {
  const base = inputs[0]!.intent as Extract<Intent, { kind: 'evm.transfer' }>;
  const btc = inputs[3]!.intent as Extract<Intent, { kind: 'btc.transfer' }>;
  const cases: [string, Intent][] = [
    ['negative amount', { ...base, amount: -1n }],
    ['amount over 256 bits', { ...base, amount: 1n << 256n }],
    ['short address', { ...base, to: new Uint8Array(19) }],
    ['chain id 0', { ...base, chainId: 0n }],
    ['empty idempotency key', { ...base, idempotencyKey: '' }],
    ['idempotency key with a space', { ...base, idempotencyKey: 'a b' }],
    ['organization with a newline', { ...base, organization: 'org\n1' }],
    ['erc20 with calldata', { ...base, asset: { kind: 'erc20', contract: new Uint8Array(20) }, data: new Uint8Array([1]) }],
    ['no outputs', { ...btc, outputs: [] }],
    ['zero output', { ...btc, outputs: [{ address: btc.outputs[0]!.address, amount: 0n }] }],
    ['bad address characters', { ...btc, outputs: [{ address: 'bcrt1q!!!!!!!!!!!!!!!!', amount: 1n }] }],
  ];
  for (const [what, intent] of cases) t.throws(() => encodeIntent(intent), IntentFormatError, what);
});

const fileV2 = JSON.parse(readFileSync(new URL('../../vectors/intents-v2.json', import.meta.url), 'utf8')) as Vectors;

t.test('version 2: Bitcoin inputs with their amounts encode, decode and verify; version 1 still parses', async (t) => {
  const inputsV2 = intentVectorInputsV2();
  t.equal(fileV2.vectors.length, inputsV2.length);
  for (const [i, v] of fileV2.vectors.entries()) {
    t.equal(toHex(encodeIntent(inputsV2[i]!.intent)), v.intent_hex, `${v.name}: encoding is pinned`);
    const bytes = fromHex(v.intent_hex);
    t.equal(bytes[INTENT_DOMAIN.length], 2, `${v.name}: version 2`);
    t.same(intentToJson(decodeIntent(bytes)), v.intent, `${v.name}: decodes with its amounts`);
    t.ok(verifyIntentSignature(bytes, fromHex(v.signature_hex), fromHex(fileV2.api_public_key_hex)));
  }
  // Amounts are signed: changing one changes the bytes (and so the signature's meaning).
  const btc = inputsV2[0]!.intent as Extract<Intent, { kind: 'btc.transfer' }>;
  const moreFee = { ...btc, inputs: btc.inputs.map((x, i) => (i === 1 ? { ...x, amount: x.amount! + 1n } : x)) };
  t.not(toHex(encodeIntent(moreFee)), fileV2.vectors[0]!.intent_hex);
  // Inputs without amounts are version 1, as before.
  t.equal(encodeIntent({ ...btc, inputs: btc.inputs.map(({ txid, vout }) => ({ txid, vout })) })[INTENT_DOMAIN.length], 1);
});

t.test('version 2 refuses what has no single encoding or no meaning', async (t) => {
  const btc = intentVectorInputsV2()[0]!.intent as Extract<Intent, { kind: 'btc.transfer' }>;
  const refused = (what: string, intent: Intent, re: RegExp) => t.throws(() => encodeIntent(intent), re, what);
  refused('some inputs with amounts, some without', { ...btc, inputs: [btc.inputs[0]!, { txid: btc.inputs[1]!.txid, vout: 3 }] }, /every input/);
  refused('zero amount', { ...btc, inputs: [{ ...btc.inputs[0]!, amount: 0n }] }, /input amounts/);
  refused('over 21 million BTC', { ...btc, inputs: [{ ...btc.inputs[0]!, amount: 21_000_000n * 100_000_000n + 1n }] }, /input amounts/);
  refused('an input named twice', { ...btc, inputs: [btc.inputs[0]!, { ...btc.inputs[0]!, amount: 1n }] }, /twice/);
  const v2 = fromHex(fileV2.vectors[0]!.intent_hex);
  // Version 2 with no inputs would be a second encoding of a version 1 intent.
  const noInputs = encodeIntent({ ...btc, inputs: [] });
  const forged = noInputs.slice();
  forged[INTENT_DOMAIN.length] = 2;
  t.throws(() => decodeIntent(forged), /names its inputs/);
  // An EVM intent has no version 2.
  const evm = fromHex(file.vectors[0]!.intent_hex);
  evm[INTENT_DOMAIN.length] = 2;
  t.throws(() => decodeIntent(evm), /for Bitcoin transfers/);
  // A version 2 intent read as version 1 does not parse (the amounts become trailing garbage).
  const asV1 = v2.slice();
  asV1[INTENT_DOMAIN.length] = 1;
  t.throws(() => decodeIntent(asV1), IntentFormatError);
});

const fileV3 = JSON.parse(readFileSync(new URL('../../vectors/intents-v3.json', import.meta.url), 'utf8')) as Vectors;

t.test('version 3: EVM transfers naming their nonce encode, decode and verify', async (t) => {
  const inputsV3 = intentVectorInputsV3();
  t.equal(fileV3.vectors.length, inputsV3.length);
  for (const [i, v] of fileV3.vectors.entries()) {
    t.equal(toHex(encodeIntent(inputsV3[i]!.intent)), v.intent_hex, `${v.name}: encoding is pinned`);
    const bytes = fromHex(v.intent_hex);
    t.equal(bytes[INTENT_DOMAIN.length], 3, `${v.name}: version 3`);
    t.same(intentToJson(decodeIntent(bytes)), v.intent, `${v.name}: decodes with its nonce`);
    t.ok(verifyIntentSignature(bytes, fromHex(v.signature_hex), fromHex(fileV3.api_public_key_hex)));
  }
  // The nonce sits right after the chain id: the bytes are version 1's with eight more.
  const evm = inputsV3[0]!.intent as Extract<Intent, { kind: 'evm.transfer' }>;
  const { nonce: _n, ...v1 } = evm;
  const a = encodeIntent(v1);
  const b = encodeIntent(evm);
  t.equal(a[INTENT_DOMAIN.length], 1, 'without a nonce: version 1');
  t.equal(b.length, a.length + 8);
  const at = INTENT_DOMAIN.length + 2 + 2 + evm.organization.length + 2 + evm.walletId.length + 8;
  t.same([...b.subarray(at, at + 8)], [0, 0, 0, 0, 0, 0, 0, 7], 'nonce 7, big-endian u64, after the chain id');
  // The nonce is signed: another one is other bytes.
  t.not(toHex(encodeIntent({ ...evm, nonce: 8n })), fileV3.vectors[0]!.intent_hex);
});

t.test('version 3 refuses what has no single encoding or no meaning', async (t) => {
  const evm = intentVectorInputsV3()[0]!.intent as Extract<Intent, { kind: 'evm.transfer' }>;
  t.throws(() => encodeIntent({ ...evm, nonce: 2n ** 64n - 1n }), /EIP-2681/, 'nonce 2^64 - 1');
  t.throws(() => encodeIntent({ ...evm, nonce: -1n }), IntentFormatError, 'negative nonce');
  // A Bitcoin intent has no version 3.
  const btc = fromHex(fileV2.vectors[0]!.intent_hex);
  btc[INTENT_DOMAIN.length] = 3;
  t.throws(() => decodeIntent(btc), /for EVM transfers/);
  // A version 1 EVM intent read as version 3 does not parse; nor the reverse.
  const v1 = fromHex(file.vectors[1]!.intent_hex);
  v1[INTENT_DOMAIN.length] = 3;
  t.throws(() => decodeIntent(v1), IntentFormatError);
  const v3 = fromHex(fileV3.vectors[0]!.intent_hex);
  v3[INTENT_DOMAIN.length] = 1;
  t.throws(() => decodeIntent(v3), IntentFormatError);
  const future = fromHex(fileV3.vectors[0]!.intent_hex);
  future[INTENT_DOMAIN.length] = 4;
  t.throws(() => decodeIntent(future), /version 4/);
});

const fileSafe = JSON.parse(readFileSync(new URL('../../vectors/intents-v1-safe-tx.json', import.meta.url), 'utf8')) as Omit<Vectors, 'vectors'> & { vectors: (Vectors['vectors'][number] & { safe_tx_hash: string })[] };

t.test('kind 3: Safe transactions encode, decode and verify; each vector pins the digest nodes sign', async (t) => {
  const inputsSafe = intentVectorInputsSafeTx();
  t.equal(fileSafe.vectors.length, inputsSafe.length);
  t.equal(fileSafe.api_public_key_hex, file.api_public_key_hex, 'the published test key');
  for (const [i, v] of fileSafe.vectors.entries()) {
    const input = inputsSafe[i]!.intent as Extract<Intent, { kind: 'evm.safe_tx' }>;
    t.equal(toHex(encodeIntent(input)), v.intent_hex, `${v.name}: encoding is pinned`);
    const bytes = fromHex(v.intent_hex);
    t.equal(bytes[INTENT_DOMAIN.length], 1, `${v.name}: version 1`);
    t.equal(bytes[INTENT_DOMAIN.length + 1], 3, `${v.name}: kind 3`);
    const decoded = decodeIntent(bytes);
    t.same(intentToJson(decoded), v.intent, `${v.name}: decodes to its fields`);
    t.equal(toHex(safeTxHash(decoded as typeof input)), v.safe_tx_hash, `${v.name}: the SafeTx digest is pinned`);
    t.ok(verifyIntentSignature(bytes, fromHex(v.signature_hex), pub), `${v.name}: signature verifies`);
  }
  // Every field is signed: each change is other bytes (and another digest).
  const base = inputsSafe[0]!.intent as Extract<Intent, { kind: 'evm.safe_tx' }>;
  const changes: Partial<typeof base>[] = [
    { safeNonce: 1n }, { safe: new Uint8Array(20).fill(9) }, { chainId: 1n }, { to: new Uint8Array(20).fill(8) }, { data: new Uint8Array([1]) }, { value: 1n },
    { safeTxGas: 1n }, { baseGas: 1n }, { gasPrice: 1n }, { gasToken: new Uint8Array(20).fill(1) }, { refundReceiver: new Uint8Array(20).fill(1) }, { owner: new Uint8Array(20).fill(2) },
  ];
  for (const c of changes) {
    t.not(toHex(encodeIntent({ ...base, ...c })), fileSafe.vectors[0]!.intent_hex, `${Object.keys(c)[0]} is in the bytes`);
    if (!('owner' in c)) t.not(toHex(safeTxHash({ ...base, ...c })), fileSafe.vectors[0]!.safe_tx_hash, `${Object.keys(c)[0]} is in the digest`);
  }
});

t.test('kind 3 refuses what has no single encoding or no meaning', async (t) => {
  const base = intentVectorInputsSafeTx()[0]!.intent as Extract<Intent, { kind: 'evm.safe_tx' }>;
  const refused = (what: string, intent: Intent, re: RegExp) => t.throws(() => encodeIntent(intent), re, what);
  refused('operation 2', { ...base, operation: 2 }, /operation/);
  refused('chain id 0', { ...base, chainId: 0n }, /chain id/);
  refused('a short Safe address', { ...base, safe: new Uint8Array(19) }, /safe must be 20 bytes/);
  refused('a short owner', { ...base, owner: new Uint8Array(21) }, /owner must be 20 bytes/);
  refused('calldata over 64 KiB', { ...base, data: new Uint8Array(64 * 1024 + 1) }, /data exceeds/);
  refused('a Safe nonce over 256 bits', { ...base, safeNonce: 1n << 256n }, /u256/);
  refused('a bad wallet id', { ...base, walletId: 'w l' }, /wallet_id/);
  t.ok(encodeIntent({ ...base, data: new Uint8Array(64 * 1024) }), 'calldata of exactly 64 KiB');
  const good = fromHex(fileSafe.vectors[0]!.intent_hex);
  // The operation byte sits after the data: a 2 there is refused by the parser, not only the writer.
  const opAt = good.length - (8 + 2 + base.idempotencyKey.length) - (32 + 20 + 20 + 32 + 32 + 32) - 1;
  t.equal(good[opAt], 0, 'the operation byte');
  const op2 = good.slice();
  op2[opAt] = 2;
  t.throws(() => decodeIntent(op2), /operation/);
  for (const version of [2, 3]) {
    const other = good.slice();
    other[INTENT_DOMAIN.length] = version;
    t.throws(() => decodeIntent(other), IntentFormatError, `version ${version} of kind 3`);
  }
  t.throws(() => decodeIntent(new Uint8Array([...good, 0])), /trailing/);
  t.throws(() => decodeIntent(good.subarray(0, good.length - 1)), /ends inside/);
});
