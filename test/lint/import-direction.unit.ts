// The import direction between the top-level folders (docs/architecture.md) is enforced by ESLint;
// this proves each rule bites, that the allowed directions stay allowed, and that no known-debt
// exception is left.
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
    ['node/runtime/example.ts', '../../coordinator/vaults/vault-service.ts', 'node may not import coordinator'],
    ['api/routes/v1/example.ts', '../../../node/protocols/round/machine.ts', 'api may not import node'],
    ['api/example.ts', '../coordinator/vaults/vault-service.ts', 'api may not import coordinator'],
    ['coordinator/vaults/example.ts', '../../node/protocols/keys/key-package.ts', 'coordinator may not import node'],
    ['coordinator/vaults/example.ts', '../../api/app.ts', 'coordinator may not import api'],
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
    ['api/sdk/browser/example.ts', '../bff-cookies.ts', 'the browser package may not import the server-side SDK'],
    ['api/sdk/browser/example.ts', '../../../core/errors/custody-error.ts', 'the browser package may not import core'],
    ['api/sdk/browser/example.ts', '../../../common/bytes.ts', 'the browser package may not import common'],
    ['node/protocols/frost/example.ts', '../../../core/trust/roster.ts', 'protocol code may import only the pure corners of core'],
    ['node/protocols/frost/example.ts', '../../../common/logger.ts', 'protocol code may not import common beyond memo'],
    ['core/codec/example.ts', '../trust/roster.ts', 'the pure codec may not import the rest of core'],
    ['core/session/example.ts', '../trust/roster.ts', 'the session contract may not import the rest of core'],
    ['core/keys/example.ts', '../trust/roster.ts', 'the pure key code may not import the rest of core'],
    ['core/keys/example.ts', '../../common/logger.ts', 'the pure key code may not import common beyond memo'],
    ['node/protocols/frost/example.ts', '../../../core/api-schemas/vaults.ts', 'protocol code may not import the API schemas'],
    ['tee/attestation/example.ts', '../../node/runtime/identity.ts', 'the TEE verifiers may not import node'],
    ['tee/attestation/example.ts', '../../core/trust/roster.ts', 'the TEE verifiers may import only core/errors'],
    ['tee/attestation/example.ts', '../../core/trust/tee-binding.ts', 'the TEE verifiers do not compute the binding themselves'],
    ['tee/attest-cli.ts', '../node/runtime/identity.ts', 'the attestation command may not import node'],
    ['tee/attest-cli.ts', '../api/sdk/cli.ts', 'the attestation command may not import api'],
    ['tee/attest-cli.ts', '../common/bytes.ts', 'tee may not import common beyond the AWS request signer'],
    ['node/protocols/frost/example.ts', '../../../tee/attestation/nitro.ts', 'protocol code may not import the TEE verifiers'],
    ['coordinator/example.ts', '../tee/seal/kms-sealer.ts', 'the coordinator takes only the attestation verifiers of tee/'],
    ['core/trust/example.ts', '../../tee/attestation/nitro.ts', 'core may not import tee'],
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
    ['node/runtime/example.ts', '../../tee/attestation/nitro.ts'],
    ['coordinator/vaults/example.ts', '../../tee/attestation/enrolment-verifier.ts'],
    ['api/vaults/example.ts', '../../tee/attestation/nitro.ts'],
    ['tee/attestation/example.ts', '../../core/errors/custody-error.ts'],
    ['tee/attest-cli.ts', '../core/trust/tee-binding.ts'],
    ['tee/attest-cli.ts', './attestation/dev-authority-dir.ts'],
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
    ['api/sdk/example.ts', './browser/bff-routes.ts'],
    ['api/sdk/browser/example.ts', './bff-routes.ts'],
    ['node/protocols/frost/example.ts', '../../../core/codec/blob.ts'],
    ['node/protocols/frost/example.ts', '../../../core/errors/protocol-errors.ts'],
    ['node/protocols/frost/example.ts', '../../../core/session/key-package.ts'],
    ['core/session/example.ts', '../codec/blob.ts'],
    ['core/session/example.ts', '../errors/custody-error.ts'],
    ['node/protocols/frost/example.ts', '../../../common/memo.ts'],
    ['node/protocols/frost/example.ts', '../../../core/keys/taproot.ts'],
    ['core/keys/example.ts', '../errors/protocol-errors.ts'],
    ['core/keys/example.ts', '../../common/memo.ts'],
    ['api/vaults/example.ts', '../../core/keys/bip32.ts'],
    ['api/routes/v1/example.ts', '../../../core/api-schemas/vaults.ts'],
    ['api/sdk/example.ts', '../../core/api-schemas/vaults.ts'],
    ['test/example.test.ts', '../node/runtime/identity.ts'],
    ['bench/example.ts', '../api/app.ts'],
  ];
  for (const [file, spec] of cases) {
    t.same(await lint(file, importing(spec)), [], `${file} -> ${spec}`);
  }
});

t.test('no known debt is left: the imports it once allowed are errors', async (t) => {
  const { KNOWN_DEBT } = (await import(new URL('../../eslint.config.js', import.meta.url).href)) as { KNOWN_DEBT: unknown[] };
  t.same(KNOWN_DEBT, [], 'KNOWN_DEBT is empty');
  // Wallet addresses derive with core/keys/, not the protocols.
  for (const spec of ['../../node/protocols/derive/bip32.ts', '../../node/protocols/frost/taproot.ts', '../../node/protocols/math/curve.ts']) {
    t.equal((await lint('api/vaults/wallet-address.ts', importing(spec))).length, 1, `wallet-address -> ${spec}`);
  }
  // The SDK takes its types from core/api-schemas/, not from the routes, even as types.
  for (const spec of ['../routes/v1/vaults.ts', '../routes/v1/transactions.ts', '../routes/v1/api-keys.ts', '../routes/v1/committees.ts', '../policy/policy.ts']) {
    t.equal((await lint('api/sdk/client.ts', `import type { X } from '${spec}';\nexport type V = X;\n`)).length, 1, `client -> ${spec}`);
  }
  t.equal((await lint('api/sdk/cli.ts', "import type { Policy } from '../policy/policy.ts';\nexport type P = Policy;\n")).length, 1, 'cli -> policy');
});

t.test('the pure corners of core are held to the protocol purity rule', async (t) => {
  for (const filePath of ['core/codec/example.ts', 'core/keys/example.ts']) {
    const [result] = await eslint.lintText("import { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n", { filePath });
    t.ok((result?.messages ?? []).some((m) => m.ruleId === 'no-restricted-imports'), filePath);
  }
});
