// The tokenization chain layer on a real chain (docs/platform/tokenization.md): on one anvil, a resumable
// deploy plan stopped after the Safe proxy factory continues without deploying anything twice, the shared
// Safe 1.4.1 infrastructure deploys once (a second run is a no-op), a 2-of-3 Safe owned by three EOAs (owners
// sign plain secp256k1 ECDSA, as threshold vaults do) administers an ERC-20, an ERC-721 and an ERC-1155, and
// every privileged action goes through a Safe transaction: roles, mint policy, pause, access list, treasury,
// recovery, deprecation; a holder's gasless transfer goes through the ERC-2771 forwarder and its replay is
// refused. Refusals name their custom error, decoded, distinct from an engine error. The SafeTx hash and
// signature packing are checked against @safe-global/protocol-kit and the Safe's own getTransactionHash.
import t from 'tap';
import { createRequire } from 'node:module';
import { concat, createWalletClient, encodeFunctionData, getAddress, http, keccak256, parseEventLogs, type Abi, type Address, type Hex, type PublicClient, slice, toFunctionSelector, zeroAddress } from 'viem';
import { foundry } from 'viem/chains';
import { buildSignatureBytes, calculateSafeTransactionHash, EthSafeSignature } from '@safe-global/protocol-kit';
import { anvilAccount, startAnvil } from '../../chains/anvil.ts';
import { builtArtifact, codeMatches, safeArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { ChainStepError, failureOf } from '../../../api/tokenization/chain/chain-failure.ts';
import { DETERMINISTIC_DEPLOYER, DETERMINISTIC_DEPLOYER_CODE } from '../../../api/tokenization/chain/deterministic-deployer.ts';
import { planAddresses, planProgress, runDeployPlan, tokenDeployPlan, type DeployPlan } from '../../../api/tokenization/chain/deploy-plan.ts';
import { multiSendTransaction, type BatchCall } from '../../../api/tokenization/chain/multisend.ts';
import { SAFE_ABI } from '../../../api/tokenization/chain/safe-abi.ts';
import { deploySafeInfrastructure, infrastructureAddresses, FORWARDER_NAME } from '../../../api/tokenization/chain/safe-infrastructure.ts';
import { executeSafeTransaction, packSafeSignatures, readSafeNonce, safeTransaction, safeTxHash, safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { walletSender } from '../../../api/tokenization/chain/transaction-sender.ts';
import { tokenSalt } from '../../../api/tokenization/chain/token-deployment.ts';

// The anvil is started, and stopped, by a test of its own, not at the top level: the file shares its
// process with others (test/support/units.ts).
t.test('the token contracts and Safes on one anvil', async (t) => {
  t.setTimeout(300_000);
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const client = anvil.publicClient as PublicClient;
  const [relayer, ownerA, ownerB, ownerC, minter, holder, other, lost, heir, operator] = Array.from({ length: 10 }, (_, i) => anvilAccount(i));
  const wallet = (a: ReturnType<typeof anvilAccount>) => createWalletClient({ chain: foundry, transport: http(anvil.url), account: a });
  const sender = walletSender(wallet(relayer!));
  const owners = [ownerA!, ownerB!, ownerC!].map((a) => a.address);
  const infra = infrastructureAddresses();
  const chainId = 31337;
  const UNIT = 10n ** 18n;
  const abi20 = builtArtifact('ManagedERC20').abi;
  const abi721 = builtArtifact('ManagedERC721').abi;
  const abi1155 = builtArtifact('ManagedERC1155').abi;
  const read = (address: Address, abi: Abi, functionName: string, args: unknown[] = []) => client.readContract({ address, abi, functionName, args });
  const call = (to: Address, abi: Abi, functionName: string, args: unknown[]): BatchCall => ({ to, data: encodeFunctionData({ abi, functionName, args }) });
  const role = (name: string) => keccak256(new TextEncoder().encode(name));

  /** Sends `fn(args)` from `who` to `to` and waits; throws ChainStepError-classified failures. */
  async function send(who: ReturnType<typeof anvilAccount>, to: Address, abi: Abi, functionName: string, args: unknown[]) {
    const hash = await wallet(who).writeContract({ address: to, abi, functionName, args, chain: foundry, account: who });
    const r = await client.waitForTransactionReceipt({ hash });
    if (r.status !== 'success') throw new Error(`${functionName} reverted`);
    return r;
  }
  /** The decoded custom error `fn(args)` from `who` reverts with (simulated). */
  async function refusal(who: Address, to: Address, abi: Abi, functionName: string, args: unknown[]): Promise<string> {
    try {
      await client.simulateContract({ address: to, abi, functionName, args, account: who });
    } catch (err) {
      const f = failureOf(err);
      return f.kind === 'reverted' ? f.errorName : `engine: ${f.message}`;
    }
    return 'no revert';
  }

  /** Builds a Safe transaction of `calls` (a MultiSendCallOnly batch when several), signed by A and B. */
  async function signed(safe: Address, calls: BatchCall[], signers = [ownerA!, ownerB!]) {
    const nonce = await readSafeNonce(client, safe);
    const tx: SafeTransaction = calls.length === 1 ? safeTransaction({ ...calls[0]!, nonce }) : safeTransaction({ ...multiSendTransaction(infra.multiSendCallOnly, calls), nonce });
    const hash = safeTxHash(safe, chainId, tx);
    const signatures = await Promise.all(signers.map(async (s) => ({ owner: s.address, signature: await s.signTypedData(safeTxTypedData(safe, chainId, tx)) })));
    return { tx, hash, signatures, packed: await packSafeSignatures(hash, signatures) };
  }
  async function viaSafe(safe: Address, calls: BatchCall[]) {
    const s = await signed(safe, calls);
    return executeSafeTransaction(client, sender, safe, s.tx, s.packed);
  }
  async function refusedViaSafe(safe: Address, calls: BatchCall[]): Promise<ChainStepError> {
    const s = await signed(safe, calls);
    const before = await readSafeNonce(client, safe);
    try {
      await executeSafeTransaction(client, sender, safe, s.tx, s.packed);
    } catch (err) {
      if (!(err instanceof ChainStepError)) throw err;
      if ((await readSafeNonce(client, safe)) !== before) throw new Error('a refused Safe transaction used its nonce');
      return err;
    }
    throw new Error('the Safe transaction went through');
  }

  const plan20: DeployPlan = tokenDeployPlan({ tokenId: 'tok_erc20', token: { kind: 'erc20', name: 'Fund Share', symbol: 'FSH', decimals: 18 }, owners, threshold: 2 });
  const { token: erc20, safe: safe20 } = planAddresses(plan20);

  t.test('the deterministic-deployment proxy: anvil\'s is the published one; where absent, its published transaction deploys it', async (t) => {
    t.equal(await client.getCode({ address: DETERMINISTIC_DEPLOYER }), DETERMINISTIC_DEPLOYER_CODE);
    await anvil.testClient.setCode({ address: DETERMINISTIC_DEPLOYER, bytecode: '0x' });
    t.same(await runDeployPlan(client, sender, plan20, { stopAfter: 'DeterministicDeployer' }), [{ name: 'DeterministicDeployer', address: DETERMINISTIC_DEPLOYER, status: 'sent' }]);
    t.equal(await client.getCode({ address: DETERMINISTIC_DEPLOYER }), DETERMINISTIC_DEPLOYER_CODE, 'deployed at the same address by the one-time signer');
  });

  t.test('a deploy plan stopped after the proxy factory continues where it stopped, deploying nothing twice', async (t) => {
    t.equal(await client.getCode({ address: erc20 }), undefined, 'nothing at the token\'s address before');
    const first = await runDeployPlan(client, sender, plan20, { stopAfter: 'SafeProxyFactory' });
    t.same(first.map((s) => [s.name, s.status]), [['DeterministicDeployer', 'skipped'], ['Safe', 'sent'], ['SafeL2', 'sent'], ['SafeProxyFactory', 'sent']]);
    const progress = await planProgress(client, plan20);
    t.same(progress.map((p) => p.done), [true, true, true, true, false, false, false, false, false, false], 'the chain says which steps are done');
    const sentBefore = await client.getTransactionCount({ address: relayer!.address });
    const recorded: string[] = [];
    const resumed = await runDeployPlan(client, sender, JSON.parse(JSON.stringify(plan20)) as DeployPlan, { onStep: (s) => void recorded.push(s.name) });
    t.same(resumed.filter((s) => s.status === 'skipped').map((s) => s.name), ['DeterministicDeployer', 'Safe', 'SafeL2', 'SafeProxyFactory'], 'the done steps are skipped');
    t.same(recorded, ['CompatibilityFallbackHandler', 'MultiSend', 'MultiSendCallOnly', 'ERC2771Forwarder', 'Safe', 'ManagedERC20'], 'the rest are sent, each told to the caller first');
    t.equal(await client.getTransactionCount({ address: relayer!.address }) - sentBefore, 6, 'one transaction per remaining step');
    t.ok((await planProgress(client, plan20)).every((p) => p.done));
    t.ok(codeMatches(await client.getCode({ address: erc20 }), builtArtifact('ManagedERC20')), 'the token\'s code is the artifact\'s (immutables aside)');
    const initCode = (plan20.steps.at(-1) as { initCode: Hex }).initCode;
    const preimage = concat(['0xff', DETERMINISTIC_DEPLOYER, tokenSalt('tok_erc20'), keccak256(initCode)]);
    t.equal(erc20, getAddress(slice(keccak256(preimage), 12)), 'its address is keccak256(0xff ‖ proxy ‖ token salt ‖ keccak256(init code))[12:], per EIP-1014');
    const again = await runDeployPlan(client, sender, plan20);
    t.ok(again.every((s) => s.status === 'skipped'), 'a third run sends nothing');
  });

  t.test('deploying the Safe infrastructure again is a no-op', async (t) => {
    const nonce = await client.getTransactionCount({ address: relayer!.address });
    const r = await deploySafeInfrastructure(client, sender);
    t.same(r.deployed, []);
    t.same(r.skipped, ['Safe', 'SafeL2', 'SafeProxyFactory', 'CompatibilityFallbackHandler', 'MultiSend', 'MultiSendCallOnly', 'ERC2771Forwarder']);
    t.equal(await client.getTransactionCount({ address: relayer!.address }), nonce, 'nothing sent');
    t.same(r.addresses, infra);
    t.equal(await read(infra.proxyFactory, safeArtifact('SafeProxyFactory').abi, 'proxyCreationCode'), safeArtifact('SafeProxy').bytecode, 'the factory creates the proxy the addresses are predicted with');
  });

  t.test('the 2-of-3 Safe administers the ERC-20', async (t) => {
    t.same((await read(safe20, SAFE_ABI, 'getOwners')) as Address[], owners);
    t.equal(await read(safe20, SAFE_ABI, 'getThreshold'), 2n);
    t.equal(await read(safe20, SAFE_ABI, 'VERSION'), '1.4.1');
    t.equal(await read(erc20, abi20, 'hasRole', ['0x' + '00'.repeat(32), safe20]), true, 'the Safe is the token\'s admin');
    t.equal(await read(erc20, abi20, 'hasRole', ['0x' + '00'.repeat(32), relayer!.address]), false, 'the account that sent the deployment is not');
    t.equal(await read(erc20, abi20, 'trustedForwarder'), infra.forwarder);
  });

  t.test('a SafeTx hash and owner signatures agree with protocol-kit and the Safe itself', async (t) => {
    const s = await signed(safe20, [call(erc20, abi20, 'grantRole', [role('MINTER_ROLE'), minter!.address])]);
    const kitTx = { to: s.tx.to, value: s.tx.value.toString(), data: s.tx.data, operation: s.tx.operation, safeTxGas: '0', baseGas: '0', gasPrice: '0', gasToken: s.tx.gasToken, refundReceiver: s.tx.refundReceiver, nonce: Number(s.tx.nonce) };
    t.equal(calculateSafeTransactionHash(safe20, kitTx, '1.4.1', BigInt(chainId)), s.hash, 'protocol-kit computes the same SafeTx hash');
    t.equal(await read(safe20, SAFE_ABI, 'getTransactionHash', [s.tx.to, s.tx.value, s.tx.data, s.tx.operation, 0n, 0n, 0n, s.tx.gasToken, s.tx.refundReceiver, s.tx.nonce]), s.hash, 'so does the Safe contract');
    const kitSigs = s.signatures.map((x) => new EthSafeSignature(x.owner, x.signature));
    t.equal(buildSignatureBytes(kitSigs).toLowerCase(), s.packed.toLowerCase(), 'packed as protocol-kit packs them (sorted by owner)');
    const reversed = await packSafeSignatures(s.hash, [...s.signatures].reverse());
    t.equal(reversed, s.packed, 'the order given does not matter');
    await client.readContract({ address: safe20, abi: SAFE_ABI, functionName: 'checkSignatures', args: [s.hash, '0x', s.packed] });
    t.pass('the Safe accepts them (checkSignatures)');
    await t.rejects(packSafeSignatures(s.hash, [{ owner: ownerC!.address, signature: s.signatures[0]!.signature }]), /is by/, 'a signature put under another owner is refused before sending');
    const oneSig = await packSafeSignatures(s.hash, s.signatures.slice(0, 1));
    const e = await executeSafeTransaction(client, sender, safe20, s.tx, oneSig).catch((err: unknown) => err);
    t.ok(e instanceof ChainStepError && e.failure.kind === 'reverted' && e.failure.errorName === 'GS020', 'one signature of two: the Safe refuses (GS020, signatures too short), decoded');
    await executeSafeTransaction(client, sender, safe20, s.tx, s.packed);
    t.equal(await read(erc20, abi20, 'hasRole', [role('MINTER_ROLE'), minter!.address]), true, 'executed: MINTER_ROLE granted');
    const replay = await executeSafeTransaction(client, sender, safe20, s.tx, s.packed).catch((err: unknown) => err);
    t.ok(replay instanceof ChainStepError && replay.failure.kind === 'reverted' && replay.failure.errorName === 'NonceMismatch', 'the same Safe transaction cannot run twice');
  });

  t.test('mint policy: within the cap, then refused over it, the reason decoded', async (t) => {
    const day = 86_400n;
    await viaSafe(safe20, [
      call(erc20, abi20, 'setMintPolicy', [minter!.address, 1000n * UNIT, day]),
      call(erc20, abi20, 'grantRole', [role('MINTER_ROLE'), safe20]),
      call(erc20, abi20, 'setMintPolicy', [safe20, 100n * UNIT, day]),
    ]);
    t.same(await read(erc20, abi20, 'mintPolicy', [minter!.address]), [1000n * UNIT, day, 0n, 1000n * UNIT]);
    t.equal(await refusal(relayer!.address, erc20, abi20, 'mint', [holder!.address, 1n]), 'AccessControlUnauthorizedAccount', 'no MINTER_ROLE: refused');
    await send(minter!, erc20, abi20, 'mint', [holder!.address, 600n * UNIT]);
    t.equal(await read(erc20, abi20, 'balanceOf', [holder!.address]), 600n * UNIT);
    t.same(await read(erc20, abi20, 'mintPolicy', [minter!.address]), [1000n * UNIT, day, 600n * UNIT, 400n * UNIT]);
    t.equal(await refusal(minter!.address, erc20, abi20, 'mint', [holder!.address, 500n * UNIT]), 'MintCapExceeded', 'over the cap: refused');
    await viaSafe(safe20, [call(erc20, abi20, 'mint', [safe20, 60n * UNIT])]);
    const e = await refusedViaSafe(safe20, [call(erc20, abi20, 'mint', [safe20, 50n * UNIT])]);
    t.equal(e.failure.kind, 'reverted', 'a revert, not an engine error');
    t.match(e.failure, { errorName: 'MintCapExceeded', args: [safe20, 50n * UNIT, 40n * UNIT] }, 'through the Safe: the token\'s reason, not a bare GS013');
    t.match(e.message, /MintCapExceeded\(minter=0x[0-9a-fA-F]{40}, requested=50000000000000000000, remaining=40000000000000000000\)/);
    await client.request({ method: 'evm_increaseTime' as never, params: [Number(day)] as never });
    await client.request({ method: 'evm_mine' as never, params: [] as never });
    t.same(await read(erc20, abi20, 'mintPolicy', [minter!.address]), [1000n * UNIT, day, 0n, 1000n * UNIT], 'a new period: the count starts again');
    t.equal(await read(erc20, abi20, 'totalSupply'), 660n * UNIT);
  });

  t.test('pause refuses transfers until unpause; an engine error is told apart', async (t) => {
    await viaSafe(safe20, [call(erc20, abi20, 'pause', [])]);
    t.equal(await read(erc20, abi20, 'paused'), true);
    t.equal(await refusal(holder!.address, erc20, abi20, 'transfer', [other!.address, UNIT]), 'EnforcedPause');
    await viaSafe(safe20, [call(erc20, abi20, 'unpause', [])]);
    await send(holder!, erc20, abi20, 'transfer', [other!.address, UNIT]);
    t.equal(await read(erc20, abi20, 'balanceOf', [other!.address]), UNIT);
    const down = createWalletClient({ chain: foundry, transport: http('http://127.0.0.1:9', { retryCount: 0 }), account: holder! });
    const err = await down.writeContract({ address: erc20, abi: abi20, functionName: 'transfer', args: [other!.address, UNIT], chain: foundry, account: holder! }).catch((e: unknown) => e);
    t.equal(failureOf(err).kind, 'engine', 'an unreachable RPC is an engine error, not a revert');
  });

  t.test('the access list: a denied account can neither receive nor send', async (t) => {
    await viaSafe(safe20, [call(erc20, abi20, 'setAccess', [[other!.address], 2])]);
    t.equal(await read(erc20, abi20, 'accessOf', [other!.address]), 2);
    t.equal(await refusal(holder!.address, erc20, abi20, 'transfer', [other!.address, UNIT]), 'AccountDenied');
    t.equal(await refusal(other!.address, erc20, abi20, 'transfer', [holder!.address, UNIT]), 'AccountDenied');
    await viaSafe(safe20, [call(erc20, abi20, 'setAllowlistOnly', [true]), call(erc20, abi20, 'setAccess', [[other!.address], 0]), call(erc20, abi20, 'setAccess', [[holder!.address], 1])]);
    t.equal(await refusal(holder!.address, erc20, abi20, 'transfer', [other!.address, UNIT]), 'AccountNotAllowed', 'allowlist-only: an unlisted recipient is refused');
    await viaSafe(safe20, [call(erc20, abi20, 'setAllowlistOnly', [false])]);
    await send(holder!, erc20, abi20, 'transfer', [other!.address, UNIT]);
  });

  t.test('the treasury switch: while on, one side of every movement is the treasury', async (t) => {
    await viaSafe(safe20, [call(erc20, abi20, 'enableTreasury', [safe20])]);
    t.same(await read(erc20, abi20, 'treasuryStatus'), [safe20, true]);
    t.equal(await refusal(holder!.address, erc20, abi20, 'transfer', [other!.address, UNIT]), 'TreasuryOnly', 'holder to holder: refused');
    await send(holder!, erc20, abi20, 'transfer', [safe20, UNIT]);
    t.equal(await read(erc20, abi20, 'balanceOf', [safe20]), 61n * UNIT, 'to the treasury: allowed');
    await viaSafe(safe20, [call(erc20, abi20, 'transfer', [other!.address, UNIT])]);
    t.equal(await read(erc20, abi20, 'balanceOf', [other!.address]), 3n * UNIT, 'from the treasury: allowed');
    await viaSafe(safe20, [call(erc20, abi20, 'disableTreasury', [])]);
    t.same(await read(erc20, abi20, 'treasuryStatus'), [safe20, false]);
  });

  t.test('recovery moves a lost address\'s whole balance, even while paused', async (t) => {
    await send(holder!, erc20, abi20, 'transfer', [lost!.address, 25n * UNIT]);
    const r = await viaSafe(safe20, [call(erc20, abi20, 'pause', []), call(erc20, abi20, 'recover', [lost!.address, heir!.address]), call(erc20, abi20, 'unpause', [])]);
    t.equal(await read(erc20, abi20, 'balanceOf', [lost!.address]), 0n);
    t.equal(await read(erc20, abi20, 'balanceOf', [heir!.address]), 25n * UNIT);
    const [ev] = parseEventLogs({ abi: abi20, logs: r.receipt.logs, eventName: 'Recovered' }) as unknown as { args: { lost: Address; to: Address; operator: Address; ids: bigint[]; amounts: bigint[] } }[];
    t.same(ev!.args, { lost: lost!.address, to: heir!.address, operator: safe20, ids: [0n], amounts: [25n * UNIT] }, 'Recovered names both addresses, the operator and the amount');
    t.equal(await refusal(holder!.address, erc20, abi20, 'recover', [lost!.address, heir!.address]), 'AccessControlUnauthorizedAccount', 'only RECOVERY_ROLE');
    const e = await refusedViaSafe(safe20, [call(erc20, abi20, 'recover', [lost!.address, heir!.address])]);
    t.equal(e.failure.kind === 'reverted' && e.failure.errorName, 'NothingToRecover');
  });

  t.test('a gasless transfer through the ERC-2771 forwarder; the same request replayed is refused on chain', async (t) => {
    const fwdAbi = builtArtifact('ERC2771Forwarder').abi;
    const nonce = (await read(infra.forwarder, fwdAbi, 'nonces', [holder!.address])) as bigint;
    const deadline = Number((await client.getBlock()).timestamp) + 3600;
    const data = encodeFunctionData({ abi: abi20, functionName: 'transfer', args: [operator!.address, 7n * UNIT] });
    const message = { from: holder!.address, to: erc20, value: 0n, gas: 200_000n, nonce, deadline, data };
    const signature = await holder!.signTypedData({
      domain: { name: FORWARDER_NAME, version: '1', chainId, verifyingContract: infra.forwarder },
      types: { ForwardRequest: [{ name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'gas', type: 'uint256' }, { name: 'nonce', type: 'uint256' }, { name: 'deadline', type: 'uint48' }, { name: 'data', type: 'bytes' }] },
      primaryType: 'ForwardRequest', message,
    });
    const request = { from: holder!.address, to: erc20, value: 0n, gas: 200_000n, deadline, data, signature };
    t.equal(await read(infra.forwarder, fwdAbi, 'verify', [request]), true, 'the forwarder verifies the holder\'s signature');
    const eth = await client.getBalance({ address: holder!.address });
    const before = (await read(erc20, abi20, 'balanceOf', [holder!.address])) as bigint;
    await send(relayer!, infra.forwarder, fwdAbi, 'execute', [request]);
    t.equal(await read(erc20, abi20, 'balanceOf', [operator!.address]), 7n * UNIT, 'moved');
    t.equal(await read(erc20, abi20, 'balanceOf', [holder!.address]), before - 7n * UNIT, 'from the holder, the signer, not the relayer');
    t.equal(await client.getBalance({ address: holder!.address }), eth, 'the holder paid no gas');
    t.equal(await refusal(relayer!.address, infra.forwarder, fwdAbi, 'execute', [request]), 'ERC2771ForwarderInvalidSigner', 'replayed: refused (its nonce is used)');
    t.equal(await refusal(relayer!.address, infra.forwarder, fwdAbi, 'execute', [{ ...request, data: encodeFunctionData({ abi: abi20, functionName: 'transfer', args: [operator!.address, 8n * UNIT] }) }]), 'ERC2771ForwarderInvalidSigner', 'altered: refused');
  });

  t.test('the access registry is consulted on every movement, and refuses as it says', async (t) => {
    // A registry that refuses amounts over a limit with its own error, and answers wrong for an amount of 13.
    const source = `pragma solidity 0.8.37;
    contract LimitRegistry {
      uint256 public calls;
      error OverLimit(uint256 amount);
      function checkTransfer(address, address, address, uint256, uint256 amount) external returns (bytes4) {
        calls++;
        if (amount > 100 ether) revert OverLimit(amount);
        return amount == 13 ? bytes4(0) : this.checkTransfer.selector;
      }
    }`;
    const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
    const out = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources: { 'r.sol': { content: source } }, settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } } }))) as { contracts: { 'r.sol': { LimitRegistry: { abi: Abi; evm: { bytecode: { object: string } } } } } };
    const reg = out.contracts['r.sol'].LimitRegistry;
    const deployed = await client.waitForTransactionReceipt({ hash: await wallet(relayer!).deployContract({ abi: reg.abi, bytecode: `0x${reg.evm.bytecode.object}`, chain: foundry, account: relayer! }) });
    const registry = getAddress(deployed.contractAddress!);
    await viaSafe(safe20, [call(erc20, abi20, 'setAccessRegistry', [registry])]);
    t.equal(await read(erc20, abi20, 'accessRegistry'), registry);
    await send(holder!, erc20, abi20, 'transfer', [other!.address, UNIT]);
    t.equal(await read(registry, reg.abi, 'calls'), 1n, 'consulted on a transfer');
    t.equal(await refusal(holder!.address, erc20, abi20, 'transfer', [other!.address, 13n]), 'AccessRegistryRefused', 'a wrong answer: refused');
    try {
      await client.simulateContract({ address: erc20, abi: abi20, functionName: 'transfer', args: [other!.address, 101n * UNIT], account: holder!.address });
      t.fail('went through');
    } catch (err) {
      const f = failureOf(err);
      t.ok(f.kind === 'reverted' && f.data?.startsWith(toFunctionSelector('OverLimit(uint256)')), 'the registry\'s own revert reaches the caller');
    }
    await viaSafe(safe20, [call(erc20, abi20, 'setAccessRegistry', [zeroAddress])]);
    await send(holder!, erc20, abi20, 'transfer', [other!.address, 13n]);
    t.equal(await read(registry, reg.abi, 'calls'), 1n, 'disabled: no longer consulted');
  });

  t.test('deprecation refuses every movement and names the successor', async (t) => {
    const successor = other!.address;
    await viaSafe(safe20, [call(erc20, abi20, 'deprecate', [successor])]);
    t.equal(await read(erc20, abi20, 'successor'), successor);
    t.equal(await refusal(holder!.address, erc20, abi20, 'transfer', [heir!.address, UNIT]), 'TokenDeprecated');
    t.equal(await refusal(minter!.address, erc20, abi20, 'mint', [heir!.address, UNIT]), 'TokenDeprecated');
    const e = await refusedViaSafe(safe20, [call(erc20, abi20, 'deprecate', [heir!.address])]);
    t.match(e.failure, { errorName: 'TokenDeprecated', args: [successor] }, 'once only');
  });

  t.test('ERC-721 and ERC-1155: minted by the Safe under a policy, moved by an approved operator', async (t) => {
    const plan721 = tokenDeployPlan({ tokenId: 'tok_erc721', token: { kind: 'erc721', name: 'Deeds', symbol: 'DEED', baseURI: 'https://example.test/deeds/' }, owners, threshold: 2 });
    const plan1155 = tokenDeployPlan({ tokenId: 'tok_erc1155', token: { kind: 'erc1155', uri: 'https://example.test/{id}.json' }, owners, threshold: 2 });
    for (const p of [plan721, plan1155]) {
      const out = await runDeployPlan(client, sender, p);
      t.same(out.filter((s) => s.status === 'sent').map((s) => s.name), ['Safe', p.steps.at(-1)!.name], 'only its Safe and itself are new');
    }
    const { token: nft, safe: safe721 } = planAddresses(plan721);
    const { token: multi, safe: safe1155 } = planAddresses(plan1155);
    t.not(safe721, safe1155, 'one Safe per token');

    await viaSafe(safe721, [call(nft, abi721, 'grantRole', [role('MINTER_ROLE'), safe721]), call(nft, abi721, 'setMintPolicy', [safe721, 2n, 86_400n]), call(nft, abi721, 'mint', [holder!.address, 1n]), call(nft, abi721, 'mint', [holder!.address, 2n])]);
    t.equal(await read(nft, abi721, 'ownerOf', [1n]), holder!.address);
    t.equal(await read(nft, abi721, 'tokenURI', [1n]), 'https://example.test/deeds/1');
    t.match((await refusedViaSafe(safe721, [call(nft, abi721, 'mint', [holder!.address, 3n])])).failure, { errorName: 'MintCapExceeded' }, 'a third in the period: refused');
    await send(holder!, nft, abi721, 'setApprovalForAll', [operator!.address, true]);
    await send(operator!, nft, abi721, 'transferFrom', [holder!.address, heir!.address, 1n]);
    t.equal(await read(nft, abi721, 'ownerOf', [1n]), heir!.address, 'the operator moved it');
    t.equal(await refusal(other!.address, nft, abi721, 'transferFrom', [holder!.address, other!.address, 2n]), 'ERC721InsufficientApproval', 'no approval: refused');
    await viaSafe(safe721, [call(nft, abi721, 'recover', [heir!.address, lost!.address, [1n]])]);
    t.equal(await read(nft, abi721, 'ownerOf', [1n]), lost!.address, 'recovered by id');

    await viaSafe(safe1155, [call(multi, abi1155, 'grantRole', [role('MINTER_ROLE'), safe1155]), call(multi, abi1155, 'setMintPolicy', [safe1155, 1000n, 86_400n]), call(multi, abi1155, 'mint', [holder!.address, 7n, 100n, '0x'])]);
    t.equal(await read(multi, abi1155, 'balanceOf', [holder!.address, 7n]), 100n);
    await send(holder!, multi, abi1155, 'setApprovalForAll', [operator!.address, true]);
    await send(operator!, multi, abi1155, 'safeTransferFrom', [holder!.address, heir!.address, 7n, 40n, '0x']);
    t.equal(await read(multi, abi1155, 'balanceOf', [heir!.address, 7n]), 40n, 'the operator moved 40');
    t.equal(await read(multi, abi1155, 'balanceOf', [holder!.address, 7n]), 60n);
    await viaSafe(safe1155, [call(multi, abi1155, 'pause', [])]);
    t.equal(await refusal(operator!.address, multi, abi1155, 'safeTransferFrom', [holder!.address, heir!.address, 7n, 1n, '0x']), 'EnforcedPause');
    t.equal(await read(multi, abi1155, 'uri', [7n]), 'https://example.test/{id}.json');
  });

  t.test('one account\'s sends go out in order: concurrent sends through two senders of one account take distinct nonces', async (t) => {
    // Two senders over one account, as two chains' or two services' TokenChain objects would be: the order is
    // the account's, not the object's. Sent at once, every one is mined.
    const again = walletSender(wallet(relayer!));
    const before = await client.getTransactionCount({ address: relayer!.address, blockTag: 'pending' });
    const hashes = await Promise.all([sender, again, sender, again, sender, again].map((s, i) => s.send({ to: heir!.address, data: '0x', value: BigInt(i + 1) })));
    const receipts = await Promise.all(hashes.map((hash) => client.waitForTransactionReceipt({ hash })));
    t.same(receipts.map((r) => r.status), Array(6).fill('success'));
    const nonces = await Promise.all(hashes.map(async (hash) => (await client.getTransaction({ hash })).nonce));
    t.same([...nonces].sort((a, b) => a - b), Array.from({ length: 6 }, (_, i) => before + i), 'six consecutive nonces, none used twice');
    // A refused send does not stop the ones queued after it.
    const refused = sender.send({ to: heir!.address, data: '0x', value: 10n ** 30n });
    const next = sender.send({ to: heir!.address, data: '0x', value: 1n });
    await t.rejects(refused);
    t.equal((await client.waitForTransactionReceipt({ hash: await next })).status, 'success');
  });
});
