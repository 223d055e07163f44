// Peak memory of rawtool's Streamable HTTP server under loads that make a
// server hold memory for its clients: replies nobody reads, wide results,
// connections that send nothing. Each case runs on a fresh server process
// started by this script (and stopped at the case's end, also on failure or
// timeout); its figure is the process's VmHWM from /proc/PID/status when the
// case ends, beside the largest VmRSS sampled every 50 ms during the case.
//
//   eval "$(bash .ci/pg-start /tmp/bench-pg 54352)"     # for wide_nulls on PostgreSQL; SQLite always runs
//   node tests/bench/http/memory.mjs --binary build/rel/rawtool/rawtool
//
// No npm dependencies: any node >= 20. The cases (--cases a,b picks some):
//
//   baseline          one initialize and one tools/call `SELECT 1`: the
//                     server's fixed overhead.
//   slow_readers      60 connections, each an initialize, then one tools/call
//                     whose reply is 7.7 MB (700,000 control characters from
//                     SQLite, escaped six-fold: under max_reply_bytes, 8 MiB,
//                     within the default max_bytes), and then the client stops
//                     reading. Held until the server's peak has not grown for
//                     3 s or --hold seconds (default 10) after the last call
//                     was sent; then every reply is read, to count it.
//                     The client holds at most the kernel's receive buffer
//                     and 16 KiB of Node's per connection; the rest of an
//                     unread reply is the server's.
//   wide_nulls        4 concurrent tools/call of 1,600 NULL columns x 1,000
//                     rows, on SQLite (a recursive CTE) and on PostgreSQL
//                     (generate_series; skipped with a note unless
//                     RAWTOOL_TEST_PG_READER_URL or RAWTOOL_TEST_PG_URL is
//                     set), default limits (max_bytes keeps 81 of the rows).
//   idle_connections  1,000 TCP connections that send nothing, held 3 s, then
//                     one initialize and `SELECT 1` on a new connection, to
//                     show the server still answers. The server is started
//                     with at least 4096 descriptors; this script needs 1,100
//                     of its own (`ulimit -n` before node).
//
// Every server gets the same configuration: one database (an empty SQLite
// file, or PostgreSQL's reader role) with default limits, one token, and
// http.max_connections 1100 with request, head and idle timeouts of 120 s,
// so that no timeout ends a case's connections while it is measured.
//
// Options: --binary BINARY, the candidate; --compare BINARY measures another
// build in the same run, case by case, the two taking turns in which starts
// first; --max-memory BYTES sets http.max_memory_bytes in the candidate's
// configuration only (a build that does not know the key refuses the file);
// --hold SECONDS; --json prints one JSON object instead of tables.
//
// Beside each peak are the case's tool calls: answered with a result,
// answered with an error (a JSON-RPC error, a result with isError, or an
// HTTP error status on the call or on the initialize before it), and not
// answered (the connection closed or the wait timed out), and the results
// that came back truncated, by reason: a server that keeps its memory down
// by refusing calls or cutting results shows it here, not only as a smaller
// figure.

import { endChildrenOnExit, running, startChild, stopAll, stopChild } from "./children.mjs";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  if (at + 1 >= process.argv.length) throw new Error(`${name} needs a value`);
  return process.argv[at + 1];
}

function positive(name, text) {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

function pgUrl() {
  // The non-superuser role first: rawtool's read-only mode refuses superusers.
  return process.env.RAWTOOL_TEST_PG_READER_URL || process.env.RAWTOOL_TEST_PG_URL || null;
}

const caseNames = ["baseline", "slow_readers", "wide_nulls", "idle_connections"];

const settings = {
  binary: option("--binary") && resolve(option("--binary")),
  compare: option("--compare") && resolve(option("--compare")),
  maxMemory: option("--max-memory") && positive("--max-memory", option("--max-memory")),
  cases: option("--cases", caseNames.join(",")).split(","),
  holdMs: 1000 * positive("--hold", option("--hold", "10")),
  json: process.argv.includes("--json"),
};

const mib = 1024 * 1024;
const slowReaders = 60;
const wideCalls = 4;
const idleConnections = 1000;
const idleHoldMs = 3000;
const sampleMs = 50;
/// A case that has not ended in this long has hung: its server is killed.
const caseTimeoutMs = 240000;

// ---------------------------------------------------------------- children

const work = mkdtempSync(join(tmpdir(), "rawtool-memory-bench-"));

endChildrenOnExit("memory", () => rmSync(work, { recursive: true, force: true }));

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/// `promise`, or a rejection naming `what` once `ms` have passed.
function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what}: no end within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------- memory

