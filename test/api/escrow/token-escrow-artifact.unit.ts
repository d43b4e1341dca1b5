// The committed escrow artifact is what the source compiles to: the pinned solc, with the fixed settings,
// gives the same bytecode and ABI from contracts/TokenEscrow.sol, and the artifact names the source's
// SHA-256. The typed ABI the API encodes with is the artifact's.
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { compileTokenEscrow, SOURCE_PATH } from '../../../contracts/compile.ts';
import { TOKEN_ESCROW_ABI, tokenEscrowArtifact } from '../../../api/escrow/token-escrow.ts';

const require = createRequire(import.meta.url);

t.test('recompiling the source gives the committed bytecode and ABI', async (t) => {
  const committed = tokenEscrowArtifact();
  const fresh = compileTokenEscrow();
  t.equal(fresh.bytecode, committed.bytecode, 'same deployment bytecode');
  t.equal(fresh.deployed_bytecode, committed.deployed_bytecode, 'same deployed (runtime) bytecode');
  t.same(fresh.abi, committed.abi, 'same ABI');
  t.equal(committed.compiler, fresh.compiler, 'compiled by the pinned solc');
  t.equal(committed.compiler.split('+')[0], (require('solc/package.json') as { version: string }).version);
  t.equal(committed.source_sha256, createHash('sha256').update(readFileSync(SOURCE_PATH)).digest('hex'), 'the artifact names the source it came from');
  // bytecodeHash none: the CBOR trailer is the one-entry map {solc: 0.8.37}, no ipfs or bzzr hash.
  t.match(committed.bytecode, /a164736f6c6343000825000a$/, 'the trailer holds only the solc version');
  t.notMatch(committed.bytecode, /6970667358|627a7a72/, 'no metadata hash');
});

t.test('an edited source gives other bytecode (the test would catch a stale artifact)', async (t) => {
  const edited = readFileSync(SOURCE_PATH, 'utf8').replace('if (amount == 0) revert ZeroAmount();', 'if (amount < 2) revert ZeroAmount();');
  t.not(compileTokenEscrow(edited).bytecode, tokenEscrowArtifact().bytecode);
});

t.test('the typed ABI the API encodes with is part of the artifact\'s', async (t) => {
  const artifact = tokenEscrowArtifact().abi as { type: string; name?: string; inputs?: { name: string; type: string; indexed?: boolean }[] }[];
  for (const item of TOKEN_ESCROW_ABI) {
    const found = artifact.find((a) => a.type === item.type && a.name === item.name);
    t.ok(found, `${item.type} ${item.name}`);
    t.same(found!.inputs!.map((i) => [i.name, i.type, i.indexed ?? false]), item.inputs.map((i) => [i.name, i.type, 'indexed' in i ? i.indexed : false]), `${item.name} inputs`);
  }
  const fns = artifact.filter((a) => a.type === 'function').map((a) => a.name).sort();
  t.same(fns, ['deposit', 'escrowOf', 'refund', 'release'], 'nothing else can be called: no owner, no admin, no upgrade');
});
