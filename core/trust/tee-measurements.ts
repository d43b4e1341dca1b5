// The enclave measurements an organization allows (docs/trust.md "Enrolled nodes"): sets of PCR index ->
// 48-byte SHA-384 value. One rule for the API (which refuses a bad set at once), the signer nodes (which
// apply PUT /v1/tee/measurements from the trust log) and the coordinator (which looks before seating).

/** The PCRs a set may name: image, kernel, application, IAM role, instance, signing certificate. */
const PCR_INDEX = /^(0|1|2|3|4|8)$/;
const PCR_VALUE = /^[0-9a-fA-F]{96}$/;

/** Why `set` is not a measurement set an organization may allow; undefined when it is one. */
export function measurementSetProblem(set: unknown): string | undefined {
  if (typeof set !== 'object' || set === null || Array.isArray(set)) return 'each measurement set is an object of PCR index -> hex';
  const entries = Object.entries(set as Record<string, unknown>);
  if (!entries.some(([i]) => i === '0')) return 'a measurement set names PCR0 (the enclave image)';
  for (const [i, v] of entries) {
    if (!PCR_INDEX.test(i)) return `PCR${i} is not one a measurement set may name (0, 1, 2, 3, 4, 8)`;
    if (typeof v !== 'string' || !PCR_VALUE.test(v)) return `PCR${i} must be 48 bytes of hex`;
    if (/^0+$/.test(v)) return `PCR${i} is all zero: a debug-mode enclave is never allowed`;
  }
  return undefined;
}

/** A valid set with its values in lower case. */
export function normalizeMeasurementSet(set: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(set).map(([i, v]) => [i, v.toLowerCase()]));
}

/** Whether attested `pcrs` (index -> lower-case hex) match one allowed set: every PCR the set names. */
export function pcrsAllowed(allowed: readonly Record<string, string>[], pcrs: Readonly<Record<string, string>>): boolean {
  return allowed.some((set) => Object.entries(set).every(([i, v]) => Object.hasOwn(pcrs, i) && pcrs[i] === v.toLowerCase()));
}
