// Compiles the project's Solidity with the pinned `solc` (a devDependency) and fixed settings, and writes the
// committed artifacts: the ABI, the deployment and deployed bytecode, the compiler version, the settings and
// the SHA-256 of the sources. Tests compile again and compare byte for byte, so the committed bytecode is what
// these sources give, not something to trust blindly:
// - contracts/TokenEscrow.sol → api/escrow/token-escrow-artifact.json (test/api/escrow/token-escrow-artifact.unit.ts);
// - the token contracts (contracts/tokens/, the access registry among them) and OpenZeppelin's ERC2771Forwarder, in one compilation →
//   api/tokenization/contracts/<Name>.json (test/api/tokenization/contract-artifacts.unit.ts).
// Imports resolve only into the project's contracts/ and the installed @openzeppelin/contracts.
// Run: node --import tsx contracts/compile.ts
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

export const SOURCE_PATH = join(here, 'TokenEscrow.sol');
export const ARTIFACT_PATH = join(root, 'api', 'escrow', 'token-escrow-artifact.json');
export const TOKEN_ARTIFACT_DIR = join(root, 'api', 'tokenization', 'contracts');

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

/**
 * The token contracts' settings: those of the escrow, plus two outputs that are not part of the bytecode: the
 * metadata (which names the sources each contract was built from) and the immutable references (where the
 * deployed code holds values its constructor set, which a comparison with the chain's code leaves out). The optimizer's runs stay at 200 and viaIR off:
 * every contract fits the EIP-170 limit of 24,576 deployed bytes without them (the test checks it).
 */
export const TOKEN_SETTINGS = {
  ...SETTINGS,
  outputSelection: { '*': { '*': ['abi', 'metadata', 'evm.bytecode.object', 'evm.deployedBytecode.object', 'evm.deployedBytecode.immutableReferences'] } },
} as const;

/** Each token-side contract: its name and the source unit that defines it. */
export const TOKEN_CONTRACTS = [
  { name: 'ManagedERC20', source: 'contracts/tokens/ManagedERC20.sol' },
  { name: 'ManagedERC721', source: 'contracts/tokens/ManagedERC721.sol' },
  { name: 'ManagedERC1155', source: 'contracts/tokens/ManagedERC1155.sol' },
  { name: 'ERC2771Forwarder', source: '@openzeppelin/contracts/metatx/ERC2771Forwarder.sol' },
  { name: 'AccessRegistry', source: 'contracts/tokens/AccessRegistry.sol' },
] as const;
export type TokenContractName = (typeof TOKEN_CONTRACTS)[number]['name'];

/** EIP-170: the most bytes of code a contract may deploy. */
export const MAX_DEPLOYED_BYTES = 24_576;

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

export interface ContractArtifact {
  contract: TokenContractName;
  /** The source unit that defines the contract. */
  source: string;
  compiler: string;
  settings: typeof TOKEN_SETTINGS;
  /** SHA-256 (hex) of every source unit the contract was built from, OpenZeppelin's included, by unit name. */
  sources: Record<string, string>;
  abi: unknown[];
  bytecode: `0x${string}`;
  deployed_bytecode: `0x${string}`;
  /**
   * Byte ranges of `deployed_bytecode` that hold immutables (zeros here; on chain, what the constructor set:
   * the trusted forwarder, the EIP-712 domain caches, the decimals), in order.
   */
  immutable_references: { start: number; length: number }[];
}

interface SolcContract {
  abi: unknown[];
  metadata?: string;
  evm: { bytecode: { object: string }; deployedBytecode: { object: string; immutableReferences?: Record<string, { start: number; length: number }[]> } };
}
interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, SolcContract>>;
}
type Solc = { version(): string; compile(input: string, opts: { import: (p: string) => { contents: string } | { error: string } }): string };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Reads a source unit by its name: `@openzeppelin/contracts/…` from node_modules, `contracts/…` from this repository. */
export function readSourceUnit(path: string): string {
  if (path.startsWith('@openzeppelin/contracts/')) return readFileSync(require.resolve(path), 'utf8');
  if (path.startsWith('contracts/') && !path.includes('..')) return readFileSync(join(root, path), 'utf8');
  throw new Error(`import ${path} is outside contracts/ and @openzeppelin/contracts`);
}

