// deploy/node/node.example.json, the self node's example configuration (docs/self-node.md), loaded the
// way the node loads it (NODE_CONFIG_FILE through loadNodeConfig) so the example cannot drift from the
// schema: every setting in it is one the node knows, the placeholders are exactly the three values
// `npm run cli -- node-config` gives and refuse to start until filled in, and once filled in it is a
// self node with its state in the container image's volumes (deploy/node/Dockerfile).
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../common/config.ts';
import { loadNodeConfig } from '../../node/config.ts';

const example = fileURLToPath(new URL('../../deploy/node/node.example.json', import.meta.url));
const dockerfile = readFileSync(fileURLToPath(new URL('../../deploy/node/Dockerfile', import.meta.url)), 'utf8');
const raw = JSON.parse(readFileSync(example, 'utf8')) as Record<string, unknown>;
const placeholders = Object.entries(raw).filter(([, v]) => typeof v === 'string' && v.startsWith('<')).map(([k]) => k);

const filled = { coordinator: 'coordinator.custody.example:7400', operatorKeys: `${'ab'.repeat(32)},${'cd'.repeat(32)}`, owner: 'org_0123456789abcdef01234567' };

t.test('the placeholders are the coordinator address, operator keys and organization', async (t) => {
  t.same(placeholders.sort(), ['coordinator', 'operatorKeys', 'owner']);
});

t.test('as shipped, the example refuses to start and names the placeholders it cannot take', async (t) => {
  let problems: string[] = [];
  try {
    loadNodeConfig({ NODE_CONFIG_FILE: example });
    t.fail('the example loaded with its placeholders');
  } catch (err) {
    t.type(err, ConfigError);
    problems = (err as ConfigError).problems;
  }
  t.ok(problems.some((p) => p.startsWith('NODE_COORDINATOR (coordinator)')), 'the coordinator placeholder is not host:port');
  t.ok(problems.some((p) => p.startsWith('NODE_OPERATOR_KEYS (operatorKeys)')), 'the operator keys placeholder is not hex');
  t.notOk(problems.some((p) => /unknown setting/.test(p)), 'every setting is one the node knows');
});

t.test('filled in, it loads as a self node with mutual TLS and its state in three places', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'node-example-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'node.json');
  writeFileSync(file, JSON.stringify({ ...raw, ...filled }));
  const c = loadNodeConfig({ NODE_CONFIG_FILE: file });
  t.match(c, {
    kind: 'self', owner: filled.owner, coordinator: filled.coordinator, operatorKeys: ['ab'.repeat(32), 'cd'.repeat(32)],
    dataDir: raw.dataDir, storageKeyFile: raw.storageKeyFile, rollbackAnchorFile: raw.rollbackAnchorFile,
    tlsCa: raw.tlsCa, tlsCert: raw.tlsCert, tlsKey: raw.tlsKey,
  });
  const places = [c.dataDir, dirname(c.storageKeyFile), dirname(c.rollbackAnchorFile!)];
  t.equal(new Set(places).size, 3, 'data, storage key and anchor are apart');
  t.ok(Object.isFrozen(c));
});

t.test('the container image keeps the example\'s data, storage key and anchor in volumes and reads its config from NODE_CONFIG_FILE', async (t) => {
  const volume = /^VOLUME (\[.*\])$/m.exec(dockerfile);
  t.ok(volume, 'the Dockerfile declares its volumes');
  const volumes = JSON.parse(volume![1]!) as string[];
  t.same(volumes.sort(), [raw.dataDir as string, dirname(raw.storageKeyFile as string), dirname(raw.rollbackAnchorFile as string)].sort());
  t.match(dockerfile, /NODE_CONFIG_FILE=\/etc\/custody-node\/node\.json/);
  t.match(dockerfile, /^USER node$/m, 'not root');
  t.ok((raw.tlsCa as string).startsWith('/etc/custody-node/'), 'the TLS files sit beside the mounted config');
});
