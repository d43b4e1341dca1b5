// The Safe contracts the chain layer deploys are the audited 1.4.1 release: the committed extract
// (api/tokenization/contracts/Safe-1.4.1.json) equals the artifacts of @safe-global/safe-contracts 1.4.1, and
// each one's deployed bytecode hashes (keccak256) to the code hash the Safe team publishes for 1.4.1 in
// @safe-global/safe-deployments (MultiSend with its one immutable, its own address, set to the canonical
// address). The typed ABIs are the artifacts'; the deterministic-deployment proxy's transaction is the
// published one; a MultiSend batch decodes to what was encoded; code comparison leaves out immutables only.
import t from 'tap';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { formatAbiItem } from 'viem/utils';
import { encodeFunctionData, getContractAddress, keccak256, parseTransaction, recoverTransactionAddress, slice, type Abi, type AbiFunction, type Address } from 'viem';
import { extractSafeArtifacts, SAFE_ARTIFACTS_PATH, SAFE_CONTRACTS } from '../../../contracts/safe-artifacts.ts';
import { builtArtifact, codeMatches, safeArtifact, safeRuntimeCode } from '../../../api/tokenization/chain/artifacts.ts';
import { MULTI_SEND_ABI, SAFE_ABI, SAFE_PROXY_FACTORY_ABI } from '../../../api/tokenization/chain/safe-abi.ts';
import { decodeMultiSend, encodeMultiSend } from '../../../api/tokenization/chain/multisend.ts';
import { DETERMINISTIC_DEPLOYER, DETERMINISTIC_DEPLOYER_CODE, DETERMINISTIC_DEPLOYER_SIGNER, DETERMINISTIC_DEPLOYER_TX } from '../../../api/tokenization/chain/deterministic-deployer.ts';
import { decodeRevert } from '../../../api/tokenization/chain/chain-failure.ts';
import { infrastructureAddresses } from '../../../api/tokenization/chain/safe-infrastructure.ts';
import { SAFE_DELEGATECALL_TARGETS } from '../../../core/chains/evm/safe-tx.ts';

const require = createRequire(import.meta.url);

t.test('the committed extract is the npm release\'s artifacts', async (t) => {
  t.same(JSON.parse(readFileSync(SAFE_ARTIFACTS_PATH, 'utf8')), extractSafeArtifacts());
  t.equal(extractSafeArtifacts().version, '1.4.1');
});

t.test('each deployed bytecode has the code hash published for Safe 1.4.1', async (t) => {
  for (const c of SAFE_CONTRACTS) {
    if (!c.deployment) continue;
    const published = (require(`@safe-global/safe-deployments/dist/assets/v1.4.1/${c.deployment}.json`) as { deployments: { canonical: { address: Address; codeHash: string } } }).deployments.canonical;
    t.equal(keccak256(safeRuntimeCode(c.name, published.address)), published.codeHash, `${c.name} (canonical ${published.address})`);
  }
  t.not(keccak256(safeArtifact('MultiSend').deployed_bytecode), keccak256(safeRuntimeCode('MultiSend', '0x38869bf66a61cF6bDB996A6aE40D5853Fd43B526')), 'MultiSend\'s code holds its own address');
});

t.test('the typed ABIs are in the audited artifacts', async (t) => {
  const has = (abi: Abi, item: AbiFunction | Abi[number]) => abi.some((a) => a.type === item.type && formatAbiItem(a as AbiFunction) === formatAbiItem(item as AbiFunction));
  for (const item of SAFE_ABI) t.ok(has(safeArtifact('SafeL2').abi, item) && has(safeArtifact('Safe').abi, item), `Safe ${formatAbiItem(item as AbiFunction)}`);
  for (const item of SAFE_PROXY_FACTORY_ABI) t.ok(has(safeArtifact('SafeProxyFactory').abi, item), `factory ${formatAbiItem(item as AbiFunction)}`);
  for (const item of MULTI_SEND_ABI) t.ok(has(safeArtifact('MultiSendCallOnly').abi, item), 'multiSend');
});

