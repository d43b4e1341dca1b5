// The custody tiers (DESIGN.md): hosted (2-of-3 service nodes), self (a service node and the
// customer's own node) and customer_tee (a service node and the customer's enclave node). The API, the
// coordinator, the nodes and the SDK all name them; this is the one list.

export type TierName = 'hosted' | 'self' | 'customer_tee';

export const TIER_NAMES: readonly TierName[] = ['hosted', 'self', 'customer_tee'];
