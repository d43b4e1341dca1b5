// The rollback anchor settings (node/config.ts, docs/storage.md "Anchor keepers"): a file or keepers,
// keepers with one pinned Ed25519 key each, quorums that overlap, TLS to a keeper outside a development
// machine's loopback, and no file anchor for a tee node in production, where its parent holds the file.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { ConfigError } from '../../common/config.ts';
import { anchorProblem, loadNodeConfig } from '../../node/config.ts';
import { configuredRollbackAnchor } from '../../node/storage/configured-anchor.ts';
import { KeeperRollbackAnchor } from '../../node/storage/keeper-rollback-anchor.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { toHex } from '../../common/bytes.ts';

const key = () => toHex(ed25519.getPublicKey(new Uint8Array(randomBytes(32))));
const keys = [key(), key(), key()];
const urls = ['https://keeper-a.example:7480', 'https://keeper-b.example', 'https://keeper-c.example:7480'];
const env = { NODE_ROLLBACK_ANCHOR_KEEPERS: urls.join(','), NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: keys.join(',') };

function problems(e: Record<string, string>): string[] {
  try {
    loadNodeConfig(e);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
}

t.test('keepers with their pinned keys, in order; majorities by default', async (t) => {
  const c = loadNodeConfig({ ...env, NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: keys.join(',').toUpperCase() });
  t.same(c.anchorKeepers, urls.map((url, i) => ({ url, publicKey: keys[i] })), 'origins with their keys, lowercase');
  t.ok(Object.isFrozen(c.anchorKeepers) && Object.isFrozen(c.anchorKeepers[0]));
  const anchor = configuredRollbackAnchor(c, new Uint8Array(32));
  t.type(anchor, KeeperRollbackAnchor);
  t.match(anchor, { readQuorum: 2, writeQuorum: 2 });
  t.match(configuredRollbackAnchor(loadNodeConfig({ ...env, NODE_ROLLBACK_ANCHOR_READ_QUORUM: '1', NODE_ROLLBACK_ANCHOR_WRITE_QUORUM: '3' }), new Uint8Array(32)), { readQuorum: 1, writeQuorum: 3 });
  t.type(configuredRollbackAnchor(loadNodeConfig({ NODE_ROLLBACK_ANCHOR_FILE: '/tmp/x.anchor' }), new Uint8Array(32)), FileRollbackAnchor);
  t.equal(configuredRollbackAnchor(loadNodeConfig({ NODE_DEVELOPMENT: 'true' }), new Uint8Array(32)), undefined);
  t.same(loadNodeConfig({}).anchorKeepers, []);
});

t.test('wrong keeper settings are refused, each named', async (t) => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['a key short', { NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: keys.slice(0, 2).join(',') }, /one pinned key per keeper.*got 2 keys for 3 keepers/],
    ['no keys', { NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: '' }, /got 0 keys for 3 keepers/],
    ['a key that is no Ed25519 key', { NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: [keys[0], keys[1], '00'.repeat(32)].join(',') }, /is not an Ed25519 public key/],
    ['one key for two keepers', { NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: [keys[0], keys[0], keys[1]].join(',') }, /one key for two keepers/],
    ['a keeper twice', { NODE_ROLLBACK_ANCHOR_KEEPERS: [urls[0], urls[0], urls[1]].join(',') }, /lists a keeper twice/],
    ['a keeper twice, spelled two ways', { NODE_ROLLBACK_ANCHOR_KEEPERS: ['https://keeper-b.example:443', urls[1], urls[2]].join(',') }, /lists a keeper twice/],
    ['a path', { NODE_ROLLBACK_ANCHOR_KEEPERS: [`${urls[0]}/anchor`, urls[1], urls[2]].join(',') }, /NODE_ROLLBACK_ANCHOR_KEEPERS/],
    ['quorums that do not overlap', { NODE_ROLLBACK_ANCHOR_READ_QUORUM: '1', NODE_ROLLBACK_ANCHOR_WRITE_QUORUM: '2' }, /must exceed the 3 keepers/],
    ['a quorum above the keepers', { NODE_ROLLBACK_ANCHOR_READ_QUORUM: '4' }, /read quorum must be from 1 to 3/],
    ['plain http off loopback', { NODE_ROLLBACK_ANCHOR_KEEPERS: ['http://keeper-a.example:7480', urls[1], urls[2]].join(',') }, /plain http is refused \(http:\/\/keeper-a\.example:7480\)/],
    ['plain http on loopback outside development', { NODE_ROLLBACK_ANCHOR_KEEPERS: ['http://127.0.0.1:7480', urls[1], urls[2]].join(',') }, /plain http is refused/],
    ['a file too', { NODE_ROLLBACK_ANCHOR_FILE: '/tmp/x.anchor' }, /one anchor, not both/],
  ];
  for (const [what, more, why] of cases) t.ok(problems({ ...env, ...more }).some((p) => why.test(p)), `${what}: ${why.source}`);
  t.ok(problems({ NODE_ROLLBACK_ANCHOR_KEEPER_KEYS: keys.join(',') }).some((p) => /go with NODE_ROLLBACK_ANCHOR_KEEPERS/.test(p)), 'keys without keepers');
  t.same(problems({ ...env, NODE_DEVELOPMENT: 'true', NODE_ROLLBACK_ANCHOR_KEEPERS: ['http://127.0.0.1:7480', 'http://localhost:7481', 'http://[::1]:7482'].join(',') }), [], 'a development machine reaches loopback keepers over http');
});

t.test('a node needs a file or keepers; a tee node in production takes keepers, not a file its parent holds', async (t) => {
  const base = { rollbackAnchorFile: undefined, rollbackAnchorKeepers: undefined, development: false, storeAcceptUnvouched: false, kind: 'service' as const, environment: 'production' as const };
  t.match(anchorProblem(base), /NODE_ROLLBACK_ANCHOR_FILE \(rollbackAnchorFile\) or NODE_ROLLBACK_ANCHOR_KEEPERS/);
  t.equal(anchorProblem({ ...base, rollbackAnchorFile: '/anchor/file' }), undefined);
  t.equal(anchorProblem({ ...base, rollbackAnchorKeepers: urls.join(',') }), undefined);
  t.equal(anchorProblem({ ...base, development: true, environment: 'sandbox' }), undefined);
  const tee = { ...base, kind: 'tee' as const };
  t.match(anchorProblem({ ...tee, rollbackAnchorFile: '/anchor/file' }), /a tee node in production keeps no anchor in a file.*NODE_ROLLBACK_ANCHOR_KEEPERS/);
  t.equal(anchorProblem({ ...tee, rollbackAnchorKeepers: urls.join(',') }), undefined);
  t.equal(anchorProblem({ ...tee, rollbackAnchorFile: '/anchor/file', storeAcceptUnvouched: true }), undefined, 'the override, as before, is the operator\'s call');
  t.equal(anchorProblem({ ...tee, rollbackAnchorFile: '/anchor/file', environment: 'sandbox' }), undefined, 'a sandbox tee node may keep a file');
  t.equal(anchorProblem({ ...tee, storeAcceptUnvouched: true }), undefined, 'an enclave without keepers still runs with the override');
});
