// Loaded into every test process (.taprc node-arg). Coverage is recorded in the test processes only,
// not in the processes they spawn: those run the sources through tsx, whose JavaScript differs from
// that of the test processes' loader (ts-loader.mjs), and V8 coverage of one file from two transpilations cannot be
// merged (the report would pair one transpilation's byte ranges with the other's source map).
process.env._TAPJS_PROCESSINFO_COVERAGE_ = '0';
