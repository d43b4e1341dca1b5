// NODE_COORDINATOR with coordinator shards (docs/operations.md "Coordinator shards"): one host:port or a
// comma-separated list, each entry held to the same rules as a single coordinator.
import t from 'tap';
import { ConfigError } from '../../common/config.ts';
import { loadNodeConfig } from '../../node/config.ts';

const tls = { NODE_TLS_CA: 'ca.pem', NODE_TLS_CERT: 'node.pem', NODE_TLS_KEY: 'node.key' };

t.test('one coordinator, or a list the node attaches to in order', async (t) => {
  t.same(loadNodeConfig({}).coordinators, ['127.0.0.1:7400']);
  t.same(loadNodeConfig({ NODE_COORDINATOR: '127.0.0.1:7400,localhost:7401,[::1]:7402' }).coordinators, ['127.0.0.1:7400', 'localhost:7401', '[::1]:7402']);
  const c = loadNodeConfig({ ...tls, NODE_COORDINATOR: 'coordinator-a.custody:7400,coordinator-b.custody:7400' });
  t.same(c.coordinators, ['coordinator-a.custody:7400', 'coordinator-b.custody:7400']);
  t.equal(c.coordinator, 'coordinator-a.custody:7400,coordinator-b.custody:7400', 'the setting as given');
  t.ok(Object.isFrozen(c.coordinators));
});

t.test('a malformed, repeated or plaintext-off-loopback entry is refused, naming it', async (t) => {
  const refused = (coordinator: string, why: RegExp, env: Record<string, string> = {}) =>
    t.throws(() => loadNodeConfig({ ...env, NODE_COORDINATOR: coordinator }), { constructor: ConfigError, message: why }, `${coordinator}: ${why.source}`);
  refused('127.0.0.1:7400,', /NODE_COORDINATOR/);
  refused('127.0.0.1:7400,,127.0.0.1:7401', /NODE_COORDINATOR/);
  refused('127.0.0.1:7400 127.0.0.1:7401', /NODE_COORDINATOR/);
  refused('127.0.0.1:7400,127.0.0.1:7400', /lists a coordinator twice/);
  refused('127.0.0.1:7400,coordinator-b.custody:7400', /loopback only; got coordinator-b\.custody:7400 without TLS/);
  refused('a:1,a:1', /twice/, tls);
});