/// VmHWM and VmRSS of a process in bytes; null once it has exited.
function memoryOf(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return null;
  }
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
  return { hwm: field("VmHWM"), rss: field("VmRSS") };
}

/// Samples a process's memory every sampleMs until stop(); remembers the
/// largest VmRSS seen and when VmHWM last grew.
class Sampler {
  constructor(pid) {
    this.pid = pid;
    this.maxRss = 0;
    this.hwm = 0;
    this.grewAt = Date.now();
    this.sample();
    this.timer = setInterval(() => this.sample(), sampleMs);
  }

  sample() {
    const memory = memoryOf(this.pid);
    if (!memory) return null;
    this.maxRss = Math.max(this.maxRss, memory.rss);
    if (memory.hwm > this.hwm) {
      this.hwm = memory.hwm;
      this.grewAt = Date.now();
    }
    return memory;
  }

  stop() {
    clearInterval(this.timer);
  }
}

// ---------------------------------------------------------------- server

function sha256Hex(text) {
  return createHash("sha256").update(text).digest("hex");
}

function databaseFor(engine) {
  if (engine === "sqlite") {
    const path = join(work, "bench.sqlite");
    // An empty file is an empty SQLite database.
    if (!existsSync(path)) writeFileSync(path, "");
    return { path };
  }
  return { url: pgUrl() };
}

/// A rawtool HTTP server on a port of its own choosing, serving once its log
/// says so. `maxMemory`: http.max_memory_bytes, only ever for the candidate.
async function startServer(binary, engine, { maxMemory } = {}) {
  const token = randomBytes(16).toString("hex");
  const dir = mkdtempSync(join(work, "server-"));
  const config = join(dir, "config.json");
  const log = join(dir, "operator.log");
  const http = {
    tokens: [{ name: "bench", sha256: sha256Hex(token) }],
    max_connections: idleConnections + 100,
    request_timeout_seconds: 120,
    head_timeout_seconds: 120,
    idle_timeout_seconds: 120,
  };
  if (maxMemory) http.max_memory_bytes = maxMemory;
  writeFileSync(config, JSON.stringify({ databases: [{ label: "bench", ...databaseFor(engine) }], http }));
  // Through sh, to give the server the descriptors idle_connections needs
  // whatever this process was given; exec keeps the pid the server's.
  const raise = 'test "$(ulimit -n)" -ge 4096 2>/dev/null || ulimit -n 4096 2>/dev/null; exec "$0" "$@"';
  const entry = startChild("sh", ["-c", raise, binary, "mcp", "--http", "127.0.0.1:0", "--config", config, "--log", log],
                           ["ignore", "ignore", "pipe"], { keepStderr: true });
  const deadline = Date.now() + 30000;
  for (;;) {
    const text = existsSync(log) ? readFileSync(log, "utf8") : "";
    const line = text.split("\n").find((one) => one.includes('"event":"serving"'));
    if (line) return { entry, pid: entry.child.pid, url: new URL(JSON.parse(line).url), token, dir };
    if (!running(entry)) throw new Error(`${binary} exited before it served:\n${entry.stderr}`);
    if (Date.now() > deadline) throw new Error(`${binary} did not serve within 30 s:\n${entry.stderr}`);
    await sleep(25);
  }
}

// ---------------------------------------------------------------- client

const initializeParams = {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "rawtool-memory-bench", version: "1" },
};

