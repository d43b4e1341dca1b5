// Compiles contracts/TokenEscrow.sol with the pinned `solc` (a devDependency) and fixed settings, and
// writes api/escrow/token-escrow-artifact.json: the ABI, the deployment and deployed bytecode, the compiler version
// and the SHA-256 of the source. test/api/escrow/token-escrow-artifact.unit.ts compiles again and
// compares, so the committed bytecode is what this source gives, not something to trust blindly.
// Run: node --import tsx contracts/compile.ts
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

export const SOURCE_PATH = join(here, 'TokenEscrow.sol');
export const ARTIFACT_PATH = join(here, '..', 'api', 'escrow', 'token-escrow-artifact.json');

/**
 * The settings every compilation uses. `bytecodeHash: none` leaves the metadata hash (which covers
 * source paths and comments) out of the bytecode, so the same source gives the same bytes anywhere.
 */
export const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  metadata: { bytecodeHash: 'none' },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
} as const;

export interface TokenEscrowArtifact {
  contract: 'TokenEscrow';
  compiler: string;
  settings: typeof SETTINGS;
  source_sha256: string;
  abi: unknown[];
  /** What a deployment sends. */
  bytecode: `0x${string}`;
  /** What the chain then holds at the contract's address (eth_getCode): what anyone compares. */
  deployed_bytecode: `0x${string}`;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>;
}

/** Compiles the source as it is on disk; throws on any compiler error. */
export function compileTokenEscrow(source = readFileSync(SOURCE_PATH, 'utf8')): TokenEscrowArtifact {
  const solc = require('solc') as { version(): string; compile(input: string, opts: { import: (p: string) => { contents: string } | { error: string } }): string };
  const input = { language: 'Solidity', sources: { 'TokenEscrow.sol': { content: source } }, settings: SETTINGS };
  // Imports resolve only into the installed @openzeppelin/contracts, read from node_modules.
  const findImport = (path: string) => {
    if (!path.startsWith('@openzeppelin/contracts/')) return { error: `import ${path} is outside @openzeppelin/contracts` };
    try {
      return { contents: readFileSync(require.resolve(path), 'utf8') };
    } catch {
      return { error: `import ${path} not found` };
    }
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput;
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(`TokenEscrow.sol does not compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const c = out.contracts['TokenEscrow.sol']!['TokenEscrow']!;
  return {
    contract: 'TokenEscrow', compiler: solc.version(), settings: SETTINGS,
    source_sha256: createHash('sha256').update(source).digest('hex'), abi: c.abi, bytecode: `0x${c.evm.bytecode.object}`, deployed_bytecode: `0x${c.evm.deployedBytecode.object}`,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const a = compileTokenEscrow();
  writeFileSync(ARTIFACT_PATH, JSON.stringify(a, null, 2) + '\n');
  console.log(`TokenEscrow: ${(a.bytecode.length - 2) / 2} bytes, solc ${a.compiler}, source sha256 ${a.source_sha256}`);
}
