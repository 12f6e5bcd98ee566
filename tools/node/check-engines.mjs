// Checks that the Node.js running this script lies inside the `engines.node` range of every package that the given
// npm lock files pin (lockfileVersion 2 or 3: `packages[path].engines.node`), using the semver package npm itself
// uses. Prints one line per package whose range excludes this Node and exits 1; exits 0 when all accept it.
// Usage: node check-engines.mjs LOCKFILE...
import { readFileSync } from "node:fs";
import semver from "semver";

const version = process.version;
const refused = [];
for (const lockPath of process.argv.slice(2)) {
  const lock = JSON.parse(readFileSync(lockPath, "utf8"));
  for (const [path, pkg] of Object.entries(lock.packages ?? {})) {
    const range = pkg && pkg.engines && typeof pkg.engines === "object" ? pkg.engines.node : undefined;
    if (path === "" || typeof range !== "string" || pkg.optional) continue;
    if (!semver.satisfies(version, range, { includePrerelease: true })) {
      refused.push(`${path.replace(/^.*node_modules\//, "")} ${pkg.version ?? ""} needs node ${range} (${lockPath})`);
    }
  }
}
if (refused.length > 0) {
  console.error(`Node.js ${version} is outside the engines range of ${refused.length} pinned package(s):`);
  for (const line of refused) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`Node.js ${version} satisfies every pinned package's engines range`);
