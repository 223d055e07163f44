// Runs the examples of README.md, then of docs/*.md, as written. A fenced
// block is an example when the line before it is `<!-- readme-test -->`
// (optionally `<!-- readme-test expects "TEXT" -->`, TEXT a JSON string its
// output must contain; `<!-- readme-test postgresql ... -->` for a block that
// runs as the superuser of RAWTOOL_TEST_PG_URL, given as PGHOST, PGPORT,
// PGUSER and PGDATABASE):
//   - a ```sh block runs with bash -e -o pipefail from the checkout, in the
//     order of the README, so a later block can use what an earlier one built;
//   - a ```json block holding "mcpServers" is an MCP host's configuration:
//     each server is started by the official MCP SDK's stdio client with its
//     command, args and env exactly as written, the way a host starts it, with
//     the folder of the binary the shell blocks built first on PATH (as if
//     installed), and must initialize, list rawtool's tools and answer a call
//     with a reply in rawtool's form;
//   - a ```cmake block is what a program's CMakeLists.txt adds after
//     `add_executable(my_gateway gateway.cpp)`, and the ```cpp block after it
//     is gateway.cpp: both are built against the tree the shell blocks built,
//     installed into a fresh prefix, and the program runs in the folder
//     `rawtool demo --keep` keeps, and must exit 0.
// Exits non-zero, naming the block, on the first that fails.
//
//   node readme_examples.mjs --source-dir . --sdk-dir tests/mcp/client --bin-dir build/release/rawtool

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { delimiter, join, resolve } from "node:path";