/// One HTTP/1.1 connection on a raw TCP socket, so that the script decides
/// when bytes are read: pause() leaves a reply in the kernel and the server.
/// Responses are read in order, one at a time.
class RawConnection {
  constructor(server, socket) {
    this.server = server;
    this.socket = socket;
    this.chunks = [];
    this.length = 0;
    this.closed = false;
    this.waiting = null;
    this.head = null;
    this.sessionId = null;
    this.protocolVersion = null;
    socket.on("data", (chunk) => {
      this.chunks.push(chunk);
      this.length += chunk.length;
      this.parse();
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      this.closed = true;
      this.waiting?.fail(new Error("the server closed the connection"));
      this.waiting = null;
    });
  }

  /// Resolves once connected; `sockets` collects every socket so that the
  /// case can close them whatever happens.
  static open(server, sockets, timeoutMs = 30000) {
    return new Promise((done, fail) => {
      const socket = net.connect({ host: server.url.hostname, port: Number(server.url.port) });
      sockets.add(socket);
      const timer = setTimeout(() => {
        socket.destroy();
        fail(new Error("connect timed out"));
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        done(new RawConnection(server, socket));
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        fail(error);
      });
    });
  }

  send(message) {
    const body = Buffer.from(JSON.stringify(message));
    const head = [
      `POST ${this.server.url.pathname} HTTP/1.1`,
      `host: ${this.server.url.host}`,
      "content-type: application/json",
      "accept: application/json, text/event-stream",
      `authorization: Bearer ${this.server.token}`,
      `content-length: ${body.length}`,
    ];
    if (this.sessionId) head.push(`mcp-session-id: ${this.sessionId}`);
    if (this.protocolVersion) head.push(`mcp-protocol-version: ${this.protocolVersion}`);
    this.socket.write(head.join("\r\n") + "\r\n\r\n");
    this.socket.write(body);
  }

  /// The next response, { status, headers, body: Buffer }; rejects when the
  /// connection closes first or after `timeoutMs`.
  response(timeoutMs) {
    if (this.waiting) throw new Error("one response at a time");
    return new Promise((done, fail) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        fail(new Error("no response in time"));
      }, timeoutMs);
      this.waiting = {
        done: (value) => (clearTimeout(timer), done(value)),
        fail: (error) => (clearTimeout(timer), fail(error)),
      };
      if (this.closed) this.waiting.fail(new Error("the server closed the connection"));
      else this.parse();
    });
  }

  /// The bytes read so far as one buffer.
  joined() {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.length)];
    return this.chunks[0];
  }

  // A 7.7 MB body arrives in a hundred reads or more: the buffered bytes are
  // joined once its head is read and once it is all there, not at every read.
  parse() {
    if (!this.waiting || this.length === 0) return;
    if (!this.head) {
      const buffer = this.joined();
      const headEnd = buffer.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const [statusLine, ...lines] = buffer.subarray(0, headEnd).toString("latin1").split("\r\n");
      const headers = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      this.head = {
        status: Number(statusLine.split(" ")[1]),
        headers,
        bodyAt: headEnd + 4,
        chunked: /chunked/i.test(headers["transfer-encoding"] ?? ""),
      };
    }
    const { status, headers, bodyAt, chunked } = this.head;
    let body;
    let end;
    if (chunked) {
      const buffer = this.joined();
      const parts = [];
      for (let at = bodyAt; ; ) {
        const lineEnd = buffer.indexOf("\r\n", at);
        if (lineEnd < 0) return;
        const size = parseInt(buffer.subarray(at, lineEnd).toString("latin1"), 16);
        if (lineEnd + 2 + size + 2 > buffer.length) return;
        if (size === 0) {
          end = lineEnd + 4;
          break;
        }
        parts.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      end = bodyAt + Number(headers["content-length"] ?? 0);
      if (this.length < end) return;
      body = this.joined().subarray(bodyAt, end);
    }
    const rest = this.joined().subarray(end);
    this.chunks = rest.length ? [Buffer.from(rest)] : [];
    this.length = rest.length;
    this.head = null;
    const waiting = this.waiting;
    this.waiting = null;
    waiting.done({ status, headers, body });
  }

  async initialize(timeoutMs = 30000) {
    this.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: initializeParams });
    const reply = await this.response(timeoutMs);
    const message = reply.status === 200 ? messageIn(reply, 0) : null;
    if (!message?.result) return reply;
    this.sessionId = reply.headers["mcp-session-id"] ?? null;
    this.protocolVersion = message.result.protocolVersion;
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const ready = await this.response(timeoutMs);
    return ready.status === 202 ? null : ready;
  }

  pause() {
    this.socket.pause();
  }

  resume() {
    this.socket.resume();
  }
}

