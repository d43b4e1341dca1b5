// A token's deployment as a recorded plan of steps, each with the address it makes known in advance, so a
// deployment stopped anywhere (a crash, a chain error) continues where it stopped and deploys nothing twice:
// 1. the deterministic-deployment proxy (present on most chains; else its published transaction);
// 2. the shared infrastructure (Safe 1.4.1 contracts, ERC2771Forwarder), CREATE2 with a zero salt;
// 3. the token's admin Safe, created by the proxy factory with a salt nonce from the token id;
// 4. the token, CREATE2 with a salt from the token id, its admin the Safe.
// The plan is plain JSON (record it before sending anything); `planProgress` reads the chain to say which
// steps are done (code at the step's address); `runDeployPlan` runs the others in order, checking each again
// right before sending it.
import { type Address, type PublicClient } from 'viem';
import { builtArtifact, TOKEN_CONTRACT } from './artifacts.ts';
import { create2Address, deployCreate2, DETERMINISTIC_DEPLOYER, DETERMINISTIC_DEPLOYER_CODE, ensureDeterministicDeployer } from './deterministic-deployer.ts';
import { create2StepState, infrastructureAddresses, infrastructureCode, infrastructureSteps, type Create2Step } from './safe-infrastructure.ts';
import { createSafe, predictSafeAddress, safeSaltNonce } from './safe-proxy.ts';
import { tokenInitCode, tokenSalt, type TokenConstructor } from './token-deployment.ts';
import type { TransactionSender } from './transaction-sender.ts';

export type PlanStep =
  | { kind: 'deterministic-deployer'; name: 'DeterministicDeployer'; address: Address }
  | ({ kind: 'create2'; role: 'infrastructure' | 'token' } & Create2Step)
  | { kind: 'safe'; name: 'Safe'; address: Address; owners: Address[]; threshold: number; saltNonce: string; singleton: 'SafeL2' | 'Safe' };

export interface DeployPlan {
  version: 1;
  tokenId: string;
  token: TokenConstructor;
  steps: PlanStep[];
}

export interface TokenDeployInput {
  tokenId: string;
  token: TokenConstructor;
  owners: Address[];
  threshold: number;
  singleton?: 'SafeL2' | 'Safe';
}

/** The plan of a token's deployment: every address in it is computed here, before anything is sent. */
export function tokenDeployPlan(input: TokenDeployInput): DeployPlan {
  const infra = infrastructureAddresses();
  const singleton = input.singleton ?? 'SafeL2';
  const saltNonce = safeSaltNonce(input.tokenId);
  const safe = predictSafeAddress({ owners: input.owners, threshold: input.threshold, saltNonce, singleton }, infra);
  const initCode = tokenInitCode(input.token, safe, infra.forwarder);
  const salt = tokenSalt(input.tokenId);
  const steps: PlanStep[] = [
    { kind: 'deterministic-deployer', name: 'DeterministicDeployer', address: DETERMINISTIC_DEPLOYER },
    ...infrastructureSteps().map((s): PlanStep => ({ kind: 'create2', role: 'infrastructure', ...s })),
    { kind: 'safe', name: 'Safe', address: safe, owners: [...input.owners], threshold: input.threshold, saltNonce: saltNonce.toString(), singleton },
    { kind: 'create2', role: 'token', name: TOKEN_CONTRACT[input.token.kind], salt, initCode, address: create2Address(salt, initCode) },
  ];
  return { version: 1, tokenId: input.tokenId, token: input.token, steps };
}

/** The token's and its Safe's addresses in a plan. */
export function planAddresses(plan: DeployPlan): { token: Address; safe: Address; forwarder: Address } {
  const last = plan.steps[plan.steps.length - 1]!;
  const safe = plan.steps.find((s) => s.kind === 'safe')!;
  return { token: last.address, safe: safe.address, forwarder: infrastructureAddresses().forwarder };
}

/** Whether `step` is done on the chain. Throws when its address holds code other than expected. */
export async function stepDone(client: PublicClient, step: PlanStep): Promise<boolean> {
  const code = await client.getCode({ address: step.address });
  const empty = !code || code === '0x';
  if (step.kind === 'deterministic-deployer') {
    if (!empty && code!.toLowerCase() !== DETERMINISTIC_DEPLOYER_CODE) throw new Error(`${step.address} holds other code than the deterministic-deployment proxy`);
    return !empty;
  }
  if (step.kind === 'safe') return !empty; // its address commits to its owners, threshold and singleton
  const expected = step.role === 'token' ? builtArtifact(step.name as 'ManagedERC20') : infrastructureCode(step);
  return (await create2StepState(client, step, expected)) === 'done';
}

export interface StepProgress { name: string; address: Address; done: boolean }

/** Reads the chain: which steps of the plan are done. */
export async function planProgress(client: PublicClient, plan: DeployPlan): Promise<StepProgress[]> {
  const out: StepProgress[] = [];
  for (const s of plan.steps) out.push({ name: s.name, address: s.address, done: await stepDone(client, s) });
  return out;
}

export interface StepOutcome { name: string; address: Address; status: 'skipped' | 'sent' }

/**
 * Runs the plan's steps that are not done, in order. `stopAfter` names a step after which to stop (what a
 * crash does; tests use it). `onStep` is told before each step is sent, so the caller records it first.
 */
export async function runDeployPlan(client: PublicClient, sender: TransactionSender, plan: DeployPlan, opts: { stopAfter?: string; onStep?: (step: PlanStep) => void | Promise<void> } = {}): Promise<StepOutcome[]> {
  const outcomes: StepOutcome[] = [];
  const infra = infrastructureAddresses();
  for (const step of plan.steps) {
    if (await stepDone(client, step)) {
      outcomes.push({ name: step.name, address: step.address, status: 'skipped' });
    } else {
      await opts.onStep?.(step);
      if (step.kind === 'deterministic-deployer') await ensureDeterministicDeployer(client, sender);
      else if (step.kind === 'safe') await createSafe(client, sender, { owners: step.owners, threshold: step.threshold, saltNonce: BigInt(step.saltNonce), singleton: step.singleton }, infra);
      else await deployCreate2(client, sender, step.salt, step.initCode);
      if (!(await stepDone(client, step))) throw new Error(`step ${step.name} did not leave its contract at ${step.address}`);
      outcomes.push({ name: step.name, address: step.address, status: 'sent' });
    }
    if (opts.stopAfter === step.name) break;
  }
  return outcomes;
}
