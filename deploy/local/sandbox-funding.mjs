// `npm start`'s sandbox funding (docs/platform/funding.md "Sandbox"): on the local anvil, the sandbox
// stablecoin is deployed once by a sandbox issuer account (anvil's tenth deterministic development key,
// funded by anvil at genesis; never a customer's key), and the API runs the sandbox payment rail with it.
// The token's address and the issuer's key file are kept in the data directory; after anvil's state is
// lost (its file deleted), the token is deployed again.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Anvil's development account 9 (mnemonic "test test ... junk", m/44'/60'/0'/0/9): a local sandbox key only. */
const SANDBOX_ISSUER_KEY = '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6';
/**
 * Anvil's development account 8: deploys the escrow contract (docs/platform/escrows.md), which has no
 * owner, so the key keeps no power over it and the API never holds it.
 */
const SANDBOX_ESCROW_DEPLOYER_KEY = '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97';

async function until(check, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The API settings of the sandbox rail and the local stablecoin, deploying it when the chain lacks it. */
export async function sandboxFunding({ dist, data, rpcUrl }) {
  const rpc = async (method, params) => {
    const r = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const body = await r.json();
    if (body.error) throw new Error(body.error.message);
    return body.result;
  };
  await until(async () => (await rpc('eth_chainId', [])) === '0x7a69', 20_000, 'anvil answering');
  const keyFile = join(data, 'sandbox-issuer.key');
  if (!existsSync(keyFile)) writeFileSync(keyFile, `${SANDBOX_ISSUER_KEY}\n`, { mode: 0o600 });
  const stateFile = join(data, 'sandbox-stablecoin.json');
  let token = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')).token : undefined;
  if (!token || (await rpc('eth_getCode', [token, 'latest'])) === '0x') {
    const { deployStablecoin } = await import(join(dist, 'api', 'funding', 'deploy-stablecoin.js'));
    const { evmNetwork } = await import(join(dist, 'core', 'chains', 'evm', 'evm-networks.js'));
    token = await deployStablecoin(evmNetwork('evm-local'), rpcUrl, readFileSync(keyFile, 'utf8').trim());
    writeFileSync(stateFile, JSON.stringify({ token }) + '\n');
    console.log(`[start] sandbox stablecoin (SUSD, 18 decimals) deployed on evm-local at ${token}`);
  }
  // The escrow contract beside it, deployed again as the token is when anvil's state is gone.
  const escrowFile = join(data, 'sandbox-escrow.json');
  let escrow = existsSync(escrowFile) ? JSON.parse(readFileSync(escrowFile, 'utf8')).contract : undefined;
  if (!escrow || (await rpc('eth_getCode', [escrow, 'latest'])) === '0x') {
    const { deployEscrow } = await import(join(dist, 'api', 'escrow', 'deploy-escrow.js'));
    const { evmNetwork } = await import(join(dist, 'core', 'chains', 'evm', 'evm-networks.js'));
    escrow = await deployEscrow(evmNetwork('evm-local'), rpcUrl, SANDBOX_ESCROW_DEPLOYER_KEY);
    writeFileSync(escrowFile, JSON.stringify({ contract: escrow }) + '\n');
    console.log(`[start] escrow contract (TokenEscrow) deployed on evm-local at ${escrow}`);
  }
  return {
    API_FUNDING_RAIL: 'sandbox',
    API_FUNDING_STABLECOINS: `evm-local=${token}`,
    API_ESCROW_CONTRACTS: `evm-local=${escrow}`,
    API_FUNDING_ISSUER_KEY_FILE: keyFile,
    API_SANDBOX_RAIL_SETTLE_MS: process.env.API_SANDBOX_RAIL_SETTLE_MS ?? '3000',
  };
}
