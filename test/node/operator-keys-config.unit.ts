// NODE_OPERATOR_KEYS: comma-separated 32-byte Ed25519 public keys in hex, read once, lower-cased.
import t from 'tap';
import { loadNodeConfig } from '../../node/config.ts';

t.test('operator keys are parsed, normalized and validated at boot', async (t) => {
  t.same(loadNodeConfig({}).operatorKeys, [], 'none by default');
  const a = 'AB'.repeat(32);
  const b = 'cd'.repeat(32);
  const c = loadNodeConfig({ NODE_OPERATOR_KEYS: `${a},${b}` });
  t.same(c.operatorKeys, [a.toLowerCase(), b]);
  t.ok(Object.isFrozen(c.operatorKeys));
  t.throws(() => loadNodeConfig({ NODE_OPERATOR_KEYS: 'ab'.repeat(31) }), /NODE_OPERATOR_KEYS/, 'too short');
  t.throws(() => loadNodeConfig({ NODE_OPERATOR_KEYS: `${a}, ${b}` }), /NODE_OPERATOR_KEYS/, 'no spaces');
  t.throws(() => loadNodeConfig({ NODE_OPERATOR_KEYS: `${a},` }), /NODE_OPERATOR_KEYS/, 'no empty item');
});
