// Schema shapes the route files share.
import { Type, type TUnsafe } from '@sinclair/typebox';

/** A field that is `t` or null. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

/** One of the given strings, typed as their union. */
export const literals = <T extends string>(xs: readonly T[]) => Type.Union(xs.map((x) => Type.Literal(x))) as unknown as TUnsafe<T>;
