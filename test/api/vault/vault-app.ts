// The vault API on a fresh store (LevelDB, or PostgreSQL: test/support/test-store.ts) with one organization and its first API key, and a `call`
// that signs each request as the SDK does. Shared by the vault API's route tests.
import type { Test } from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { openTestStore } from '../../support/test-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import type { TransactionService, TransactionServiceOptions } from '../../../api/transactions/transaction-service.ts';
import type { CoordinatorClient } from '../../../api/coordinator/coordinator-client.ts';
import { signedHeaders, type ApiCredentials } from '../../../api/sdk/request-signer.ts';
import type { TeeAttestationVerifier } from '../../../tee/attestation/enrolment-verifier.ts';

export interface VaultAppOptions {
  limits?: { apiKeysPerOrg: number; vaultsPerOrg: number };
  coordinator?: Partial<CoordinatorClient>;
  /** Builds the transaction service over the app's vault service (transaction routes are off without it). */
  transactions?: (vaults: VaultService) => TransactionService;
  /** Verifies tee enrolments (tee/attestation/enrolment-verifier.ts). */
  verifyTee?: TeeAttestationVerifier;
  /** Extra API_* settings. */
  env?: Record<string, string>;
  /** The vault service's clock (records' created_at); the real one by default. */
  now?: () => Date;
}

export async function vaultApp(t: Test, opts: VaultAppOptions = {}) {
  const { dir, store } = await openTestStore('api-');
  const vaults = new VaultService({ store, environment: 'sandbox', limits: opts.limits ?? { apiKeysPerOrg: 3, vaultsPerOrg: 5 }, verifyTee: opts.verifyTee, ...(opts.now ? { now: opts.now } : {}) });
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir, ...opts.env }), logger: createLogger('api', 'silent'), vaults,
    coordinator: opts.coordinator as CoordinatorClient | undefined, transactions: opts.transactions?.(vaults),
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const secret = ed25519.utils.randomSecretKey();
  const { org, key } = await vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(secret)));
  const creds: ApiCredentials = { keyId: key.id, secretKey: secret };
  const call = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, c: ApiCredentials = creds, headers?: Record<string, string>) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(c, method, `http://api.test${path}`, payload), ...headers } });
  };
  return { app, vaults, store, org, creds, call };
}

export type { TransactionServiceOptions };