/// The JSON-RPC message with `id` in a body that is JSON or an event stream.
function messageIn(reply, id) {
  const text = reply.body.toString("utf8");
  if ((reply.headers["content-type"] ?? "").startsWith("text/event-stream")) {
    for (const line of text.split("\n")) {
      // The stream's first event, priming, has empty data.
      if (!line.startsWith("data:") || line.slice(5).trim() === "") continue;
      const message = JSON.parse(line.slice(5));
      if (message.id === id) return message;
    }
    return null;
  }
  return JSON.parse(text);
}

function toolCall(id, sql) {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name: "raw_sql", arguments: { sql } } };
}

/// What became of a case's tool calls.
class Tally {
  constructor() {
    this.result = 0;
    this.error = 0;
    this.unanswered = 0;
    this.largestReply = 0;
    /// Results cut short, by truncation reason.
    this.truncated = new Map();
    this.notes = [];
  }

  /// Counts the reply to tool call `id` (or the refused initialize before it).
  count(reply, id) {
    this.largestReply = Math.max(this.largestReply, reply.body.length);
    let message = null;
    try {
      message = reply.status === 200 ? messageIn(reply, id) : null;
    } catch {
      message = null;
    }
    if (message?.result && message.result.isError === false) {
      ++this.result;
      // A result cut short is a way to keep memory down too: say so.
      const reason = message.result.structuredContent?.truncation?.reason;
      if (reason && reason !== "none") this.truncated.set(reason, (this.truncated.get(reason) ?? 0) + 1);
    } else {
      ++this.error;
    }
  }
}

/// Opens a connection, initializes, makes tool call `id` and counts its
/// reply; nothing that goes wrong escapes, it is counted.
async function oneCall(server, sockets, tally, id, sql, timeoutMs) {
  try {
    const connection = await RawConnection.open(server, sockets);
    const refused = await connection.initialize();
    if (refused) return tally.count(refused, id);
    connection.send(toolCall(id, sql));
    tally.count(await connection.response(timeoutMs), id);
  } catch {
    ++tally.unanswered;
  }
}

// ---------------------------------------------------------------- cases

const slowSql = "SELECT replace(hex(zeroblob(700000)), '00', char(1)) AS control_characters";

function wideSql(engine) {
  const columns = Array.from({ length: 1600 }, (_, i) => (engine === "sqlite" ? `NULL AS c${i}` : `NULL::text AS c${i}`));
  if (engine === "sqlite") {
    return `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) SELECT ${columns.join(", ")} FROM r`;
  }
  return `SELECT ${columns.join(", ")} FROM generate_series(1, 1000)`;
}

async function runBaseline({ server, sockets, tally }) {
  await oneCall(server, sockets, tally, 1, "SELECT 1", 30000);
}

