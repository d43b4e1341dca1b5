// Key export (docs/export.md): one party, no messages. The node seals its own share, with what
// reconstruction needs (party index, group key, chain code, its verification share), to the recipient
// X25519 key of the customer's signed export request, by HPKE (core/export/export-share.ts), once its
// own checks allow (authorization/export-authorizer.ts: the request in the trust log, the approvals,
// the delay on its own clock). Until then it reports `waiting` with the time it will seal. The vault
// is marked exported in the node's records; it keeps signing (an export refuses nothing by itself).
import { hexToBytes } from '@noble/hashes/utils.js';
import { exportParams, exportResult } from '../../../core/session/session-contract.ts';
import type { ExportSessionParams } from '../../../core/session/session-params.ts';
import { sealExportShare } from '../../../core/export/export-share.ts';
import { Fn } from '../../../core/keys/point.ts';
import { readParams } from '../protocols/run-protocol.ts';
import { SessionRefused } from '../session-host.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import { authorizeExport, type ExportGrant } from '../authorization/export-authorizer.ts';
import { defaultExportGovernance } from '../authorization/export-governance.ts';
import type { ExportRecords } from '../../storage/export-records.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';


export function exportShareSession(deps: NodeProtocolDeps): SessionKind<ExportSessionParams, StoredShare, ExportGrant, never> {
  const { vault, trust } = deps;
  const governance = deps.exportGovernance ?? defaultExportGovernance();
  const now = deps.exportNow ?? Date.now;
  const records: ExportRecords | undefined = deps.exportRecords;
  const recordsOf = (): ExportRecords => {
    if (records) return records;
    throw new SessionRefused('unavailable', 'this node keeps no export records');
  };
  return {
    authorization: {
      by: 'customer',
      evidence: 'the owner\'s export request in its trust log, signed by an active API key, approvals of the governance\'s approvers, and the delay passed on this node\'s clock since it first saw the request',
    },
    parse: (ctx) => readParams(exportParams, ctx.open.params),
    async preflight(_ctx, p) {
      const held = await vault.current(p.keyId);
      if (!held) throw new SessionRefused('unknown_key', `this node holds no current share of ${p.keyId}`);
      return held;
    },
    authorize: ({ params: p, local }) => authorizeExport(
      { trust, governance, records: recordsOf(), now },
      { owner: local.owner, keyId: p.keyId, requestId: p.requestId, trustLog: p.trustLog, approvals: p.approvals },
    ),
    run({ ctx, params: p, local, grant }) {
      return {
        start: async () => {
          const base = { readyAt: grant.readyAt, approvals: grant.approvals, approvalsNeeded: grant.approvalsNeeded };
          if (!grant.ready) return { kind: 'done', out: [], result: exportResult.encode({ status: 'waiting', ...base }) };
          const me = ctx.parties.find((x) => x.index === ctx.myIndex);
          if (!me) throw new SessionRefused('not_a_party', 'this node is not a party of the session');
          const { pkg } = local.key;
          const party = local.key.share.id;
          const verificationShare = pkg.verificationShares[String(party)];
          if (!verificationShare) throw new SessionRefused('package_mismatch', `the package of ${p.keyId} names no verification share for party ${party}`);
          const share = Fn.toBytes(local.key.share.scalar());
          try {
            const sealed = await sealExportShare(hexToBytes(grant.request.recipientKey), {
              org: local.owner, vaultId: p.keyId, requestId: p.requestId, nodeId: me.nodeId, requestHash: hexToBytes(grant.request.requestHash),
            }, {
              org: local.owner, vaultId: p.keyId, requestId: p.requestId, nodeId: me.nodeId, epoch: pkg.epoch, threshold: pkg.threshold, party,
              groupKey: hexToBytes(pkg.groupKey), chainCode: hexToBytes(pkg.chainCode), verificationShare: hexToBytes(verificationShare), share,
            });
            // Marked exported before the ciphertext leaves: the node's own record of what it released.
            await recordsOf().sealed(p.keyId, p.requestId, now());
            return { kind: 'done', out: [], result: exportResult.encode({ status: 'sealed', ...base, nodeId: sealed.nodeId, party, enc: sealed.enc, ciphertext: sealed.ciphertext }) };
          } finally {
            share.fill(0);
          }
        },
        deliver: () => ({ kind: 'abort', code: 'bad_message', message: 'no messages in this session', culprits: [] }),
        dispose() {},
      };
    },
  };
}