/** One solc run over `sources`, imports read by `read` and recorded in `loaded`. Throws on any compiler error. */
function runSolc(sources: Record<string, string>, settings: object, read = readSourceUnit, loaded: Record<string, string> = {}): SolcOutput {
  const solc = require('solc') as Solc;
  const input = { language: 'Solidity', sources: Object.fromEntries(Object.entries(sources).map(([k, content]) => [k, { content }])), settings };
  const findImport = (path: string) => {
    try {
      return { contents: (loaded[path] = read(path)) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput;
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(`${Object.keys(sources).join(', ')} do not compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  return out;
}

/** Compiles the escrow source as it is on disk; throws on any compiler error. */
export function compileTokenEscrow(source = readFileSync(SOURCE_PATH, 'utf8')): TokenEscrowArtifact {
  const solc = require('solc') as Solc;
  const c = runSolc({ 'TokenEscrow.sol': source }, SETTINGS).contracts['TokenEscrow.sol']!['TokenEscrow']!;
  return {
    contract: 'TokenEscrow', compiler: solc.version(), settings: SETTINGS,
    source_sha256: sha256(source), abi: c.abi, bytecode: `0x${c.evm.bytecode.object}`, deployed_bytecode: `0x${c.evm.deployedBytecode.object}`,
  };
}

/**
 * Compiles every token-side contract in one solc run. `edits` replaces source units by name, imported ones
 * included (a test shows an edit changes the bytecode); everything else is read from disk.
 */
export function compileTokenContracts(edits: Record<string, string> = {}): Record<TokenContractName, ContractArtifact> {
  const solc = require('solc') as Solc;
  const read = (unit: string) => edits[unit] ?? readSourceUnit(unit);
  const given = Object.fromEntries(TOKEN_CONTRACTS.map((c) => [c.source, read(c.source)]));
  const loaded: Record<string, string> = {};
  const out = runSolc(given, TOKEN_SETTINGS, read, loaded);
  const all = { ...loaded, ...given };
  const result = {} as Record<TokenContractName, ContractArtifact>;
  for (const { name, source } of TOKEN_CONTRACTS) {
    const c = out.contracts[source]![name]!;
    const used = Object.keys((JSON.parse(c.metadata!) as { sources: Record<string, unknown> }).sources).sort();
    result[name] = {
      contract: name, source, compiler: solc.version(), settings: TOKEN_SETTINGS,
      sources: Object.fromEntries(used.map((u) => [u, sha256(all[u] ?? read(u))])),
      abi: c.abi, bytecode: `0x${c.evm.bytecode.object}`, deployed_bytecode: `0x${c.evm.deployedBytecode.object}`,
      immutable_references: Object.values(c.evm.deployedBytecode.immutableReferences ?? {}).flat().map(({ start, length }) => ({ start, length })).sort((a, b) => a.start - b.start),
    };
  }
  return result;
}

/** The committed artifact of `name` (api/tokenization/contracts/<name>.json), as on disk. */
export function tokenArtifactPath(name: TokenContractName): string {
  return join(TOKEN_ARTIFACT_DIR, `${name}.json`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const a = compileTokenEscrow();
  writeFileSync(ARTIFACT_PATH, JSON.stringify(a, null, 2) + '\n');
  console.log(`TokenEscrow: ${(a.bytecode.length - 2) / 2} bytes, solc ${a.compiler}, source sha256 ${a.source_sha256}`);
  mkdirSync(TOKEN_ARTIFACT_DIR, { recursive: true });
  for (const t of Object.values(compileTokenContracts())) {
    writeFileSync(tokenArtifactPath(t.contract), JSON.stringify(t, null, 2) + '\n');
    const size = (t.deployed_bytecode.length - 2) / 2;
    console.log(`${t.contract}: ${size} deployed bytes (limit ${MAX_DEPLOYED_BYTES}), ${Object.keys(t.sources).length} sources`);
  }
}