async function runSlowReaders({ server, sockets, tally, sampler }) {
  const connections = await Promise.all(
    Array.from({ length: slowReaders }, async (_, i) => {
      try {
        const connection = await RawConnection.open(server, sockets);
        const refused = await connection.initialize();
        if (refused) {
          tally.count(refused, i + 1);
          return null;
        }
        return connection;
      } catch {
        ++tally.unanswered;
        return null;
      }
    }),
  );
  connections.forEach((connection, i) => {
    if (!connection) return;
    connection.send(toolCall(i + 1, slowSql));
    connection.pause();
  });
  const sentAt = Date.now();
  sampler.grewAt = sentAt;
  while (Date.now() - sentAt < settings.holdMs && Date.now() - sampler.grewAt < 3000) {
    if (!running(server.entry)) break;
    await sleep(100);
  }
  tally.notes.push(`held ${((Date.now() - sentAt) / 1000).toFixed(1)} s`);
  tally.hwmAtHold = sampler.sample()?.hwm ?? sampler.hwm;
  await Promise.all(
    connections.map(async (connection, i) => {
      if (!connection) return;
      try {
        const reply = connection.response(120000);
        connection.resume();
        tally.count(await reply, i + 1);
      } catch {
        ++tally.unanswered;
      }
      connection.socket.destroy();
    }),
  );
}

function runWideNulls(engine) {
  return async ({ server, sockets, tally }) => {
    await Promise.all(Array.from({ length: wideCalls }, (_, i) => oneCall(server, sockets, tally, i + 1, wideSql(engine), 120000)));
  };
}

async function runIdleConnections({ server, sockets, tally }) {
  const idle = [];
  // In batches, so that the listen backlog is not what is measured.
  for (let opened = 0; opened < idleConnections; opened += 100) {
    const batch = await Promise.allSettled(
      Array.from({ length: Math.min(100, idleConnections - opened) }, () => RawConnection.open(server, sockets)),
    );
    for (const one of batch) if (one.status === "fulfilled") idle.push(one.value);
  }
  await sleep(idleHoldMs);
  const open = idle.filter((connection) => !connection.closed).length;
  tally.notes.push(`${idle.length}/${idleConnections} connected, ${open} open after ${idleHoldMs / 1000} s`);
  await oneCall(server, sockets, tally, 1, "SELECT 1", 30000);
}

/// The cases asked for, each engine of a case a run of its own.
function plannedRuns() {
  const runs = [];
  for (const name of settings.cases) {
    if (name === "baseline") runs.push({ name, engine: "sqlite", run: runBaseline });
    else if (name === "slow_readers") runs.push({ name, engine: "sqlite", run: runSlowReaders });
    else if (name === "wide_nulls") {
      runs.push({ name: "wide_nulls sqlite", engine: "sqlite", run: runWideNulls("sqlite") });
      if (pgUrl()) runs.push({ name: "wide_nulls postgresql", engine: "postgresql", run: runWideNulls("postgresql") });
      else runs.skipped = "wide_nulls postgresql skipped: set RAWTOOL_TEST_PG_READER_URL or RAWTOOL_TEST_PG_URL (eval \"$(bash .ci/pg-start)\")";
    } else if (name === "idle_connections") runs.push({ name, engine: "sqlite", run: runIdleConnections });
    else throw new Error(`unknown case ${name}; the cases: ${caseNames.join(", ")}`);
  }
  return runs;
}

/// One case on a fresh server of `binary`; the server and every socket of
/// the case are gone when this returns or throws.
async function measure(plan, role, binary) {
  const server = await startServer(binary, plan.engine, { maxMemory: role === "candidate" ? settings.maxMemory : undefined });
  const startRss = memoryOf(server.pid)?.rss ?? NaN;
  const sampler = new Sampler(server.pid);
  const sockets = new Set();
  const tally = new Tally();
  try {
    await within(caseTimeoutMs, `${plan.name} on ${role}`, plan.run({ server, sockets, tally, sampler }));
    const last = sampler.sample();
    for (const [reason, results] of tally.truncated) tally.notes.push(`${results} results truncated (${reason})`);
    if (!last) tally.notes.push(`server exited (${server.entry.child.exitCode ?? server.entry.child.signalCode})`);
    return {
      case: plan.name,
      server: role,
      binary,
      peak_rss_mib: sampler.hwm / mib,
      peak_rss_at_hold_end_mib: tally.hwmAtHold === undefined ? undefined : tally.hwmAtHold / mib,
      max_sampled_rss_mib: sampler.maxRss / mib,
      rss_after_start_mib: startRss / mib,
      calls_result: tally.result,
      calls_error: tally.error,
      calls_unanswered: tally.unanswered,
      largest_reply_bytes: tally.largestReply,
      notes: tally.notes,
    };
  } finally {
    sampler.stop();
    for (const socket of sockets) socket.destroy();
    await stopChild(server.entry);
  }
}

