// rawtool's Prometheus metrics, read two ways: GET /metrics after known calls
// (exact counts, and no label taken from the agent or the database), and a
// real Prometheus server (Debian's `prometheus`) scraping a running rawtool,
// asked through its HTTP API. Both transports: HTTP with two tokens, and stdio
// through the SDK's stdio client.
//
//   node metrics.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { argument, sha256Hex, startHttpServer } from "./http_server.mjs";

const binary = argument("--binary");
const prometheusBinary = "/usr/bin/prometheus";
const tokens = { alice: "metrics-alice-5f1e", bob: "metrics-bob-07ad" };
// Words an agent or a row could try to turn into a label.
const planted = "planted_label_text";
const config = {
  databases: [
    { label: "main", path: ":memory:" },
    { label: "scratch", path: ":memory:" },
    { label: "slow", path: ":memory:", limits: { statement_timeout_ms: 300 } },
  ],
  catalog: "catalog.json",
  http: {
    tokens: [
      { name: "alice", sha256: sha256Hex(tokens.alice) },
      { name: "bob", sha256: sha256Hex(tokens.bob), databases: ["scratch"] },
    ],
  },
};
const catalog = {
  queries: [
    {
      name: "square",
      description: "A number squared.",
      sql: "SELECT ?1 * ?1 AS squared",
      database: "scratch",
      parameters: [{ name: "n", type: "integer" }],
    },
  ],
};

/// The metrics URL from the operator log's "metrics_serving" event.
async function metricsUrl(log) {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    const line = log()
      .split("\n")
      .find((l) => l.includes('"event":"metrics_serving"'));
    if (line) return JSON.parse(line).url;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("no metrics_serving event in the operator log");
}

/// The samples of GET /metrics: { "name{labels}": value }.
async function scrape(url) {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  const text = await response.text();
  const samples = {};
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return { text, samples };
}

