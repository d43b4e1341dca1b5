// The coordinator's vault service over a real LevelDB vault store in a temporary directory, with a node
// registry the test describes (which nodes it can resolve) and a session hub of the test's own: what
// the coordinator unit tests of key generation, signing and reshare share.
import type { Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { VaultService, type Timeouts } from '../../coordinator/vaults/vault-service.ts';
import { VaultStore, type VaultRecord } from '../../coordinator/vaults/vault-store.ts';
import type { SessionHub } from '../../coordinator/sessions/session-hub.ts';
import type { NodeRegistry } from '../../coordinator/nodes/node-registry.ts';
import type { LoadedRoster } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';

export const fill = (n: number, b: number) => new Uint8Array(n).fill(b);
export const COMMITTEE = ['n1', 'n2', 'n3'];

/** A 2-of-3 hosted vault `vault-1` of `COMMITTEE`, active at `epoch`; `extra` overrides any field. */
export function activeVault(epoch: number, extra: Partial<VaultRecord> = {}): VaultRecord {
  return {
    v: 2, vaultId: 'vault-1', owner: 'org_acme', tier: 'hosted', threshold: 2, committee: COMMITTEE.map((nodeId, i) => ({ nodeId, index: i + 1 })),
    epoch, rotation: 0, publicKey: '02'.padEnd(66, '1'), chainCode: '', state: 'active', createdAtMs: 0, updatedAtMs: 0, ...extra,
  };
}

export interface FixtureOptions {
  /** The hub the service runs sessions on (often only its `run`). */
  hub: Pick<SessionHub, 'run'> | SessionHub;
  /** Vault records stored before the service starts. */
  vaults?: VaultRecord[];
  /** Which node ids the registry resolves (all by default); every node looks attached. */
  registered?: (nodeId: string) => boolean;
  /** A roster for key generation and reshare (its bytes only: the nodes are not real here). */
  roster?: boolean;
  timeouts?: Timeouts;
}

/** A coordinator's vault store on a fresh LevelDB in a temp directory, with `vaults` stored; closed and removed at teardown. */
export async function tempVaultStore(t: Test, prefix: string, vaults: VaultRecord[] = []): Promise<{ db: Level<string, string>; store: VaultStore }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' });
  await db.open();
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const store = new VaultStore(db);
  for (const v of vaults) await store.put(v);
  return { db, store };
}

export async function vaultServiceFixture(t: Test, o: FixtureOptions): Promise<{ keys: VaultService; store: VaultStore }> {
  const { store } = await tempVaultStore(t, 'vault-service-', o.vaults);
  const registered = o.registered ?? (() => true);
  const registry = {
    get: (nodeId: string) => (registered(nodeId) ? { nodeId, kind: 'service', signingKey: fill(32, 1), encryptionKey: fill(32, 2) } : undefined),
    isAttached: () => true,
    list: () => [],
    on: () => undefined,
    off: () => undefined,
  } as unknown as NodeRegistry;
  const roster = o.roster ? ({ bytes: fill(8, 0x0e) } as unknown as LoadedRoster) : undefined;
  const keys = new VaultService(store, registry, o.hub as SessionHub, createLogger('test', 'silent'), o.timeouts ?? { dkgMs: 5_000, signMs: 5_000, reshareMs: 5_000, attachWaitMs: 0 }, roster);
  return { keys, store };
}
