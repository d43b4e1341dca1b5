// The committed token artifacts (api/tokenization/contracts/<Name>.json) are what the sources compile to: the
// pinned solc, with the fixed settings, gives the same bytecode and ABI from contracts/tokens/ and the installed
// OpenZeppelin 5, in one compilation; each artifact names the SHA-256 of every source it was built from; every
// contract fits the EIP-170 size limit.
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { compileTokenContracts, MAX_DEPLOYED_BYTES, readSourceUnit, TOKEN_CONTRACTS, tokenArtifactPath, type ContractArtifact } from '../../../contracts/compile.ts';

const require = createRequire(import.meta.url);
const committed = (name: string) => JSON.parse(readFileSync(tokenArtifactPath(name as ContractArtifact['contract']), 'utf8')) as ContractArtifact;

t.test('recompiling every token contract gives the committed artifacts, byte for byte', async (t) => {
  const fresh = compileTokenContracts();
  for (const { name } of TOKEN_CONTRACTS) {
    const c = committed(name);
    const f = fresh[name];
    t.equal(f.bytecode, c.bytecode, `${name}: same deployment bytecode`);
    t.equal(f.deployed_bytecode, c.deployed_bytecode, `${name}: same deployed bytecode`);
    t.same(f.abi, c.abi, `${name}: same ABI`);
    t.same(f.sources, c.sources, `${name}: same sources`);
    t.same(c.settings, f.settings, `${name}: same settings`);
    t.equal(c.compiler, f.compiler, `${name}: same compiler`);
    t.equal(c.compiler.split('+')[0], (require('solc/package.json') as { version: string }).version, `${name}: the pinned solc`);
    t.match(c.bytecode, /a164736f6c6343000825000a$/, `${name}: the trailer holds only the solc version, no metadata hash`);
  }
});

t.test('each artifact names the SHA-256 of every source it was built from, OpenZeppelin\'s included', async (t) => {
  const erc20 = committed('ManagedERC20');
  for (const unit of ['contracts/tokens/ManagedERC20.sol', 'contracts/tokens/TokenControls.sol', 'contracts/tokens/IAccessRegistry.sol', '@openzeppelin/contracts/token/ERC20/ERC20.sol', '@openzeppelin/contracts/metatx/ERC2771Context.sol']) {
    t.equal(erc20.sources[unit], createHash('sha256').update(readSourceUnit(unit)).digest('hex'), unit);
  }
  t.notOk(Object.keys(committed('ERC2771Forwarder').sources).some((u) => u.startsWith('contracts/')), 'the forwarder is OpenZeppelin\'s alone');
  t.equal((require('@openzeppelin/contracts/package.json') as { version: string }).version, '5.7.0', 'built against OpenZeppelin Contracts 5.7.0');
});

t.test('every contract fits the EIP-170 limit without viaIR', async (t) => {
  for (const { name } of TOKEN_CONTRACTS) {
    const size = (committed(name).deployed_bytecode.length - 2) / 2;
    t.ok(size > 0 && size <= MAX_DEPLOYED_BYTES, `${name}: ${size} deployed bytes`);
  }
  t.notOk('viaIR' in committed('ManagedERC20').settings);
});
