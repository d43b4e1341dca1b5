// The rollback anchor a node's settings name (docs/storage.md "Rollback anchor"): a file, or anchor
// keepers run by other parties; none in development mode without either. node/main.ts and
// node/identity-cli.ts open the store with the same one, so both keep it in step with the store.
import type { NodeConfig } from '../config.ts';
import { fromHex } from '../../common/bytes.ts';
import { FileRollbackAnchor, type RollbackAnchor } from './rollback-anchor.ts';
import { KeeperRollbackAnchor, type AnchorLog } from './keeper-rollback-anchor.ts';

type AnchorSettings = Pick<NodeConfig, 'rollbackAnchorFile' | 'anchorKeepers' | 'rollbackAnchorReadQuorum' | 'rollbackAnchorWriteQuorum' | 'rollbackAnchorKeeperTimeoutMs'>;

export function configuredRollbackAnchor(c: AnchorSettings, storageKey: Uint8Array, log?: AnchorLog): RollbackAnchor | undefined {
  if (c.rollbackAnchorFile) return new FileRollbackAnchor(c.rollbackAnchorFile, storageKey);
  if (c.anchorKeepers.length === 0) return undefined;
  return new KeeperRollbackAnchor({
    keepers: c.anchorKeepers.map((k) => ({ url: k.url, publicKey: fromHex(k.publicKey) })), storageKey, timeoutMs: c.rollbackAnchorKeeperTimeoutMs,
    ...(c.rollbackAnchorReadQuorum !== undefined ? { readQuorum: c.rollbackAnchorReadQuorum } : {}),
    ...(c.rollbackAnchorWriteQuorum !== undefined ? { writeQuorum: c.rollbackAnchorWriteQuorum } : {}),
    ...(log ? { log } : {}),
  });
}

/** How the anchor is kept, for the start's log line (public: origins and counts). */
export function describeAnchor(c: AnchorSettings): Record<string, unknown> {
  if (c.rollbackAnchorFile) return { rollbackAnchorFile: c.rollbackAnchorFile };
  return { rollbackAnchorKeepers: c.anchorKeepers.map((k) => k.url) };
}
