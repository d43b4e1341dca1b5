// Errors in api/ do not choose an HTTP status (docs/architecture.md "Error model"): the lint rule in
// eslint.config.js refuses an error built with a status number, the pattern of the old ApiError, and
// leaves the CustodyError that replaced it alone; only the mapping (api/errors.ts) and the SDK, which
// reads statuses off answers, may.
import t from 'tap';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

/** The no-restricted-syntax findings for `code` placed at `filePath`. */
async function lint(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

const OLD = "class SomeError extends Error {}\nexport const f = () => {\n  throw new SomeError(404, 'not_found', 'no such vault');\n};\n";
const NEW = "import { CustodyError } from '../../core/errors/custody-error.ts';\nexport const f = () => {\n  throw new CustodyError('not_found', 'no such vault');\n};\n";

t.test('an error built with an HTTP status is refused in api/', async (t) => {
  for (const file of ['api/vaults/example.ts', 'api/routes/v1/example.ts', 'api/auth/example.ts', 'api/example.ts']) {
    const found = await lint(file, OLD);
    t.equal(found.length, 1, file);
    t.match(found[0], /CustodyError/, 'the message names the way out');
  }
  const variants = [
    "class ApiError extends Error {}\nexport const e = new ApiError(429, 'rate_limited', 'slow down');\n",
    "const errors = { HttpError: class extends Error {} };\nexport const e = new errors.HttpError(503, 'down');\n",
    "const httpError = (s: number, m: string) => new Error(`${s} ${m}`);\nexport const e = httpError(401, 'who are you');\n",
  ];
  for (const code of variants) t.equal((await lint('api/webhooks/example.ts', code)).length, 1, code.split('\n')[1] ?? code);
});

t.test('a CustodyError, statuses elsewhere, and the exempt files are clean', async (t) => {
  t.same(await lint('api/vaults/example.ts', NEW), [], 'new CustodyError(code, message)');
  t.same(await lint('api/routes/v1/example.ts', "export const f = (reply: { code(n: number): unknown }) => reply.code(201);\nexport const b = new Uint8Array(512);\nexport const e = new Error('404');\n"), [], 'reply.code(201), a buffer size, a string message');
  t.same(await lint('api/errors.ts', OLD), [], 'the mapping itself');
  t.same(await lint('api/sdk/example.ts', OLD), [], 'the SDK, which reads statuses off answers');
  t.same(await lint('node/runtime/example.ts', OLD), [], 'outside api/');
});
