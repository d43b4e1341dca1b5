// The compiler of the routes' response serializers: Fastify's own (fast-json-stringify), with each
// serializer kept for the life of the process under the schema it was compiled from. Compiling them is
// most of the cost of making an app ready; a process that builds more than one app (the tests build one
// per case) compiles each distinct schema once. A serializer is a pure function of its schema and of the
// compiler's options and shared schemas, which are part of the key. Route files declare many schemas
// inline (a new object each time the routes are registered), so the key is the schema's JSON text.
import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';

type Serializer = ReturnType<ReturnType<SerializerFactory>>;

const byText = new Map<string, Serializer>();
/** Per compiler context: the same schema object again (a module-level schema) skips making its text. */
const byObject = new Map<string, WeakMap<object, Serializer>>();
const fastJsonStringify = SerializerSelector();

export const cachedSerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compile = fastJsonStringify(externalSchemas, options);
  const context = JSON.stringify({ externalSchemas, options });
  let objects = byObject.get(context);
  if (!objects) byObject.set(context, (objects = new WeakMap()));
  const seen = objects;
  return (route) => {
    const schema = route.schema;
    const known = typeof schema === 'object' && schema !== null ? seen.get(schema) : undefined;
    if (known) return known;
    const key = `${context}\n${JSON.stringify(schema)}`;
    let serializer = byText.get(key);
    if (!serializer) {
      serializer = compile(route);
      byText.set(key, serializer);
    }
    if (typeof schema === 'object' && schema !== null) seen.set(schema, serializer);
    return serializer;
  };
};
