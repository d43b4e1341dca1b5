// A managed token's CREATE2 deployment through the deterministic-deployment proxy: salt from the token's id,
// init code = the committed artifact's bytecode ‖ constructor arguments (the admin Safe and the forwarder among
// them), so the token's address is known, and recomputable by anyone, before it exists.
import { encodeDeployData, keccak256, stringToBytes, type Address, type Hex } from 'viem';
import { builtArtifact, TOKEN_CONTRACT, type TokenKind } from './artifacts.ts';
import { create2Address } from './deterministic-deployer.ts';

export type TokenConstructor =
  | { kind: 'erc20'; name: string; symbol: string; decimals: number }
  | { kind: 'erc721'; name: string; symbol: string; baseURI: string }
  | { kind: 'erc1155'; uri: string };

/** The CREATE2 salt of token `tokenId`: keccak256 of `custody/token/v1:` ‖ the id. */
export function tokenSalt(tokenId: string): Hex {
  return keccak256(stringToBytes(`custody/token/v1:${tokenId}`));
}

/** The init code: bytecode ‖ ABI-encoded constructor arguments. */
export function tokenInitCode(c: TokenConstructor, admin: Address, forwarder: Address): Hex {
  const { abi, bytecode } = builtArtifact(TOKEN_CONTRACT[c.kind]);
  const args = c.kind === 'erc20' ? [c.name, c.symbol, c.decimals, admin, forwarder] : c.kind === 'erc721' ? [c.name, c.symbol, c.baseURI, admin, forwarder] : [c.uri, admin, forwarder];
  return encodeDeployData({ abi, bytecode, args });
}

/** Where token `tokenId` is deployed with these arguments. */
export function tokenAddress(tokenId: string, c: TokenConstructor, admin: Address, forwarder: Address): Address {
  return create2Address(tokenSalt(tokenId), tokenInitCode(c, admin, forwarder));
}

export type { TokenKind };
