// RFC 6238 TOTP against the RFC's own appendix B vectors, and the one-step skew the MFA check allows.
import t from 'tap';
import { totp, verifyTotp } from '../../../api/tenancy/totp.ts';

t.test('RFC 6238 appendix B (SHA-1, 8 digits truncated to 6)', async (t) => {
  const secret = Buffer.from('12345678901234567890');
  // RFC 6238 Appendix B lists 94287082, 07081804, 14050471 for these times; six digits are the last six.
  for (const [time, code] of [[59, '287082'], [1111111109, '081804'], [1111111111, '050471'], [1234567890, '005924']] as const) t.equal(totp(secret, time), code);
  t.ok(verifyTotp(secret, '287082', 59 + 30), 'one step of skew accepted');
  t.notOk(verifyTotp(secret, '287082', 59 + 90));
  t.notOk(verifyTotp(secret, 'abcdef', 59));
});
