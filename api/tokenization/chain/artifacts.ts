// The contracts the tokenization chain layer deploys, as committed: the managed tokens and the ERC-2771
// forwarder compiled here (contracts/compile.ts, re-checked by test/api/tokenization/contract-artifacts.unit.ts)
// and the Safe 1.4.1 contracts from the audited npm release (contracts/safe-artifacts.ts, re-checked against
// the published code hashes by test/api/tokenization/safe-artifacts.unit.ts). Also how the code a chain holds
// is compared with an artifact: equal outside the bytes the constructor fills in (immutables).
import { type Abi, type Address, type Hex } from 'viem';
// Imported (not read from a path) so the build carries them into dist/ beside this module.
import erc20 from '../contracts/ManagedERC20.json' with { type: 'json' };
import erc721 from '../contracts/ManagedERC721.json' with { type: 'json' };
import erc1155 from '../contracts/ManagedERC1155.json' with { type: 'json' };
import forwarder from '../contracts/ERC2771Forwarder.json' with { type: 'json' };
import accessRegistry from '../contracts/AccessRegistry.json' with { type: 'json' };
import safe from '../contracts/Safe-1.4.1.json' with { type: 'json' };
import zodiac from '../contracts/Zodiac-Roles-1.1.0.json' with { type: 'json' };

export type TokenKind = 'erc20' | 'erc721' | 'erc1155';
export type TokenContractName = 'ManagedERC20' | 'ManagedERC721' | 'ManagedERC1155' | 'ERC2771Forwarder' | 'AccessRegistry';
export type SafeContractName = 'Safe' | 'SafeL2' | 'SafeProxyFactory' | 'SafeProxy' | 'CompatibilityFallbackHandler' | 'MultiSend' | 'MultiSendCallOnly';

export interface BuiltArtifact {
  contract: TokenContractName;
  compiler: string;
  sources: Record<string, string>;
  abi: Abi;
  bytecode: Hex;
  deployed_bytecode: Hex;
  immutable_references: { start: number; length: number }[];
}

export interface SafeArtifact { artifact: string; selfImmutable: boolean; abi: Abi; bytecode: Hex; deployed_bytecode: Hex }

const BUILT: Record<TokenContractName, unknown> = { ManagedERC20: erc20, ManagedERC721: erc721, ManagedERC1155: erc1155, ERC2771Forwarder: forwarder, AccessRegistry: accessRegistry };

export const TOKEN_CONTRACT: Record<TokenKind, TokenContractName> = { erc20: 'ManagedERC20', erc721: 'ManagedERC721', erc1155: 'ManagedERC1155' };

/** A contract compiled here (api/tokenization/contracts/<name>.json). */
export function builtArtifact(name: TokenContractName): BuiltArtifact {
  return BUILT[name] as BuiltArtifact;
}

/** A Safe 1.4.1 contract as the audited release ships it. */
export function safeArtifact(name: SafeContractName): SafeArtifact {
  return (safe as unknown as { contracts: Record<SafeContractName, SafeArtifact> }).contracts[name];
}

/** The version of the Safe contracts this layer deploys. */
export const SAFE_VERSION = (safe as { version: string }).version;

/** The ABI of every contract here, for decoding a revert whichever contract raised it (the Zodiac Roles modifier's and its Permissions library's included). */
export function allAbis(): Abi {
  const names: SafeContractName[] = ['SafeL2', 'SafeProxyFactory', 'MultiSendCallOnly'];
  const roles = [zodiac.contracts.Roles.abi, zodiac.contracts.Permissions.abi, zodiac.contracts.ModuleProxyFactory.abi].flat() as Abi;
  return [...(['ManagedERC20', 'ManagedERC721', 'ManagedERC1155', 'ERC2771Forwarder', 'AccessRegistry'] as const).flatMap((n) => builtArtifact(n).abi), ...names.flatMap((n) => safeArtifact(n).abi), ...roles];
}

const PUSH32_ZERO = '7f' + '0'.repeat(64);

/**
 * The runtime code a Safe contract has at `address`: the artifact's, except MultiSend, whose one immutable
 * (the PUSH32 of zeros in the artifact) is its own address.
 */
export function safeRuntimeCode(name: SafeContractName, address: Address): Hex {
  const a = safeArtifact(name);
  if (!a.selfImmutable) return a.deployed_bytecode;
  return a.deployed_bytecode.replace(PUSH32_ZERO, '7f' + address.slice(2).toLowerCase().padStart(64, '0')) as Hex;
}

/** Whether `code` (from eth_getCode) is the artifact's deployed code, the immutable ranges left out. */
export function codeMatches(code: Hex | undefined, artifact: { deployed_bytecode: Hex; immutable_references?: { start: number; length: number }[] }): boolean {
  if (!code || code === '0x') return false;
  const want = artifact.deployed_bytecode.toLowerCase();
  const got = code.toLowerCase();
  if (got.length !== want.length) return false;
  let at = 2;
  for (const r of artifact.immutable_references ?? []) {
    const start = 2 + r.start * 2;
    if (got.slice(at, start) !== want.slice(at, start)) return false;
    at = start + r.length * 2;
  }
  return got.slice(at) === want.slice(at);
}
