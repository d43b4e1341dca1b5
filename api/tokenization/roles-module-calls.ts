// The token's roles module configured by Safe operations (docs/platform/tokenization.md "Module for
// module-signature"): `raw-safe-tx` with `{roles_module: {action, …}}` instead of raw fields proposes one of
// these Safe transactions, each of them an ordinary operation the owners sign at the Safe's threshold:
// - `enable`: the Safe's own `enableModule(modifier)` (the modifier is deployed first, deterministically);
// - `assign_role` / `unassign_role`: `assignRoles(member, [role_key], [true|false])` on the modifier;
// - `allow_functions`: a MultiSendCallOnly batch of `scopeTarget(role_key, token)` and one
//   `scopeAllowFunction(role_key, token, selector, None)` per function: the role may call exactly those
//   functions of this token, sending no value and never by delegatecall;
// - `revoke_functions`: `scopeRevokeFunction(role_key, token, selector)` per function.
// Function names are the token ABI's state-changing functions; what does not fit is 422 before anything is stored.
import { getAddress, isAddress, type AbiFunction, type Address } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { tokenAbi, type OperationCall } from './token-calls.ts';
import type { TokenKind } from './chain/artifacts.ts';
import { assignRolesData, enableModuleCall, rolesModifierAddress, scopeAllowFunctionData, scopeRevokeFunctionData, scopeTargetData } from './chain/roles-module.ts';
import { multiSendTransaction } from './chain/multisend.ts';
import { infrastructureAddresses } from './chain/safe-infrastructure.ts';

export const ROLES_MODULE_ACTIONS = ['enable', 'assign_role', 'unassign_role', 'allow_functions', 'revoke_functions'] as const;
export type RolesModuleAction = (typeof ROLES_MODULE_ACTIONS)[number];

/** The operation kind each action is recorded as. */
export const ROLES_MODULE_KINDS: Record<RolesModuleAction, string> = {
  enable: 'enable_roles_module', assign_role: 'roles_assign', unassign_role: 'roles_unassign', allow_functions: 'roles_allow_functions', revoke_functions: 'roles_revoke_functions',
};

export interface RolesModuleCall { kind: string; call: OperationCall; modifier: Address; deployModifier: boolean }

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `roles_module.${field}: ${why}`);

function roleKey(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 65_535) throw invalid('role_key', 'required: an integer from 0 to 65535 (a Roles v1 role is a uint16)');
  return v;
}

/** The state-changing functions of the token's ABI named, each by a name the ABI has once. */
function functionsOf(kind: TokenKind, v: unknown): AbiFunction[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > 20) throw invalid('functions', 'required: 1 to 20 function names of the token');
  const abi = tokenAbi(kind).filter((x): x is AbiFunction => x.type === 'function');
  return v.map((name, i) => {
    const found = abi.filter((f) => f.name === name);
    if (found.length === 0) throw invalid(`functions[${i}]`, `${String(name)} is not a function of the token`);
    if (found.length > 1) throw invalid(`functions[${i}]`, `${String(name)} is overloaded in the token's ABI`);
    if (found[0]!.stateMutability === 'view' || found[0]!.stateMutability === 'pure') throw invalid(`functions[${i}]`, `${String(name)} is a view function: nothing to allow`);
    return found[0]!;
  });
}

/** The Safe transaction a roles-module action of token `token` asks for. */
export function rolesModuleCall(token: { id: string; kind: TokenKind; address: string; safe: string }, body: unknown): RolesModuleCall {
  if (typeof body !== 'object' || body === null) throw invalid('action', `one of ${ROLES_MODULE_ACTIONS.join(', ')}`);
  const b = body as Record<string, unknown>;
  const action = b.action as RolesModuleAction;
  if (!ROLES_MODULE_ACTIONS.includes(action)) throw invalid('action', `one of ${ROLES_MODULE_ACTIONS.join(', ')}`);
  const allowed: Record<RolesModuleAction, string[]> = { enable: [], assign_role: ['role_key', 'member'], unassign_role: ['role_key', 'member'], allow_functions: ['role_key', 'functions'], revoke_functions: ['role_key', 'functions'] };
  for (const k of Object.keys(b)) if (k !== 'action' && !allowed[action].includes(k)) throw invalid(k, `not a field of ${action}`);
  const safe = getAddress(token.safe);
  const target = getAddress(token.address);
  const modifier = rolesModifierAddress(token.id, safe);
  const on = (data: `0x${string}`): OperationCall => ({ to: modifier, value: 0n, data, operation: 0 });
  const kind = ROLES_MODULE_KINDS[action];
  switch (action) {
    case 'enable': {
      const c = enableModuleCall(safe, modifier);
      return { kind, call: { to: c.to, value: 0n, data: c.data, operation: 0 }, modifier, deployModifier: true };
    }
    case 'assign_role':
    case 'unassign_role': {
      const role = roleKey(b.role_key);
      if (typeof b.member !== 'string' || !isAddress(b.member, { strict: false }) || BigInt(b.member) === 0n) throw invalid('member', 'required: a non-zero EVM address (the member wallet\'s)');
      return { kind, call: on(assignRolesData(getAddress(b.member), role, action === 'assign_role')), modifier, deployModifier: false };
    }
    case 'allow_functions': {
      const role = roleKey(b.role_key);
      const fns = functionsOf(token.kind, b.functions);
      const batch = multiSendTransaction(infrastructureAddresses().multiSendCallOnly, [{ to: modifier, data: scopeTargetData(role, target) }, ...fns.map((f) => ({ to: modifier, data: scopeAllowFunctionData(role, target, f) }))]);
      return { kind, call: { ...batch, value: 0n }, modifier, deployModifier: false };
    }
    case 'revoke_functions': {
      const role = roleKey(b.role_key);
      const fns = functionsOf(token.kind, b.functions);
      if (fns.length === 1) return { kind, call: on(scopeRevokeFunctionData(role, target, fns[0]!)), modifier, deployModifier: false };
      const batch = multiSendTransaction(infrastructureAddresses().multiSendCallOnly, fns.map((f) => ({ to: modifier, data: scopeRevokeFunctionData(role, target, f) })));
      return { kind, call: { ...batch, value: 0n }, modifier, deployModifier: false };
    }
  }
}
