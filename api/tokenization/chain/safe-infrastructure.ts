// The contracts every token on a chain shares, deployed once per chain by CREATE2 through the
// deterministic-deployment proxy with a zero salt, so their addresses follow from their init code alone and
// anyone recomputes them: the Safe 1.4.1 singletons (Safe, SafeL2), SafeProxyFactory,
// CompatibilityFallbackHandler, MultiSend, MultiSendCallOnly, and OpenZeppelin's ERC2771Forwarder. Deploying
// is idempotent: a contract whose code is already at its address is skipped (after checking the code is the
// artifact's), so running it twice, or after a crash, deploys nothing twice.
import { encodeDeployData, zeroHash, type Address, type Hex, type PublicClient } from 'viem';
import { builtArtifact, codeMatches, safeArtifact, safeRuntimeCode, type SafeContractName } from './artifacts.ts';
import { create2Address, deployCreate2, ensureDeterministicDeployer } from './deterministic-deployer.ts';
import type { TransactionSender } from './transaction-sender.ts';

/** The EIP-712 domain name of the forwarder: part of its init code, so of its address. */
export const FORWARDER_NAME = 'TokenForwarder';

export type InfrastructureName = Exclude<SafeContractName, 'SafeProxy'> | 'ERC2771Forwarder';

export interface Create2Step { name: string; salt: Hex; initCode: Hex; address: Address }

export interface SafeInfrastructure {
  safe: Address;
  safeL2: Address;
  proxyFactory: Address;
  fallbackHandler: Address;
  multiSend: Address;
  multiSendCallOnly: Address;
  forwarder: Address;
}

const SAFE_ORDER = ['Safe', 'SafeL2', 'SafeProxyFactory', 'CompatibilityFallbackHandler', 'MultiSend', 'MultiSendCallOnly'] as const;

/** The infrastructure's CREATE2 steps, in deployment order. */
export function infrastructureSteps(): Create2Step[] {
  const steps: Create2Step[] = SAFE_ORDER.map((name) => {
    const initCode = safeArtifact(name).bytecode;
    return { name, salt: zeroHash, initCode, address: create2Address(zeroHash, initCode) };
  });
  const f = builtArtifact('ERC2771Forwarder');
  const initCode = encodeDeployData({ abi: f.abi, bytecode: f.bytecode, args: [FORWARDER_NAME] });
  steps.push({ name: 'ERC2771Forwarder', salt: zeroHash, initCode, address: create2Address(zeroHash, initCode) });
  return steps;
}

/** Where the infrastructure is (or will be) on any chain. */
export function infrastructureAddresses(): SafeInfrastructure {
  const a = Object.fromEntries(infrastructureSteps().map((s) => [s.name, s.address])) as Record<InfrastructureName, Address>;
  return { safe: a.Safe, safeL2: a.SafeL2, proxyFactory: a.SafeProxyFactory, fallbackHandler: a.CompatibilityFallbackHandler, multiSend: a.MultiSend, multiSendCallOnly: a.MultiSendCallOnly, forwarder: a.ERC2771Forwarder };
}

/** Whether a CREATE2 step is done: 'done' when its address holds the expected code, 'absent' when empty; throws on other code. */
export async function create2StepState(client: PublicClient, step: Create2Step, expected: Parameters<typeof codeMatches>[1]): Promise<'done' | 'absent'> {
  const code = await client.getCode({ address: step.address });
  if (!code || code === '0x') return 'absent';
  if (!codeMatches(code, expected)) throw new Error(`${step.name} at ${step.address} holds other code than its artifact`);
  return 'done';
}

/** The code an infrastructure contract must have at its address. */
export function infrastructureCode(step: Create2Step): Parameters<typeof codeMatches>[1] {
  if (step.name === 'ERC2771Forwarder') return builtArtifact('ERC2771Forwarder');
  return { deployed_bytecode: safeRuntimeCode(step.name as SafeContractName, step.address) };
}

export interface DeployInfrastructureResult { addresses: SafeInfrastructure; deployed: string[]; skipped: string[] }

/** Deploys whatever of the infrastructure is missing on the chain, in order. */
export async function deploySafeInfrastructure(client: PublicClient, sender: TransactionSender): Promise<DeployInfrastructureResult> {
  await ensureDeterministicDeployer(client, sender);
  const deployed: string[] = [];
  const skipped: string[] = [];
  for (const step of infrastructureSteps()) {
    if ((await create2StepState(client, step, infrastructureCode(step))) === 'done') {
      skipped.push(step.name);
      continue;
    }
    await deployCreate2(client, sender, step.salt, step.initCode);
    if ((await create2StepState(client, step, infrastructureCode(step))) !== 'done') throw new Error(`${step.name} did not deploy at ${step.address}`);
    deployed.push(step.name);
  }
  return { addresses: infrastructureAddresses(), deployed, skipped };
}
