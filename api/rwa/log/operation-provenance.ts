// Executed operations in a token's transparency log (docs/platform/transparency-log.md "Provenance"): each
// confirmed operation of the token (a Safe operation, a module execution, a call by a vault wallet) is an
// `operation` entry naming its transaction and what the chain must show for it; the `chain_operations` check
// of provenance/verify reads each named transaction's receipt from the chain and compares, and finds every
// confirmed operation of the token in the log.
import { getAddress, keccak256, parseEventLogs, type Hex } from 'viem';
import type { TokenOperationRecord } from '../../tokenization/records.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import { SAFE_ABI } from '../../tokenization/chain/safe-abi.ts';
import type { ProvenanceChecker, ProvenanceProblem } from './provenance.ts';

export const OPERATION_CHAIN_CHECK = 'chain_operations';

/** The entry of a confirmed operation: its transaction and what its receipt must show. */
export function operationEntryBody(op: TokenOperationRecord): Record<string, unknown> {
  const common = { operation_id: op.id, kind: op.kind, tx_hash: op.tx_hash, chain_id: op.chain_id };
  if (op.via === 'vault_transaction') {
    return { ...common, via: 'vault_transaction', from: op.vault_call.from, to: op.vault_call.to, data_keccak: keccak256(op.vault_call.data as Hex) };
  }
  if (op.module_execution) return { ...common, via: 'module', safe: op.safe, module: op.module_execution.module, safe_tx_hash: op.safe_tx_hash };
  return { ...common, via: 'safe', safe: op.safe, safe_tx_hash: op.safe_tx_hash, safe_nonce: op.safe_tx.nonce };
}

const lower = (x: unknown) => String(x).toLowerCase();

export function operationChainChecker(tokenization: Pick<Tokenization, 'tokens' | 'operations' | 'chain'>): ProvenanceChecker {
  return {
    name: OPERATION_CHAIN_CHECK,
    async check(ctx) {
      const problems: ProvenanceProblem[] = [];
      const token = await tokenization.tokens.get(ctx.scope, ctx.tokenId);
      // Read only when there is something to compare: a token whose chain this service does not run has none.
      const chainClient = () => {
        const c = tokenization.chain(token.chain)?.client;
        if (!c) throw new Error(`tokenization does not run on ${token.chain} here`);
        return c;
      };
      const logged = new Set<string>();
      let checked = 0;
      for (const entry of ctx.entries) {
        if (entry?.kind !== 'operation') continue;
        checked++;
        const b = entry.body;
        const at = { index: entry.index, kind: entry.kind };
        logged.add(String(b.operation_id));
        const client = chainClient();
        const receipt = typeof b.tx_hash === 'string' ? await client.getTransactionReceipt({ hash: b.tx_hash as Hex }).catch(() => undefined) : undefined;
        if (!receipt) {
          problems.push({ ...at, detail: `operation ${String(b.operation_id)}: its transaction ${String(b.tx_hash)} is not on chain` });
          continue;
        }
        if (receipt.status !== 'success') {
          problems.push({ ...at, detail: `operation ${String(b.operation_id)}: its transaction ${receipt.transactionHash} reverted` });
          continue;
        }
        if (b.via === 'vault_transaction') {
          const tx = await client.getTransaction({ hash: receipt.transactionHash });
          if (lower(tx.from) !== lower(b.from) || lower(tx.to) !== lower(b.to) || keccak256(tx.input) !== b.data_keccak) {
            problems.push({ ...at, detail: `operation ${String(b.operation_id)}: transaction ${receipt.transactionHash} is not the logged call from ${String(b.from)} to ${String(b.to)}` });
          }
          continue;
        }
        const events = parseEventLogs({ abi: SAFE_ABI, logs: receipt.logs.filter((l) => lower(l.address) === lower(b.safe)) });
        const shown = b.via === 'module'
          ? events.some((e) => e.eventName === 'ExecutionFromModuleSuccess' && lower(e.args.module) === lower(b.module))
          : events.some((e) => e.eventName === 'ExecutionSuccess' && lower(e.args.txHash) === lower(b.safe_tx_hash));
        if (!shown) {
          problems.push({ ...at, detail: `operation ${String(b.operation_id)}: transaction ${receipt.transactionHash} shows no ${b.via === 'module' ? `execution by module ${String(b.module)}` : `execution of SafeTx ${String(b.safe_tx_hash)}`} on Safe ${getAddress(String(b.safe))}` });
        }
      }
      // The other way: every confirmed operation of the token is in the log (one still being appended is not yet).
      let cursor: string | undefined;
      do {
        const page = await tokenization.operations.list(ctx.scope, ctx.tokenId, { state: 'confirmed' }, cursor, 100);
        for (const op of page.data) {
          checked++;
          if (!logged.has(op.id) && !(op as { log_pending?: boolean }).log_pending) problems.push({ detail: `operation ${op.id} (${op.kind}) is confirmed on chain by ${op.tx_hash} and not in the log` });
        }
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return { checked, problems };
    },
  };
}
