// The API's coordinator client fails every call with a CustodyError decoded from the coordinator's
// structured status details: unary calls, the node watch stream, and a coordinator that is not there.
import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { addService } from '../../proto/grpc.ts';
import { CoordinatorService } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { toRpcError } from '../../core/rpc/rpc-error.ts';
import { freePort } from '../cluster/cluster-harness.ts';
import { signersRefused } from '../../api/transactions/transaction-worker.ts';

const fail = (err: unknown) => async (): Promise<never> => {
  throw toRpcError(err);
};

t.test('unary calls and the watch stream fail with the coordinator\'s CustodyError', async (t) => {
  const server = new grpc.Server();
  addService(server, CoordinatorService, {
    listNodes: fail(new Error('disk on fire')),
    watchNodes: fail(new CustodyError('node_not_attached', 'node-b is not attached', { culprits: ['node-b'] })),
    createVault: fail(new CustodyError('key_exists', 'key vault-1 exists')),
    getVault: fail(new CustodyError('unknown_key', 'no key vault-9')),
    sign: fail(new CustodyError('digest_mismatch', 'refused by node-a: not the intent\'s digest')),
    reshare: fail(new CustodyError('failed', 'reshare failed', { culprits: ['node-c'] })),
    proposeCommittee: fail(new CustodyError('not_enough_nodes', 'hosted keys need 3 service nodes; 1 attached')),
    rebuildVaults: fail(new CustodyError('invalid_request', 'at most 10000 vault ids in one rebuild')),
    releaseVault: fail(new CustodyError('unknown_vault', 'no vault vault-9')),
    exportVault: fail(new CustodyError('unknown_vault', 'no vault vault-9')),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const client = connectCoordinator({ address: `127.0.0.1:${port}` });
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  const rejects = async (p: Promise<unknown>, want: Partial<CustodyError>, what: string) => {
    const err = await p.then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof CustodyError, `${what}: a CustodyError`);
    t.match(err, want, what);
  };
  await rejects(client.createVault({ vaultId: 'vault-1' }), { code: 'key_exists', kind: 'conflict' }, 'createVault');
  await rejects(client.getVault({ vaultId: 'vault-9' }), { code: 'unknown_key', kind: 'not_found', message: 'no key vault-9' }, 'getVault');
  await rejects(client.sign({ vaultId: 'vault-1' }), { code: 'digest_mismatch', kind: 'refused', culprits: [] }, 'sign');
  await rejects(client.reshare({ vaultId: 'vault-1' }), { code: 'failed', kind: 'aborted', culprits: ['node-c'] }, 'reshare');
  await rejects(client.proposeCommittee({ owner: 'org' }), { code: 'not_enough_nodes', kind: 'unavailable' }, 'proposeCommittee');
  await rejects(client.listNodes({}), { code: 'internal', kind: 'bug', message: 'internal error' }, 'listNodes: a bug leaks no text');
  const stream = client.watchNodes({});
  const err = await new Promise<unknown>((resolve) => stream.on('error', resolve));
  t.ok(err instanceof CustodyError, 'watchNodes: a CustodyError');
  t.match(err, { code: 'node_not_attached', kind: 'unavailable', culprits: ['node-b'] }, 'watchNodes');
});

t.test('a coordinator that is not there is unavailable', async (t) => {
  const client = connectCoordinator({ address: `127.0.0.1:${await freePort()}` });
  t.teardown(() => client.close());
  const err = await client.getVault({ vaultId: 'k' }, { deadline: Date.now() + 2000 }).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof CustodyError);
  t.match(err, { code: 'unavailable', kind: 'unavailable' });
});

t.test('a refusal by the signers becomes the transaction\'s reason: the code, then who and why, bounded', async (t) => {
  const refusal = new CustodyError('digest_mismatch', 'refused by node-a: the digests asked for are not the ones this intent and template produce');
  t.equal(signersRefused(refusal), 'signers refused: digest_mismatch: refused by node-a: the digests asked for are not the ones this intent and template produce');
  const blamed = new CustodyError('bad_template', 'refused by node-b: malformed EVM template', { culprits: ['node-c'] });
  t.equal(signersRefused(blamed), 'signers refused: bad_template: refused by node-b: malformed EVM template (culprits: node-c)');
  const long = signersRefused(new CustodyError('wrong_outputs', 'z'.repeat(2000)));
  t.equal(long.length, 500, 'bounded');
  t.ok(long.startsWith('signers refused: wrong_outputs: '), 'the code survives the bound');
});