function argument(name) {
  const at = process.argv.indexOf(name);
  if (at < 0 || at + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[at + 1];
}

const sourceDir = resolve(argument("--source-dir"));
const binDir = resolve(sourceDir, argument("--bin-dir"));
// The SDK is installed once, for the MCP tests, under tests/mcp/client.
const require = createRequire(join(resolve(argument("--sdk-dir")), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

/// The marked blocks, in order: {line, language, body, expects}.
function markedBlocks(file, markdown) {
  const lines = markdown.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; ++i) {
    const marker = lines[i].match(/^<!-- readme-test( postgresql)?(?: expects (".*"))? -->$/);
    if (!marker) continue;
    const fence = (lines[i + 1] ?? "").match(/^```(\w+)$/);
    if (!fence) throw new Error(`${file}:${i + 1}: a readme-test marker not followed by a fenced block`);
    const end = lines.indexOf("```", i + 2);
    if (end < 0) throw new Error(`${file}:${i + 2}: an unclosed fenced block`);
    blocks.push({
      file,
      line: i + 2,
      language: fence[1],
      body: lines.slice(i + 2, end).join("\n") + "\n",
      postgresql: marker[1] !== undefined,
      expects: marker[2] === undefined ? null : JSON.parse(marker[2]),
    });
    i = end;
  }
  return blocks;
}

/// For a block marked `postgresql`: the test server's superuser as libpq's
/// PG* variables (from RAWTOOL_TEST_PG_URL), or null when none is configured.
function postgresEnvironment() {
  const url = process.env.RAWTOOL_TEST_PG_URL;
  if (!url) return null;
  const parsed = new URL(url);
  const env = { ...process.env, PGHOST: parsed.hostname, PGPORT: parsed.port || "5432", PGUSER: decodeURIComponent(parsed.username) };
  env.PGDATABASE = decodeURIComponent(parsed.pathname.slice(1)) || "postgres";
  if (parsed.password) env.PGPASSWORD = decodeURIComponent(parsed.password);
  return env;
}

function runShell(block) {
  let env = process.env;
  if (block.postgresql) {
    env = postgresEnvironment();
    if (env === null) {
      if (process.env.RAWTOOL_REQUIRE_PG === "1") throw new Error("RAWTOOL_REQUIRE_PG=1 but RAWTOOL_TEST_PG_URL is not set");
      console.log(`${block.file}:${block.line}: RAWTOOL_TEST_PG_URL is not set: this PostgreSQL block did NOT run`);
      return "";
    }
  }
  const run = spawnSync("bash", ["-e", "-o", "pipefail", "-c", block.body], {
    cwd: sourceDir,
    env,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) {
    throw new Error(`exit status ${run.status ?? run.signal}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
  if (block.expects !== null && !run.stdout.includes(block.expects)) {
    throw new Error(`stdout does not contain ${JSON.stringify(block.expects)}\n--- stdout\n${run.stdout}`);
  }
  return run.stdout;
}

async function runHostConfiguration(block) {
  const servers = JSON.parse(block.body).mcpServers;
  if (!servers || Object.keys(servers).length === 0) throw new Error("no mcpServers in the block");
  // As if installed: the binary the shell blocks built is found on PATH.
  process.env.PATH = binDir + delimiter + process.env.PATH;
  for (const [name, server] of Object.entries(servers)) {
    const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env, stderr: "pipe" });
    const client = new Client({ name: "readme-host", version: "1" });
    try {
      await client.connect(transport);
      const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
      // The configuration names no catalog, so there is no certified_query.
      const wanted = ["describe_catalog", "describe_schema", "raw_sql"];
      if (JSON.stringify(tools) !== JSON.stringify(wanted)) throw new Error(`${name}: tools ${JSON.stringify(tools)}`);
      // Whatever the database answers (the one named need not exist here),
      // the reply is rawtool's: a text surface of its lines and a structured one.
      const reply = await client.callTool({ name: "raw_sql", arguments: { sql: "SELECT 1 AS one" } });
      const text = reply.content?.[0]?.text ?? "";
      if (!text.startsWith("rawtool: ") || typeof reply.structuredContent !== "object") {
        throw new Error(`${name}: raw_sql replied ${JSON.stringify(reply)}`);
      }
    } finally {
      await client.close();
    }
  }
}

/// Runs `command` with `args`; its stdout, or throws with both outputs.
function mustRun(what, command, args, options = {}) {
  const run = spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, ...options });
  if (run.status !== 0) {
    throw new Error(`${what}: exit status ${run.status ?? run.signal}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
  return run.stdout;
}

/// Builds a ```cpp block with the ```cmake block before it against the tree
/// the shell blocks built (installed into a fresh prefix, as a gateway would
/// find it) and runs it in the folder `rawtool demo --keep` keeps.
function runProgram(block, cmake) {
  if (cmake === null) throw new Error("no ```cmake block before it says how to build it");
  const work = mkdtempSync(join(tmpdir(), "rawtool-docs-"));
  let kept = null;
  try {
    const prefix = join(work, "prefix");
    mustRun("cmake --install", "cmake", ["--install", resolve(binDir, ".."), "--prefix", prefix]);
    const project = join(work, "project");
    mkdirSync(project);
    writeFileSync(join(project, "CMakeLists.txt"),
      "cmake_minimum_required(VERSION 3.25)\nproject(my_gateway LANGUAGES CXX)\nset(CMAKE_CXX_STANDARD 20)\n" +
      "add_executable(my_gateway gateway.cpp)\n" + cmake.body);
    writeFileSync(join(project, "gateway.cpp"), block.body);
    const build = join(work, "build");
    mustRun("configure", "cmake", ["-S", project, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
      `-DCMAKE_PREFIX_PATH=${prefix}`]);
    mustRun("build", "cmake", ["--build", build]);
    const demo = mustRun("rawtool demo --keep", join(binDir, "rawtool"), ["demo", "--keep"]);
    const marker = "The demo's files are kept in ";
    const at = demo.indexOf(marker);
    const end = demo.indexOf(": reviews.db", at);
    if (at < 0 || end < 0) throw new Error(`rawtool demo --keep named no folder:\n${demo}`);
    kept = demo.slice(at + marker.length, end);
    const output = mustRun("the program", join(build, "my_gateway"), [], { cwd: kept });
    if (block.expects !== null && !output.includes(block.expects)) {
      throw new Error(`stdout does not contain ${JSON.stringify(block.expects)}\n--- stdout\n${output}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
    if (kept !== null) rmSync(kept, { recursive: true, force: true });
  }
}

const docs = readdirSync(join(sourceDir, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => join("docs", name));
const blocks = ["README.md", ...docs].flatMap((file) => markedBlocks(file, readFileSync(join(sourceDir, file), "utf8")));
const kinds = blocks.map((block) => block.language);
for (const wanted of ["sh", "json", "cmake", "cpp"]) {
  if (!kinds.includes(wanted)) {
    console.error(`README.md and docs: expected marked ${wanted} blocks, found ${JSON.stringify(kinds)}`);
    process.exit(1);
  }
}
let cmake = null;  // the last ```cmake block, for the ```cpp block after it
for (const block of blocks) {
  try {
    if (block.language === "sh") runShell(block);
    else if (block.language === "json") await runHostConfiguration(block);
    else if (block.language === "cmake") cmake = block;
    else if (block.language === "cpp") runProgram(block, cmake);
    else throw new Error(`no way to run a ${block.language} block`);
    console.log(`${block.file}:${block.line}: ${block.language} block ${block.language === "cmake" ? "kept for the program after it" : "ran as written"}`);
  } catch (error) {
    console.error(`${block.file}:${block.line}: ${block.language} block failed: ${error.message}`);
    process.exit(1);
  }
}

// The demo (.ci/demo, the README's first command) ends with next steps: each
// that runs the binary the README's build made must work as printed.
const demo = readFileSync(join(sourceDir, ".ci", "demo"), "utf8");
const next = demo.slice(demo.indexOf("\nnext:\n") + 7, demo.indexOf("\nNEXT\n"));
const steps = next.split("\n").map((line) => line.replace(/\s+#.*$/, "").trim()).filter((line) => line.startsWith("./build/release/"));
if (steps.length < 2) {
  console.error(`.ci/demo: expected next steps that run ./build/release/..., found ${JSON.stringify(next)}`);
  process.exit(1);
}
for (const step of steps) {
  const run = spawnSync("bash", ["-e", "-o", "pipefail", "-c", step], { cwd: sourceDir, encoding: "utf8" });
  if (run.status !== 0) {
    console.error(`.ci/demo: the next step ${step} exited ${run.status}: ${run.stderr}`);
    process.exit(1);
  }
  console.log(`.ci/demo: next step ran as printed: ${step}`);
}
