// Configuration is validated once at boot and bad values are refused with messages that name the
// variable, the rule and the value.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../common/config.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { loadNodeConfig } from '../../node/config.ts';
import { loadCliConfig } from '../../api/sdk/config.ts';

t.test('defaults load and the result is frozen', async (t) => {
  const c = loadCoordinatorConfig({});
  t.equal(c.listen, '127.0.0.1:7400');
  t.equal(c.heartbeatIntervalMs, 2000);
  t.ok(Object.isFrozen(c));
  t.throws(() => {
    (c as { listen: string }).listen = 'x';
  }, TypeError, 'frozen config cannot be changed');
  const n = loadNodeConfig({ NODE_DATA_DIR: '/tmp/n1' });
  t.equal(n.storageKeyFile, '/tmp/n1/storage.key', 'key file defaults beside the data');
  t.equal(n.kind, 'service');
});

t.test('environment values are converted to the schema types', async (t) => {
  const c = loadCoordinatorConfig({ COORDINATOR_HEARTBEAT_MS: '750', COORDINATOR_LISTEN: '[::1]:9000' });
  t.equal(c.heartbeatIntervalMs, 750);
  t.equal(c.listen, '[::1]:9000');
});

t.test('a bad value is refused with a clear message', async (t) => {
  const err = t.throws(() => loadCoordinatorConfig({ COORDINATOR_HEARTBEAT_MS: 'often' })) as ConfigError;
  t.type(err, ConfigError);
  t.equal(err.code, 'invalid_config');
  t.match(err.message, /COORDINATOR_HEARTBEAT_MS \(heartbeatIntervalMs\): .*; got "often"/);

  const low = t.throws(() => loadCoordinatorConfig({ COORDINATOR_HEARTBEAT_MS: '5' })) as ConfigError;
  t.match(low.message, /COORDINATOR_HEARTBEAT_MS .*greater or equal to 100/);

  const kind = t.throws(() => loadNodeConfig({ NODE_KIND: 'laptop' })) as ConfigError;
  t.match(kind.message, /NODE_KIND \(kind\)/);

  const addr = t.throws(() => loadNodeConfig({ NODE_COORDINATOR: 'nowhere' })) as ConfigError;
  t.match(addr.message, /NODE_COORDINATOR/);
});

t.test('an integer setting is refused unless written as a whole decimal number, never truncated', async (t) => {
  for (const bad of ['750.5', '1e3', '0x10', ' 750', '07']) {
    const err = t.throws(() => loadCoordinatorConfig({ COORDINATOR_HEARTBEAT_MS: bad })) as ConfigError;
    t.match(err.message, /COORDINATOR_HEARTBEAT_MS \(heartbeatIntervalMs\): must be a whole number in decimal digits/, `${JSON.stringify(bad)} refused`);
  }
  t.equal(loadCoordinatorConfig({ COORDINATOR_HEARTBEAT_MS: '750' }).heartbeatIntervalMs, 750, 'a plain integer still loads');
  const dir = mkdtempSync(join(tmpdir(), 'cfg-int-'));
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify({ heartbeatIntervalMs: 750.5 }));
  const fromFile = t.throws(() => loadCoordinatorConfig({ COORDINATOR_CONFIG_FILE: file })) as ConfigError;
  t.match(fromFile.message, /COORDINATOR_HEARTBEAT_MS \(heartbeatIntervalMs\): must be a whole number in decimal digits; got 750.5/, 'a fraction in a config file too');
});

t.test('every problem is listed at once', async (t) => {
  const err = t.throws(() => loadNodeConfig({ NODE_KIND: 'x', NODE_RECONNECT_MIN_MS: 'y' })) as ConfigError;
  t.ok(err.problems.length >= 2, 'two problems reported');
});

t.test('a required setting that is not set is named once, as not set', async (t) => {
  const err = t.throws(() => loadCliConfig({})) as ConfigError;
  t.same(err.problems, [
    'CUSTODY_URL (url): required, not set',
    'CUSTODY_ORGANIZATION (organization): required, not set',
    'CUSTODY_KEY_ID (keyId): required, not set',
    'CUSTODY_SECRET_KEY_FILE (secretKeyFile): required, not set',
  ]);
  const bad = t.throws(() => loadCliConfig({ CUSTODY_URL: 'ftp://x', CUSTODY_ORGANIZATION: 'org', CUSTODY_KEY_ID: 'k', CUSTODY_SECRET_KEY_FILE: '/k' })) as ConfigError;
  t.equal(bad.problems.length, 1, 'one bad value, one problem');
  t.match(bad.problems[0], /^CUSTODY_URL \(url\): .*; got "ftp:\/\/x"$/);
});

t.test('rules across fields', async (t) => {
  t.throws(() => loadNodeConfig({ NODE_KIND: 'self' }), /owner/, 'a self node names its owner');
  t.ok(loadNodeConfig({ NODE_KIND: 'self', NODE_OWNER: 'org_1' }));
  t.throws(() => loadNodeConfig({ NODE_RECONNECT_MIN_MS: '900', NODE_RECONNECT_MAX_MS: '100' }), /must not exceed/);
  t.throws(() => loadCoordinatorConfig({ COORDINATOR_LISTEN: '0.0.0.0:7400' }), /plaintext is allowed on loopback only/);
  t.throws(() => loadNodeConfig({ NODE_COORDINATOR: 'coordinator.example:7400' }), /plaintext is allowed on loopback only/);
  t.throws(() => loadCoordinatorConfig({ COORDINATOR_TLS_CERT: '/x' }), /go together/);
});

t.test('a config file is read, and the environment wins over it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify({ heartbeatIntervalMs: 300, coordinatorId: 'from-file' }));
  const c = loadCoordinatorConfig({ COORDINATOR_CONFIG_FILE: file, COORDINATOR_ID: 'from-env' });
  t.equal(c.heartbeatIntervalMs, 300);
  t.equal(c.coordinatorId, 'from-env');
  writeFileSync(file, JSON.stringify({ heartbeatMs: 300 }));
  t.throws(() => loadCoordinatorConfig({ COORDINATOR_CONFIG_FILE: file }), /unknown setting "heartbeatMs"/);
  writeFileSync(file, '{not json');
  t.throws(() => loadCoordinatorConfig({ COORDINATOR_CONFIG_FILE: file }), /cannot read/);
});