function sample(samples, name, labels) {
  const key = `${name}{${Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}="${v}"`)
    .join(",")}}`;
  return samples[key];
}

async function connectAs(url, token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "rawtool-metrics-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

let server;
let metrics;
before(async () => {
  server = await startHttpServer(binary, config, { extraArgs: ["--metrics", "127.0.0.1:0"], files: { "catalog.json": catalog } });
  assert.ok(server.url, "the server did not start");
  metrics = await metricsUrl(server.log);
});
after(async () => {
  if (server?.url) assert.equal(await server.stop(), 0);
});

test("GET /metrics counts each call by tool, database and outcome, and no label holds the agent's or the database's words", async () => {
  const alice = await connectAs(server.url, tokens.alice);
  const bob = await connectAs(server.url, tokens.bob);
  for (let i = 0; i < 3; ++i) await alice.callTool({ name: "raw_sql", arguments: { sql: "SELECT 1 UNION ALL SELECT 2" } });
  // A failure whose text and column names carry the planted words.
  const failed = await alice.callTool({ name: "raw_sql", arguments: { sql: `SELECT ${planted} FROM ${planted}` } });
  assert.equal(failed.isError, true);
  const refused = await bob.callTool({ name: "raw_sql", arguments: { sql: "SELECT 1; SELECT 2" } });
  assert.equal(refused.isError, true);
  await bob.callTool({ name: "raw_sql", arguments: { sql: `SELECT 1 AS "${planted}"` } });
  const squared = await bob.callTool({ name: "certified_query", arguments: { name: "square", params: { n: 7 } } });
  assert.equal(squared.isError, false);
  // An unknown tool's name is the agent's: it is no label.
  await alice.callTool({ name: planted, arguments: {} }).catch(() => {});

  const { text, samples } = await scrape(metrics);
  assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "main", outcome: "ok", reason: "" }), 3);
  assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "main", outcome: "failed", reason: "" }), 1);
  assert.equal(
    sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "scratch", outcome: "refused", reason: "multiple_statements" }),
    1,
  );
  assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "scratch", outcome: "ok", reason: "" }), 1);
  assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "certified_query", database: "scratch", outcome: "ok", reason: "" }), 1);
  assert.equal(sample(samples, "rawtool_rows_returned_total", { tool: "raw_sql", database: "main" }), 6);
  assert.equal(sample(samples, "rawtool_tool_call_duration_seconds_count", { tool: "raw_sql", database: "main" }), 4);
  assert.ok(sample(samples, "rawtool_reply_bytes_total", { tool: "raw_sql", database: "main" }) > 0);
  assert.equal(sample(samples, "rawtool_build_info", { version: "0.1.0" }), 1);
  assert.equal(sample(samples, "rawtool_pool_connections", { database: "main", state: "in_use" }), 0);
  assert.ok(sample(samples, "rawtool_pool_connections", { database: "main", state: "idle" }) >= 1);
  // Each token's open sessions; nothing in flight once every call is answered.
  assert.equal(sample(samples, "rawtool_http_sessions", { token: "alice" }), 1);
  assert.equal(sample(samples, "rawtool_http_sessions", { token: "bob" }), 1);
  assert.equal(sample(samples, "rawtool_http_calls_in_flight", { token: "alice" }), 0);
  assert.ok(sample(samples, "rawtool_http_requests_total", { status: "200" }) >= 9);
  assert.equal(sample(samples, "rawtool_http_memory_bytes", { state: "limit" }), 256 * 1024 * 1024);
  assert.ok(!text.includes(planted), "a label holds words from the agent or the database");
  await alice.close();
  await bob.close();
});

// A statement that runs for minutes on SQLite unless something stops it.
const longSql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000000) SELECT count(*) AS c FROM n";

test("a call that reaches its time limit counts as timeout, one the client aborts as cancelled", async () => {
  const alice = await connectAs(server.url, tokens.alice);
  const timedOut = await alice.callTool({ name: "raw_sql", arguments: { sql: longSql, database: "slow" } });
  assert.equal(timedOut.isError, true);
  const controller = new AbortController();
  const call = alice.callTool({ name: "raw_sql", arguments: { sql: longSql } }, undefined, {
    signal: controller.signal,
    onprogress: () => controller.abort("the user gave up"),
  });
  await assert.rejects(call);
  const key = { tool: "raw_sql", database: "main", outcome: "cancelled", reason: "" };
  const deadline = Date.now() + 10000;
  let samples = (await scrape(metrics)).samples;
  while (sample(samples, "rawtool_tool_calls_total", key) === undefined && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    samples = (await scrape(metrics)).samples;
  }
  assert.equal(sample(samples, "rawtool_tool_calls_total", key), 1);
  assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "slow", outcome: "timeout", reason: "" }), 1);
  await alice.close();
});

test("on PostgreSQL, a statement ended by statement_timeout counts as timeout", async (t) => {
  // Read-only (the default access) needs a role without the hazards it refuses.
  const pgUrl = process.env.RAWTOOL_TEST_PG_READER_URL;
  if (!pgUrl) {
    if (process.env.RAWTOOL_REQUIRE_PG === "1") assert.fail("RAWTOOL_REQUIRE_PG=1 but RAWTOOL_TEST_PG_READER_URL is not set");
    t.skip("RAWTOOL_TEST_PG_READER_URL is not set: this PostgreSQL test did NOT run");
    return;
  }
  const pg = await startHttpServer(
    binary,
    {
      databases: [
        { label: "pg", url: pgUrl, limits: { statement_timeout_ms: 300 } },
        // The cluster's superuser, read-only: the start-up audit finds what read-only mode refuses.
        { label: "admin", url: process.env.RAWTOOL_TEST_PG_URL },
      ],
    },
    { extraArgs: ["--metrics", "127.0.0.1:0"] },
  );
  assert.ok(pg.url);
  try {
    const url = await metricsUrl(pg.log);
    const transport = new StreamableHTTPClientTransport(new URL(pg.url));
    const client = new Client({ name: "rawtool-metrics-pg", version: "1.0.0" });
    await client.connect(transport);
    const slept = await client.callTool({ name: "raw_sql", arguments: { sql: "SELECT pg_sleep(5)" } });
    assert.equal(slept.isError, true);
    await client.callTool({ name: "raw_sql", arguments: { sql: "SELECT 1/0" } });
    await client.close();
    const { text, samples } = await scrape(url);
    assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "pg", outcome: "timeout", reason: "" }), 1);
    const hazards = text.split("\n").filter((line) => line.startsWith("rawtool_database_hazards{"));
    assert.ok(hazards.some((line) => line.includes('database="admin"') && line.includes('refused="true"')), text);
    assert.ok(!hazards.some((line) => line.includes('database="pg"') && line.includes('refused="true"')), hazards.join("\n"));
    assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "pg", outcome: "failed", reason: "" }), 1);
  } finally {
    assert.equal(await pg.stop(), 0);
  }
});

/// A free TCP port on 127.0.0.1.
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
    probe.on("error", reject);
  });
}

test("a real Prometheus server scrapes rawtool and answers for its counters", { skip: !existsSync(prometheusBinary) && "prometheus is not installed (apt-get install prometheus): this test did NOT run" }, async () => {
  const alice = await connectAs(server.url, tokens.alice);
  const before = (await scrape(metrics)).samples;
  const key = { tool: "describe_catalog", database: "", outcome: "ok", reason: "" };
  const already = sample(before, "rawtool_tool_calls_total", key) ?? 0;
  for (let i = 0; i < 5; ++i) await alice.callTool({ name: "describe_catalog", arguments: {} });
  await alice.close();

  const dir = mkdtempSync(join(tmpdir(), "rawtool-prometheus-"));
  const target = new URL(metrics).host;
  writeFileSync(
    join(dir, "prometheus.yml"),
    `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rawtool\n    static_configs:\n      - targets: ["${target}"]\n`,
  );
  const port = await freePort();
  const prometheus = spawn(
    prometheusBinary,
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  prometheus.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => prometheus.on("exit", resolve));
  try {
    const query = `rawtool_tool_calls_total{tool="describe_catalog",outcome="ok",job="rawtool"}`;
    const deadline = Date.now() + 60000;
    let value = null;
    while (Date.now() < deadline) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(query)}`);
        const body = await response.json();
        if (body.status === "success" && body.data.result.length === 1) {
          value = Number(body.data.result[0].value[1]);
          if (value === already + 5) break;
        }
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal(value, already + 5, `Prometheus never reported the calls; its log:\n${stderr.slice(-2000)}`);
    // The scrape itself is healthy, as Prometheus sees it.
    const up = await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('up{job="rawtool"}')}`)).json();
    assert.equal(up.data.result[0].value[1], "1");
  } finally {
    prometheus.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("over stdio too: the SDK's stdio client's calls are counted, with no HTTP figures", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rawtool-metrics-stdio-"));
  const logFile = join(dir, "operator.log");
  writeFileSync(join(dir, "config.json"), JSON.stringify({ databases: [{ label: "local", path: ":memory:" }], metrics: { listen: "127.0.0.1:0" } }));
  const transport = new StdioClientTransport({
    command: binary,
    args: ["mcp", "--config", join(dir, "config.json"), "--log", logFile],
    stderr: "pipe",
  });
  const client = new Client({ name: "rawtool-metrics-stdio", version: "1.0.0" });
  try {
    await client.connect(transport);
    const url = await metricsUrl(() => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""));
    await client.callTool({ name: "raw_sql", arguments: { sql: "SELECT 1" } });
    await client.callTool({ name: "raw_sql", arguments: { sql: "" } });
    const { text, samples } = await scrape(url);
    assert.equal(sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "local", outcome: "ok", reason: "" }), 1);
    assert.equal(
      sample(samples, "rawtool_tool_calls_total", { tool: "raw_sql", database: "local", outcome: "refused", reason: "empty_statement" }),
      1,
    );
    assert.ok(!text.includes("rawtool_http_"), "stdio has no HTTP figures");
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/// GET /readyz until it answers other than "the first check is under way".
async function readyz(url) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const response = await fetch(new URL("/readyz", url));
    const body = await response.text();
    if (response.status !== 503 || !body.includes("under way") || Date.now() > deadline) return { status: response.status, body };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test("/readyz answers 200 when every database answers and 503 while one cannot, naming it only in the operator log", async () => {
  const ready = await readyz(server.url);
  assert.equal(ready.status, 200);
  assert.equal(ready.body, "ready\n");

  const broken = await startHttpServer(binary, {
    databases: [
      { label: "lite", path: ":memory:" },
      // Nothing listens on port 1.
      { label: "gone", url: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2" },
    ],
  });
  assert.ok(broken.url);
  try {
    const answer = await readyz(broken.url);
    assert.equal(answer.status, 503);
    assert.ok(!answer.body.includes("gone"), "an unauthenticated endpoint names no database");
    // Liveness is another question: the process serves.
    assert.equal((await fetch(new URL("/healthz", broken.url))).status, 200);
    const event = broken
      .log()
      .split("\n")
      .filter((line) => line.includes('"event":"readiness"'))
      .map((line) => JSON.parse(line));
    assert.deepEqual(event[0].databases, ["gone"]);
    assert.equal(event[0].ready, false);
  } finally {
    assert.equal(await broken.stop(), 0);
  }
});

test("the sample alerting rules in docs/metrics.md are valid Prometheus rules", { skip: !existsSync("/usr/bin/promtool") && "promtool (Debian's prometheus) is not installed: this test did NOT run" }, () => {
  const doc = readFileSync(join(argument("--source-dir"), "docs", "metrics.md"), "utf8");
  const marker = doc.indexOf("<!-- metrics-rules -->\n```yaml\n");
  assert.ok(marker >= 0, "docs/metrics.md has no marked rules block");
  const start = doc.indexOf("\n", doc.indexOf("```yaml", marker)) + 1;
  const rules = doc.slice(start, doc.indexOf("```", start));
  const dir = mkdtempSync(join(tmpdir(), "rawtool-rules-"));
  try {
    writeFileSync(join(dir, "rules.yml"), rules);
    const check = spawnSync("/usr/bin/promtool", ["check", "rules", join(dir, "rules.yml")], { encoding: "utf8" });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /SUCCESS: 3 rules found/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
