// RFC 6238 TOTP against the RFC's own appendix B vectors (all three hashes, through the otpauth library),
// the one-step skew the MFA check allows, and the step rule: a code is accepted only for a step after the
// last one accepted.
import t from 'tap';
import { matchTotp, totp, totpStep, type TotpAlgorithm } from '../../../api/tenancy/totp.ts';

const seeds: Record<TotpAlgorithm, Buffer> = {
  SHA1: Buffer.from('12345678901234567890'),
  SHA256: Buffer.from('12345678901234567890123456789012'),
  SHA512: Buffer.from('1234567890123456789012345678901234567890123456789012345678901234'),
};
// RFC 6238 appendix B: time, then the 8-digit TOTP for SHA-1, SHA-256, SHA-512.
const appendixB: [number, string, string, string][] = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

t.test('RFC 6238 appendix B, every row and hash (8 digits); 6 digits are the last six', async (t) => {
  for (const [time, sha1, sha256, sha512] of appendixB) {
    t.equal(totp(seeds.SHA1, time, 8, 'SHA1'), sha1, `SHA-1 at ${time}`);
    t.equal(totp(seeds.SHA256, time, 8, 'SHA256'), sha256, `SHA-256 at ${time}`);
    t.equal(totp(seeds.SHA512, time, 8, 'SHA512'), sha512, `SHA-512 at ${time}`);
    t.equal(totp(seeds.SHA1, time), sha1.slice(2), `the factor's 6-digit SHA-1 code at ${time}`);
  }
});

t.test('matchTotp: current step and one step of skew either way; the step, never one already accepted', async (t) => {
  const secret = seeds.SHA1;
  const at = 1111111111;
  const step = totpStep(at);
  t.equal(matchTotp(secret, totp(secret, at), at), step, 'the current code matches the current step');
  t.equal(matchTotp(secret, totp(secret, at - 30), at), step - 1, 'one step behind');
  t.equal(matchTotp(secret, totp(secret, at + 30), at), step + 1, 'one step ahead');
  t.equal(matchTotp(secret, totp(secret, at - 60), at), undefined, 'two steps behind is refused');
  t.equal(matchTotp(secret, totp(secret, at + 60), at), undefined, 'two steps ahead is refused');
  t.equal(matchTotp(secret, totp(secret, at), at, step), undefined, 'the step already accepted is refused');
  t.equal(matchTotp(secret, totp(secret, at - 30), at, step), undefined, 'an earlier step than the last accepted is refused');
  t.equal(matchTotp(secret, totp(secret, at + 30), at, step), step + 1, 'a later step is still good');
  for (const bad of ['abcdef', '12345', '1234567', '', ' 123456']) t.equal(matchTotp(secret, bad, at), undefined, JSON.stringify(bad));
});
