// The custody tier as the API's TypeBox schemas name it: the one tier list (core/tiers.ts), in its order.
import { Type, type TLiteral, type TUnion } from '@sinclair/typebox';
import { TIER_NAMES, type TierName } from '../tiers.ts';

// A union over a mapped array is typed with an array of members, which TypeBox's decoded type (what the
// route handlers and the SDK see) reduces to never; typed as one member holding every tier name instead.
export const TierSchema = Type.Union(TIER_NAMES.map((t) => Type.Literal(t))) as TUnion<[TLiteral<TierName>]>;
