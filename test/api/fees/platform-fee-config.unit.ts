// API_PLATFORM_FEE_BPS and API_PLATFORM_FEE_FIXED (docs/platform/fees.md "The platform fee"): read once at
// boot, validated, with no fee by default; a value out of range or not in base units stops the boot.
import t from 'tap';
import { loadApiConfig } from '../../../api/config.ts';
import { ConfigError } from '../../../common/config.ts';
import { platformFeeOf } from '../../../api/fees/platform-fee.ts';

t.test('defaults: no platform fee', async (t) => {
  const c = loadApiConfig({});
  t.equal(c.platformFeeBps, '0');
  t.equal(c.platformFeeFixed, '0');
  t.same({ ...platformFeeOf(c) }, { payment_kind: '*', asset: '*', basis_points: 0, fixed: 0n, min: 0n, max: null });
});

t.test('set, and refused when malformed', async (t) => {
  const c = loadApiConfig({ API_PLATFORM_FEE_BPS: '10000', API_PLATFORM_FEE_FIXED: '9'.repeat(78) });
  t.equal(platformFeeOf(c).basis_points, 10_000);
  t.equal(platformFeeOf(c).fixed, 10n ** 78n - 1n);
  for (const env of [{ API_PLATFORM_FEE_BPS: '10001' }, { API_PLATFORM_FEE_BPS: '-1' }, { API_PLATFORM_FEE_BPS: '1.5' }, { API_PLATFORM_FEE_BPS: '015' }, { API_PLATFORM_FEE_BPS: '1e3' }, { API_PLATFORM_FEE_FIXED: '01' }, { API_PLATFORM_FEE_FIXED: '1.0' }, { API_PLATFORM_FEE_FIXED: '-5' }]) {
    t.throws(() => loadApiConfig(env), ConfigError, JSON.stringify(env));
  }
});
