// Bundles the conformance pages that need a build (React, CodeMirror, Shoelace) into build/, at
// install time (scripts/install.sh), never while the tests run. build/ is git-ignored.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
for (const [entry, out] of [["src/react-select.jsx", "react-select.js"],
                            ["src/codemirror.js", "codemirror.js"],
                            ["src/shoelace.js", "shoelace.js"]]) {
  await build({
    entryPoints: [path.join(here, entry)],
    outfile: path.join(here, "build", out),
    bundle: true, minify: true, format: "iife", jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    nodePaths: [path.join(here, "..", "..", "node_modules")],
    logLevel: "warning",
  });
}