function openFilesLimit() {
  const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((one) => one.startsWith("Max open files"));
  return Number(line?.split(/\s+/)[3]);
}

async function main() {
  if (!settings.binary) {
    throw new Error("usage: node memory.mjs --binary build/rel/rawtool/rawtool [--compare OTHER] [--max-memory BYTES] [--cases a,b] [--hold S] [--json]");
  }
  if (settings.cases.includes("idle_connections") && openFilesLimit() < idleConnections + 100) {
    throw new Error(`idle_connections opens ${idleConnections} sockets: raise this shell's limit first (ulimit -n 2048)`);
  }
  const plans = plannedRuns();
  const load = [loadavg()[0]];
  const figures = [];
  const roles = [["candidate", settings.binary]];
  if (settings.compare) roles.push(["baseline", settings.compare]);
  for (const [i, plan] of plans.entries()) {
    // Alternate which build goes first, so that a machine warming or
    // loading up over the run does not always favour the same one.
    const order = i % 2 ? [...roles].reverse() : roles;
    for (const [role, binary] of order) figures.push(await measure(plan, role, binary));
  }
  load.push(loadavg()[0]);
  const ratios = settings.compare
    ? plans.map((plan) => {
        const of = (role) => figures.find((row) => row.case === plan.name && row.server === role);
        return { case: plan.name, peak_rss_candidate_over_baseline: of("candidate").peak_rss_mib / of("baseline").peak_rss_mib };
      })
    : [];
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, load_1min_before: load[0], load_1min_after: load[1] },
    node: process.version,
    candidate: settings.binary,
    baseline: settings.compare ?? null,
    max_memory_bytes: settings.maxMemory ?? null,
    skipped: plans.skipped ?? null,
    figures,
    ratios,
  };
  if (settings.json) {
    console.log(JSON.stringify(report, null, 2));
    return;
  }
  const fixed = (value, digits = 1) => (value === undefined ? "" : value.toFixed(digits));
  console.log(`Peak RSS of rawtool's HTTP server, one fresh server per case and build, ${report.date}, ` +
    `${report.machine.cpus} CPUs, load ${fixed(load[0], 2)} -> ${fixed(load[1], 2)}, node ${process.version}`);
  console.log(`candidate: ${settings.binary}${settings.maxMemory ? ` (http.max_memory_bytes ${settings.maxMemory})` : ""}`);
  if (settings.compare) console.log(`baseline: ${settings.compare}`);
  if (plans.skipped) console.log(plans.skipped);
  console.log("");
  console.log("| case | server | peak RSS MiB (VmHWM) | max sampled VmRSS MiB | RSS after start MiB | calls: result / error / not answered | largest reply bytes | notes |");
  console.log("| --- | --- | ---: | ---: | ---: | --- | ---: | --- |");
  for (const row of figures) {
    const notes = [...row.notes];
    if (row.peak_rss_at_hold_end_mib !== undefined) notes.push(`peak at hold end ${fixed(row.peak_rss_at_hold_end_mib)} MiB`);
    console.log(`| ${row.case} | ${row.server} | ${fixed(row.peak_rss_mib)} | ${fixed(row.max_sampled_rss_mib)} | ${fixed(row.rss_after_start_mib)} | ` +
      `${row.calls_result} / ${row.calls_error} / ${row.calls_unanswered} | ${row.largest_reply_bytes} | ${notes.join("; ")} |`);
  }
  if (ratios.length) {
    console.log("");
    console.log("| case | peak RSS candidate / baseline |");
    console.log("| --- | ---: |");
    for (const row of ratios) console.log(`| ${row.case} | ${fixed(row.peak_rss_candidate_over_baseline, 2)} |`);
  }
}

let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  console.error(`memory: ${error.stack ?? error}`);
} finally {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
