// The compliance status of a quote (docs/platform/fees.md "Compliance checks"): block when a blocking
// check failed, else review when a review check failed, else pass; codes are enumerated.
import t from 'tap';
import { CHECKS, complianceStatus, fail, pass } from '../../../api/payments/compliance.ts';

t.test('block over review over pass', async (t) => {
  t.equal(complianceStatus([]), 'pass', 'no check applies');
  t.equal(complianceStatus([pass('vault_policy'), pass('total_within_limit')]), 'pass');
  t.equal(complianceStatus([pass('vault_policy'), fail('destination_holder_verification', 'verification_not_current')]), 'review');
  t.equal(complianceStatus([fail('source_holder_verification', 'verification_not_current'), fail('vault_policy', 'cap_exceeded')]), 'block');
  t.equal(complianceStatus([fail('total_within_limit', 'payment_limit_exceeded')]), 'block');
  t.same(pass('vault_policy'), { name: 'vault_policy', result: 'pass', code: null });
});

t.test('only the verification checks are review checks', async (t) => {
  t.same(Object.entries(CHECKS).filter(([, v]) => v === 'review').map(([k]) => k).sort(), ['destination_holder_verification', 'source_holder_verification']);
});