t.test('the deterministic-deployment proxy transaction is the published one', async (t) => {
  const tx = parseTransaction(DETERMINISTIC_DEPLOYER_TX);
  t.equal(tx.chainId, undefined, 'no chain id: the same on every chain');
  t.equal((await recoverTransactionAddress({ serializedTransaction: DETERMINISTIC_DEPLOYER_TX as never })).toLowerCase(), DETERMINISTIC_DEPLOYER_SIGNER);
  t.equal(getContractAddress({ from: DETERMINISTIC_DEPLOYER_SIGNER, nonce: 0n }).toLowerCase(), DETERMINISTIC_DEPLOYER);
  t.ok(tx.data!.endsWith(DETERMINISTIC_DEPLOYER_CODE.slice(2)), 'its init code ends with the runtime code checked on chain');
});

t.test('a MultiSend batch decodes to the calls encoded', async (t) => {
  const calls = [
    { to: '0x1111111111111111111111111111111111111111' as Address, data: encodeFunctionData({ abi: SAFE_ABI, functionName: 'nonce' }), value: 0n },
    { to: '0x2222222222222222222222222222222222222222' as Address, data: '0x' as const, value: 5n },
  ];
  t.same(decodeMultiSend(encodeMultiSend(calls)), calls.map((c) => ({ operation: 0, ...c })));
  t.throws(() => encodeMultiSend([]));
});

t.test('code comparison leaves out the immutable ranges and nothing else', async (t) => {
  const a = builtArtifact('ManagedERC20');
  const r = a.immutable_references[0]!;
  const at = 2 + r.start * 2;
  const withImmutable = `${a.deployed_bytecode.slice(0, at)}${'ab'.repeat(r.length)}${a.deployed_bytecode.slice(at + r.length * 2)}` as `0x${string}`;
  t.ok(codeMatches(withImmutable, a), 'a constructor-set value is accepted');
  const edited = `${a.deployed_bytecode.slice(0, 10)}00${a.deployed_bytecode.slice(12)}` as `0x${string}`;
  t.notOk(codeMatches(edited, a), 'any other byte is not');
  t.notOk(codeMatches('0x', a));
  t.equal(slice(a.deployed_bytecode, r.start, r.start + r.length), `0x${'00'.repeat(r.length)}`, 'the artifact holds zeros there');
});

t.test('reverts decode to their names, Safe codes included', async (t) => {
  const mintCap = encodeFunctionData({ abi: [{ type: 'function', name: 'MintCapExceeded', inputs: [{ name: 'minter', type: 'address' }, { name: 'requested', type: 'uint256' }, { name: 'remaining', type: 'uint256' }] }], args: ['0x1111111111111111111111111111111111111111', 5n, 2n] });
  t.match(decodeRevert(mintCap), { kind: 'reverted', errorName: 'MintCapExceeded', reason: 'MintCapExceeded(minter=0x1111111111111111111111111111111111111111, requested=5, remaining=2)' });
  const gs = encodeFunctionData({ abi: [{ type: 'function', name: 'Error', inputs: [{ name: 'message', type: 'string' }] }], args: ['GS026'] });
  t.match(decodeRevert(gs), { errorName: 'GS026', reason: /invalid owner/ });
  t.match(decodeRevert('0xdeadbeef'), { errorName: 'Unknown' });
});

t.test('the nodes let a Safe delegatecall the MultiSendCallOnly the chain layer deploys, and nothing else it deploys', async (t) => {
  const a = infrastructureAddresses();
  // Recomputed here from the committed artifact: CREATE2 through the deterministic-deployment proxy, zero salt.
  const computed = getContractAddress({ opcode: 'CREATE2', from: DETERMINISTIC_DEPLOYER, salt: new Uint8Array(32), bytecode: safeArtifact('MultiSendCallOnly').bytecode });
  t.equal(a.multiSendCallOnly, computed);
  t.ok(SAFE_DELEGATECALL_TARGETS.includes(computed.toLowerCase()), 'its address is one the nodes accept');
  for (const other of [a.multiSend, a.safe, a.safeL2, a.proxyFactory, a.fallbackHandler, a.forwarder]) t.notOk(SAFE_DELEGATECALL_TARGETS.includes(other.toLowerCase()), `not ${other}`);
});
