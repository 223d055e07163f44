// Starts `rawtool mcp --http 127.0.0.1:0` with a configuration of the test's
// own, learns the port from the operator log's "serving" event, and stops it
// with SIGTERM. Shared by the HTTP transport's tests.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function sha256Hex(text) {
  return createHash("sha256").update(text).digest("hex");
}

export function argument(name) {
  const at = process.argv.indexOf(name);
  if (at < 0 || at + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[at + 1];
}

/// Runs the binary with `config` (an object, written to a file) and `listen`;
/// resolves once it serves, with { url, log(), stop() }. stop() sends SIGTERM
/// and resolves with the exit code. `files` ({name: object}) are written as
/// JSON beside the configuration (a catalog the configuration names).
/// `wrapper` (an argv prefix such as ["prlimit", "--nofile=64:64"]) runs the
/// binary under another command.
export async function startHttpServer(binary, config, { listen = "127.0.0.1:0", extraArgs = [], files = {}, wrapper = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "rawtool-http-"));
  const configFile = join(dir, "config.json");
  const logFile = join(dir, "operator.log");
  writeFileSync(configFile, JSON.stringify(config));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(content));
  const argv = [...wrapper, binary, "mcp", "--http", listen, "--config", configFile, "--log", logFile, ...extraArgs];
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  const log = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  const deadline = Date.now() + 20000;
  let url = null;
  while (url === null) {
    const serving = log()
      .split("\n")
      .filter((line) => line.includes('"event":"serving"'))
      .map((line) => JSON.parse(line));
    if (serving.length > 0) url = serving[0].url;
    else if (child.exitCode !== null) break;
    else if (Date.now() > deadline) break;
    else await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  if (url === null) {
    child.kill("SIGKILL");
    const code = await exited;
    cleanup();
    return { url: null, exitCode: code, stderr, log: () => "" };
  }
  return {
    url,
    pid: child.pid,
    log,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      const code = await exited;
      cleanup();
      return code;
    },
  };
}

/// The HTTP status of each tool call the server answered with nothing
/// (cancelled), in order, from the "request" events of its operator log that
/// say so ("answered": false).
export function unansweredCallStatuses(server) {
  return server
    .log()
    .split("\n")
    .filter((line) => line.includes('"event":"request"') && line.includes('"method":"tools/call"'))
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.answered === false)
    .map((entry) => entry.status);
}

/// How many tool calls the server answered with nothing.
export function unansweredCalls(server) {
  return unansweredCallStatuses(server).length;
}

/// Waits up to `ms` for unansweredCalls(server) to pass `before`; the count.
export async function waitForUnanswered(server, before, ms = 3000) {
  const deadline = Date.now() + ms;
  while (unansweredCalls(server) === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return unansweredCalls(server);
}

/// One server-sent event as rawtool writes it (LF line ends, "field: value"
/// lines): { id, event, data }, data's lines joined with LF.
export function parseEvent(block) {
  const fields = { id: undefined, event: undefined, data: [] };
  for (const line of block.split("\n")) {
    const [, name, value] = /^([a-z]+): ?(.*)$/.exec(line) ?? [];
    if (name === "data") fields.data.push(value);
    else if (name === "id" || name === "event") fields[name] = value;
  }
  return { ...fields, data: fields.data.join("\n") };
}

/// A whole event stream's events, in order.
export function parseEvents(text) {
  return text.split("\n\n").filter((block) => block !== "").map(parseEvent);
}

/// Posts `message` (a tools/call) to `url` with `headers`, asking for progress
/// so that its answer comes as an event stream. Resolves once the server says
/// the call runs (the progress notification it sends when a worker takes the
/// call) with { response, messages }: `messages` resolves with every JSON-RPC
/// message of the stream once the stream ends. A test waits on this event,
/// not on a guess of how long the server takes to start the call.
export async function startWatchedCall(url, headers, message) {
  const watched = structuredClone(message);
  watched.params._meta = { progressToken: `watch-${watched.id}` };
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(watched),
  });
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    throw new Error(`the call was answered ${response.status} without an event stream: ${await response.text()}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const received = [];
  let buffered = "";
  // Reads until the stream has carried `until` or ended; true if it was seen.
  const readUntil = async (until) => {
    for (;;) {
      if (received.some(until)) return true;
      const { value, done } = await reader.read();
      if (done) return false;
      buffered += value;
      let end;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const { data } = parseEvent(buffered.slice(0, end));
        buffered = buffered.slice(end + 2);
        if (data !== "") received.push(JSON.parse(data));
      }
    }
  };
  if (!(await readUntil((m) => m.method === "notifications/progress"))) {
    throw new Error(`the stream ended before the call was said to run: ${JSON.stringify(received)}`);
  }
  return { response, messages: readUntil(() => false).then(() => received) };
}

/// Posts `message` (a tools/call) with `post(body, headers)` and resolves with
/// { response }, the pending response, once the server holds it: with
/// max_calls_per_token 1, a probe call of the same token (SELECT 1) is refused
/// for the call slot the first one takes. The probe and the call travel on
/// separate connections, so the probe can reach the server first and take the
/// slot itself; the call is then refused, and is sent again. For calls
/// answered as plain JSON, which carry no progress event; at most 20 s.
export async function startHeldCall(post, headers, message) {
  const deadline = Date.now() + 20000;
  let probe = 1000;
  for (;;) {
    let settled = false;
    const call = post(message, headers);
    call.then(() => { settled = true; }, () => { settled = true; });
    for (;;) {
      const answer = await (await post(
        { jsonrpc: "2.0", id: ++probe, method: "tools/call", params: { name: "raw_sql", arguments: { sql: "SELECT 1" } } },
        headers,
      )).json();
      if (answer.error?.code === -32000 && /tool calls running/.test(answer.error.message)) return { response: call };
      if (Date.now() > deadline) throw new Error(`the call was not held within 20 s; the probe was answered ${JSON.stringify(answer)}`);
      if (settled) {
        const refused = await (await call).json();
        if (!(refused.error?.code === -32000 && /tool calls running/.test(refused.error.message))) {
          throw new Error(`the call was answered before it could be held: ${JSON.stringify(refused)}`);
        }
        break;  // the probe took the slot first: send the call again
      }
      await new Promise((resolve) => setTimeout(resolve, 20));  // pacing; the deadline bounds the wait
    }
  }
}
