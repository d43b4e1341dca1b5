// The import direction between the top-level folders (docs/architecture.md) is enforced by ESLint;
// this proves each rule bites, that the allowed directions stay allowed, and that the known-debt
// exceptions are no wider than listed.
import t from 'tap';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });
const RULE = 'layers/import-direction';

/** The import-direction findings for `code` placed at `filePath`. */
async function lint(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === RULE).map((m) => m.message);
}

const importing = (spec: string) => `import { x } from '${spec}';\nexport const y = x;\n`;

t.test('forbidden directions are errors', async (t) => {
  const cases: [string, string, string][] = [
    // [file, import, what the rule is]
    ['node/runtime/example.ts', '../../api/intents/example.ts', 'node may not import api'],
    ['node/runtime/example.ts', '../../coordinator/keys/key-service.ts', 'node may not import coordinator'],
    ['api/routes/v1/example.ts', '../../../node/protocols/round/machine.ts', 'api may not import node'],
    ['api/example.ts', '../coordinator/keys/key-service.ts', 'api may not import coordinator'],
    ['coordinator/keys/example.ts', '../../node/protocols/keys/key-package.ts', 'coordinator may not import node'],
    ['coordinator/keys/example.ts', '../../api/app.ts', 'coordinator may not import api'],
    ['core/trust/example.ts', '../../node/runtime/identity.ts', 'core may not import node'],
    ['core/trust/example.ts', '../../api/app.ts', 'core may not import api'],
    ['core/intents/example.ts', '../../coordinator/main.ts', 'core may not import coordinator'],
    ['common/example.ts', '../node/protocols/math/curve.ts', 'common may not import node'],
    ['common/example.ts', '../api/app.ts', 'common may not import api'],
    ['common/example.ts', '../coordinator/main.ts', 'common may not import coordinator'],
    ['common/example.ts', '../core/codec/transcript.ts', 'common may not import core'],
    ['api/sdk/example.ts', '../app.ts', 'the SDK may not import API server code'],
    ['api/sdk/example.ts', '../../node/runtime/identity.ts', 'the SDK may not import node'],
    ['api/sdk/example.ts', '../../proto/grpc.ts', 'the SDK may not import the gRPC contracts'],
    ['node/protocols/frost/example.ts', '../../../core/trust/roster.ts', 'protocol code may import only the pure corners of core'],
    ['node/protocols/frost/example.ts', '../../../common/logger.ts', 'protocol code may not import common beyond memo'],
    ['core/codec/example.ts', '../trust/roster.ts', 'the pure codec may not import the rest of core'],
  ];
  for (const [file, spec, what] of cases) {
    t.equal((await lint(file, importing(spec))).length, 1, what);
  }
});

t.test('type-only, re-export and dynamic imports are checked too', async (t) => {
  t.equal((await lint('node/runtime/example.ts', "import type { Policy } from '../../api/policy/policy.ts';\nexport type P = Policy;\n")).length, 1, 'import type');
  t.equal((await lint('core/example.ts', "export { nodeIdFor } from '../node/runtime/identity.ts';\n")).length, 1, 'export from');
  t.equal((await lint('coordinator/example.ts', "export const load = () => import('../node/main.ts');\n")).length, 1, 'import()');
});

t.test('allowed directions are clean', async (t) => {
  const cases: [string, string][] = [
    ['node/runtime/example.ts', '../../core/intents/intent.ts'],
    ['node/runtime/example.ts', '../../common/bytes.ts'],
    ['node/runtime/example.ts', '../../proto/grpc.ts'],
    ['node/runtime/example.ts', '../protocols/round/machine.ts'],
    ['coordinator/nodes/example.ts', '../../core/link/attach.ts'],
    ['api/transactions/example.ts', '../../core/codec/blob.ts'],
    ['api/transactions/example.ts', '../vaults/vault-service.ts'],
    ['core/trust/example.ts', '../../common/ed25519.ts'],
    ['core/link/example.ts', '../../proto/gen/mpc/v1/node_link_pb.ts'],
    ['core/trust/example.ts', '../intents/canonical.ts'],
    ['common/example.ts', './bytes.ts'],
    ['api/sdk/example.ts', '../../core/intents/intent.ts'],
    ['api/sdk/example.ts', '../../common/config.ts'],
    ['api/sdk/example.ts', './client.ts'],
    ['node/protocols/frost/example.ts', '../../../core/codec/blob.ts'],
    ['node/protocols/frost/example.ts', '../../../core/errors/protocol-errors.ts'],
    ['node/protocols/frost/example.ts', '../../../core/session/key-package.ts'],
    ['node/protocols/frost/example.ts', '../../../common/memo.ts'],
    ['test/example.test.ts', '../node/runtime/identity.ts'],
    ['bench/example.ts', '../api/app.ts'],
  ];
  for (const [file, spec] of cases) {
    t.same(await lint(file, importing(spec)), [], `${file} -> ${spec}`);
  }
});

t.test('known debt is exactly as wide as listed', async (t) => {
  // The wallet-address module may reach the three protocol files it names, and nothing else of node/.
  t.same(await lint('api/vaults/wallet-address.ts', importing('../../node/protocols/derive/bip32.ts')), []);
  t.equal((await lint('api/vaults/wallet-address.ts', importing('../../node/runtime/identity.ts'))).length, 1);
  t.equal((await lint('api/vaults/other.ts', importing('../../node/protocols/derive/bip32.ts'))).length, 1, 'another API file may not');
  // The SDK client may take the route schemas' types, but not their code.
  t.same(await lint('api/sdk/client.ts', "import type { Vault } from '../routes/v1/vaults.ts';\nexport type V = Vault;\n"), []);
  t.equal((await lint('api/sdk/client.ts', importing('../routes/v1/vaults.ts'))).length, 1, 'a value import pulls server code');
});

t.test('the pure corners of core are held to the protocol purity rule', async (t) => {
  const [result] = await eslint.lintText("import { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n", { filePath: 'core/codec/example.ts' });
  t.ok((result?.messages ?? []).some((m) => m.ruleId === 'no-restricted-imports'));
});
