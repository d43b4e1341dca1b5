// POST /v1/wallets/{id}/qr: EIP-681 and BIP-21 payment-request URIs, exact amounts, and a QR code whose
// PNG an independent decoder (jsQR over pngjs) reads back as exactly the URI. Bad input is 400, another
// customer's wallet 404, a key without wallet.read 403.
import t from 'tap';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import { getAddress } from 'viem';
import { walletApp } from './wallet-app.ts';
import { bip21Uri, evmPaymentUri, satsToBtc, MAX_SATS } from '../../../api/wallets/payment-uri.ts';

// jsqr is CommonJS whose types name an ES default export: Node hands over module.exports, which carries it too.
const jsQR = jsQRModule.default;

/** The text of the QR code in a `data:image/png;base64,` URL, read by jsQR (not the encoder's own code). */
function decodePng(dataUrl: string): string | undefined {
  const prefix = 'data:image/png;base64,';
  if (!dataUrl.startsWith(prefix)) return undefined;
  const png = PNG.sync.read(Buffer.from(dataUrl.slice(prefix.length), 'base64'));
  return jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.byteLength), png.width, png.height)?.data;
}

t.test('BIP-21 amounts are written exactly from satoshis', async (t) => {
  const cases: [bigint, string][] = [[1n, '0.00000001'], [150_000n, '0.0015'], [100_000_000n, '1'], [123_456_789n, '1.23456789'], [MAX_SATS, '21000000'], [2_099_999_997_690_000n, '20999999.9769']];
  for (const [sats, btc] of cases) t.equal(satsToBtc(sats), btc, `${sats} sat`);
  t.equal(bip21Uri('bcrt1qexample', { amountSats: 150_000n, label: 'Acme & Co', message: 'order #7/8 ü' }), 'bitcoin:bcrt1qexample?amount=0.0015&label=Acme%20%26%20Co&message=order%20%237%2F8%20%C3%BC');
  t.equal(bip21Uri('bcrt1qexample'), 'bitcoin:bcrt1qexample', 'no amount: any amount');
  t.throws(() => bip21Uri('bcrt1qexample', { amountSats: MAX_SATS + 1n }), { code: 'invalid_request' }, 'more than 21 million BTC');
  t.throws(() => bip21Uri('bcrt1qexample', { amountSats: 0n }), { code: 'invalid_request' });
});

t.test('EIP-681: native value, and an ERC-20 transfer call', async (t) => {
  const to = '0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359';
  const token = '0x6b175474e89094c44da98b954eedeac495271d0f';
  t.equal(evmPaymentUri(1n, to, { kind: 'native' }, 2_014_000_000_000_000_000n), 'ethereum:0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359@1?value=2014000000000000000', 'the EIP\'s own example address, checksummed');
  t.equal(evmPaymentUri(1n, to, { kind: 'erc20', contract: token }, 1n), `ethereum:${getAddress(token)}@1/transfer?address=0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359&uint256=1`);
  t.equal(evmPaymentUri(31337n, to, { kind: 'native' }), 'ethereum:0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359@31337');
  t.throws(() => evmPaymentUri(1n, to, { kind: 'native' }, 2n ** 256n), { code: 'invalid_request' });
});

t.test('the route answers the URI and a QR code that decodes to it', async (t) => {
  const s = await walletApp(t);
  const { vault } = await s.activeVault(s.acme.org);
  const evm = await s.wallet(s.acme.org, vault.id);
  const btc = await s.wallet(s.acme.org, vault.id, 'bitcoin-regtest', 0, 'p2wpkh');
  const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

  const cases: [string, string, unknown, string][] = [
    ['native with an amount', evm.id, { amount: '1500000000000000000' }, `ethereum:${getAddress(evm.address)}@31337?value=1500000000000000000`],
    ['native, any amount, no body', evm.id, undefined, `ethereum:${getAddress(evm.address)}@31337`],
    ['an ERC-20 token', evm.id, { asset: `evm-local:${token}`, amount: '250' }, `ethereum:${token}@31337/transfer?address=${getAddress(evm.address)}&uint256=250`],
    ['bitcoin with label and message', btc.id, { amount: '12345', label: 'Invoice 42', message: 'thanks!' }, `bitcoin:${btc.address}?amount=0.00012345&label=Invoice%2042&message=thanks!`],
  ];
  for (const [what, id, body, uri] of cases) {
    const r = await s.bearer('POST', `/v1/wallets/${id}/qr`, body);
    t.equal(r.statusCode, 200, `${what}: ${r.body.slice(0, 200)}`);
    const got = r.json() as { uri: string; png: string; svg: string; amount: string | null; asset: string };
    t.equal(got.uri, uri, what);
    t.equal(decodePng(got.png), uri, `${what}: the PNG decodes to the URI`);
    t.match(got.svg, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, `${what}: an SVG`);
  }
  const blank = new PNG({ width: 64, height: 64 });
  blank.data.fill(255);
  t.equal(decodePng(`data:image/png;base64,${PNG.sync.write(blank).toString('base64')}`), undefined, 'the decoder reads nothing from a blank image');

  const bad: [string, string, unknown][] = [
    ['a zero amount', evm.id, { amount: '0' }],
    ['a leading zero', evm.id, { amount: '01' }],
    ['a decimal amount', evm.id, { amount: '1.5' }],
    ['a number, not a string', evm.id, { amount: 5 }],
    ['more than 2^256 - 1', evm.id, { amount: (2n ** 256n).toString() }],
    ['an asset of another chain', evm.id, { asset: `ethereum:${token}` }],
    ['a label on EVM (EIP-681 has none)', evm.id, { label: 'x' }],
    ['a token on Bitcoin', btc.id, { asset: `bitcoin-regtest:${token}` }],
    ['more than 21 million BTC', btc.id, { amount: (MAX_SATS + 1n).toString() }],
    ['a control character in the message', btc.id, { message: 'a\nb' }],
    ['an unknown field', btc.id, { memo: 'x' }],
  ];
  for (const [what, id, body] of bad) {
    const r = await s.bearer('POST', `/v1/wallets/${id}/qr`, body);
    t.equal(r.statusCode, 400, what);
    t.equal(r.json().code, 'invalid_request', what);
  }
  t.equal((await s.bearer('POST', `/v1/wallets/${evm.id}/qr`, {}, s.globex.owner)).statusCode, 404, 'another customer\'s wallet');
  t.equal((await s.bearer('POST', `/v1/wallets/${evm.id}/qr`, {}, await s.acme.key('brand_manager'))).statusCode, 403, 'no wallet.read');
});
