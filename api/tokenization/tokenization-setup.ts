// The tokenization services as the configuration describes them (docs/platform/tokenization.md
// "Configuration"): every EVM chain with a backend in API_CHAIN_BACKENDS, with the deployer account of
// API_TOKENIZATION_DEPLOYER_KEY_FILE paying for deployments and Safe executions, and the relayer of
// API_TOKENIZATION_RELAYER_KEY_FILE paying for gasless transfers, capped per tenant and chain by
// API_TOKENIZATION_RELAY_CAP_WEI over API_TOKENIZATION_RELAY_WINDOW_SEC. Without the deployer's key file the
// routes exist and reads work; what needs a chain answers 422 naming the chain. Without the relayer's, gasless
// routes answer 422 naming the setting.
import { readFileSync } from 'node:fs';
import type { Hex } from 'viem';
import { ConfigError } from '../../common/config.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { chainBackends, type ApiConfig } from '../config.ts';
import type { Platform } from '../platform.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { AuthorityService } from './authority-service.ts';
import { TokenService } from './token-service.ts';
import { tokenChain, type TokenChain } from './token-chain.ts';
import { isVaultCall, operationIndex, OperationService } from './operation-service.ts';
import { vaultCallIndex, VaultCallService } from './vault-call-service.ts';
import { ConfirmedOperations } from './confirmed-operations.ts';
import { GaslessService } from './gasless-service.ts';
import type { TransactionService } from '../transactions/transaction-service.ts';

export interface Tokenization {
  authorities: AuthorityService;
  tokens: TokenService;
  operations: OperationService;
  /** Calls a vault wallet makes on a token itself: policy-mint, NFT transfers. */
  vaultCalls: VaultCallService;
  gasless: GaslessService;
  /** Told of every operation once it is confirmed (the token's transparency log listens). */
  confirmed: ConfirmedOperations;
  /** The chain of a name, where tokenization runs on it. */
  chain: (name: string) => TokenChain | undefined;
}

export function readDeployerKey(file: string, setting = 'API_TOKENIZATION_DEPLOYER_KEY_FILE (tokenizationDeployerKeyFile)'): Hex {
  const k = readFileSync(file, 'utf8').trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(k)) throw new ConfigError([`${setting}: the file must hold 0x and 64 hex digits`]);
  return k as Hex;
}

/** The relayer's key, another account than the deployer's: both send from their own nonces at once. */
export function readRelayerKey(file: string, deployerKey: Hex): Hex {
  const k = readDeployerKey(file, 'API_TOKENIZATION_RELAYER_KEY_FILE (tokenizationRelayerKeyFile)');
  if (k.toLowerCase() === deployerKey.toLowerCase()) throw new ConfigError(['API_TOKENIZATION_RELAYER_KEY_FILE (tokenizationRelayerKeyFile): the relayer must be another account than the deployer']);
  return k;
}

/** Builds the services over `chains` (tests pass theirs); from the configuration otherwise. */
export function createTokenization(config: ApiConfig, platform: Platform, opts: { chains?: Map<string, TokenChain>; transactions?: TransactionService | undefined; signatureWaitMs?: number; relayReceiptWaitMs?: number; relayPollMs?: number; log?: { warn(obj: object, msg: string): void } } = {}): Tokenization {
  const chains = opts.chains ?? new Map<string, TokenChain>();
  if (!opts.chains && config.tokenizationDeployerKeyFile) {
    const key = readDeployerKey(config.tokenizationDeployerKeyFile);
    const relayerKey = config.tokenizationRelayerKeyFile ? readRelayerKey(config.tokenizationRelayerKeyFile, key) : undefined;
    for (const [chain, url] of Object.entries(chainBackends(config))) {
      const net = evmNetwork(chain);
      if (net) chains.set(chain, tokenChain(net, url, key, relayerKey));
    }
  }
  const chain = (name: string) => chains.get(name);
  const tokens = new TokenService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links: new CustomerLinks(platform.store), chain, clock: platform.clock, log: opts.log });
  // The token's transparency log listens here (api/app.ts) for every confirmed operation.
  const confirmed = new ConfirmedOperations(platform.store, (r) => (isVaultCall(r) ? vaultCallIndex(r) : operationIndex(r)), opts.log);
  return {
    chain,
    tokens,
    confirmed,
    // A vault owner's signature waits for the cluster at most this long in POST signatures; then the vault transaction id is posted.
    operations: new OperationService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, tokens, transactions: opts.transactions, chain, clock: platform.clock, signatureWaitMs: opts.signatureWaitMs ?? 60_000, log: opts.log, confirmed }),
    vaultCalls: new VaultCallService({ store: platform.store, audit: platform.audit, deliveries: platform.deliveries, tokens, transactions: opts.transactions, chain, clock: platform.clock, log: opts.log, confirmed }),
    gasless: new GaslessService({
      store: platform.store, audit: platform.audit, deliveries: platform.deliveries, tokens, chain, clock: platform.clock, capWei: BigInt(config.tokenizationRelayCapWei),
      windowSec: config.tokenizationRelayWindowSec, receiptWaitMs: opts.relayReceiptWaitMs ?? 60_000, pollMs: opts.relayPollMs ?? 1000, log: opts.log,
    }),
    authorities: new AuthorityService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, chain, challengeTtlMs: config.tokenizationChallengeTtlSec * 1000, clock: platform.clock }),
  };
}
