// Every request the HTTP transport must turn away, sent with fetch or a raw
// socket to the real binary started from a configuration file, and what an
// accepted token may reach.
//
//   node http_rejections.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";

import {
  argument,
  sha256Hex,
  startHeldCall,
  startHttpServer,
  startWatchedCall,
  unansweredCallStatuses,
  unansweredCalls,
  waitForUnanswered,
} from "./http_server.mjs";

const binary = argument("--binary");
const aliceToken = "alice-token-7d1e5c";
const bobToken = "bob-token-93f0aa";
const config = {
  databases: [
    { label: "main", path: ":memory:" },
    { label: "scratch", path: ":memory:" },
  ],
  http: {
    tokens: [
      { name: "alice", sha256: sha256Hex(aliceToken) },
      { name: "bob", sha256: sha256Hex(bobToken), databases: ["scratch"] },
    ],
    allowed_origins: ["http://localhost:3000"],
    max_body_bytes: 4096,
  },
};

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

let server;
before(async () => {
  server = await startHttpServer(binary, config);
  assert.ok(server.url, `the server did not start (exit ${server.exitCode}): ${server.stderr}`);
});
after(async () => {
  if (server?.url) assert.equal(await server.stop(), 0, "SIGTERM must end the server with status 0");
});

function post(body, { token, headers = {} } = {}) {
  return fetch(server.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function openSession(token) {
  const response = await post(initialize, { token });
  assert.equal(response.status, 200);
  const id = response.headers.get("mcp-session-id");
  assert.match(id ?? "", /^[0-9a-f]{32}$/);
  await response.json();
  const ready = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { token, headers: sessionHeaders(id) });
  assert.equal(ready.status, 202);
  assert.equal(await ready.text(), "");
  return id;
}

function sessionHeaders(id) {
  return { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" };
}

// Sends `head` (request line and headers, no body) on a raw socket and
// resolves with the server's first response (its head, and its body as long
// as Content-Length says), or what came before it closed or 3 s passed.
function rawExchange(head) {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let received = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, 3000);
    socket.on("data", (chunk) => {
      received += chunk;
      const end = received.indexOf("\r\n\r\n");
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end))?.[1] ?? 0);
      if (end >= 0 && Buffer.byteLength(received.slice(end + 4)) >= length) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
    socket.on("error", reject);
  });
}

describe("requests turned away", () => {
  test("a request without a bearer token gets 401 with WWW-Authenticate", async () => {
    const response = await post(initialize);
    assert.equal(response.status, 401);
    assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer realm="rawtool"/);
    const body = await response.json();
    assert.equal(body.error.code, -32600);
  });

  test("a wrong token gets 401 naming invalid_token", async () => {
    const response = await post(initialize, { token: aliceToken + "x" });
    assert.equal(response.status, 401);
    assert.match(response.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
  });

  test("a token in the query string is not accepted", async () => {
    const response = await fetch(`${server.url}?access_token=${aliceToken}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(initialize),
    });
    assert.ok(response.status === 401 || response.status === 404, `got ${response.status}`);
  });

  test("the Authorization scheme must be Bearer", async () => {
    const response = await post(initialize, { headers: { authorization: `Basic ${aliceToken}` } });
    assert.equal(response.status, 401);
  });

  test("an Origin not in allowed_origins gets 403, even with a valid token", async () => {
    const response = await post(initialize, { token: aliceToken, headers: { origin: "http://evil.example" } });
    assert.equal(response.status, 403);
    const allowed = await post(initialize, { token: aliceToken, headers: { origin: "http://localhost:3000" } });
    assert.equal(allowed.status, 200);
  });

  test("a body over max_body_bytes gets 413 before any of it is sent", async () => {
    const reply = await rawExchange(
      `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${aliceToken}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n",
    );
    assert.match(reply, /^HTTP\/1\.1 413 /);
    assert.match(reply, /over max_body_bytes=4096 \(http\.max_body_bytes\)/, "the refusal names the limit, its value and its key");
  });

  test("a chunked body that grows past max_body_bytes gets 413", async () => {
    const chunk = " ".repeat(3000);
    const size = chunk.length.toString(16);
    const reply = await rawExchange(
      `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${aliceToken}\r\n` +
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
        `${size}\r\n${chunk}\r\n${size}\r\n${chunk}\r\n`,
    );
    assert.match(reply, /^HTTP\/1\.1 413 /);
  });

  test("a body over max_body_bytes sent whole also gets 413", async () => {
    const response = await post(" ".repeat(5000) + JSON.stringify(initialize), { token: aliceToken });
    assert.equal(response.status, 413);
    assert.match((await response.json()).error?.message, /over max_body_bytes=4096 \(http\.max_body_bytes\)/);
  });

  // Framing Beast cannot parse: each is answered, logged, and the connection closed.
  const head = `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${aliceToken}\r\n` +
    "Content-Type: application/json\r\nAccept: application/json\r\n";
  const malformed = [
    ["Content-Length beside Transfer-Encoding", 400,
      head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
    ["two different Content-Lengths", 400, head + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n{}   "],
    ["a Content-Length that is not a number", 400, head + "Content-Length: 5x\r\n\r\n{}   "],
    ["a chunk size that overflows", 400,
      head + "Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffffffff\r\n{}\r\n0\r\n\r\n"],
    ["a chunk size that is not hexadecimal", 400, head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"],
    ["a Transfer-Encoding other than chunked last", 400, head + "Transfer-Encoding: chunked, gzip\r\n\r\n"],
    ["a request line with no version", 400, "POST /mcp\r\nHost: x\r\n\r\n"],
    ["a header line without a colon", 400, "POST /mcp HTTP/1.1\r\nHost x\r\n\r\n"],
    ["a request line whose version is HTTP/2.0", 400, "POST /mcp HTTP/2.0\r\nHost: x\r\n\r\n"],
    ["a request line whose version is HTTP/0.9", 400, "GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n"],
    ["a request line whose version is in lower case", 400, "GET /healthz http/1.1\r\nHost: x\r\n\r\n"],
    ["the HTTP/2 connection preface", 400, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
    ["a TLS handshake sent to the plain-text port", 400, Buffer.from("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", "latin1")],
    ["an HTTP/1.1 request without Host", 400,
      `POST /mcp HTTP/1.1\r\nAuthorization: Bearer ${aliceToken}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`],
    ["an HTTP/1.1 request for /healthz without Host", 400, "GET /healthz HTTP/1.1\r\n\r\n"],
    ["two Host headers", 400, head.replace("Host: x\r\n", "Host: x\r\nHost: y\r\n") + "Content-Length: 2\r\n\r\n{}"],
    ["two Host headers in HTTP/1.0", 400, "GET /healthz HTTP/1.0\r\nHost: x\r\nHost: x\r\n\r\n"],
    ["a Host that is not a host and port", 400, head.replace("Host: x", "Host: x/y@z") + "Content-Length: 2\r\n\r\n{}"],
    ["headers over 16 KiB", 431, head + `X-Filler: ${"a".repeat(17 * 1024)}\r\nContent-Length: 2\r\n\r\n{}`],
    ["many small headers over 16 KiB together", 431,
      head + Array.from({ length: 1200 }, (_, i) => `X-H${i}: 0123456789\r\n`).join("") + "Content-Length: 2\r\n\r\n{}"],
  ];
  for (const [what, status, bytes] of malformed) {
    test(`${what}: ${status} with a short body and a log line, then the connection closes`, async () => {
      const rejectedBefore = server.log().split("\n").filter((line) => line.includes('"event":"rejected"')).length;
      const reply = await rawExchange(bytes);
      assert.match(reply, new RegExp(`^HTTP/1\\.1 ${status} `));
      assert.match(reply, /\r\nConnection: close\r\n/i);
      // A short body in rawtool's words: a JSON-RPC error naming what is wrong with the request.
      const body = JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4));
      assert.equal(body.error?.code, -32600);
      assert.match(body.error?.message ?? "", /^the request('s| must)/);
      const deadline = Date.now() + 3000;
      let rejected = rejectedBefore;
      while (rejected === rejectedBefore && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        rejected = server.log().split("\n").filter((line) => line.includes('"event":"rejected"')).length;
      }
      assert.equal(rejected, rejectedBefore + 1, "one log line for the rejected request");
    });
  }

  test("malformed JSON gets 400 with a JSON-RPC parse error", async () => {
    const session = await openSession(aliceToken);
    const response = await post('{"jsonrpc": "2.0", "id": ', { token: aliceToken, headers: sessionHeaders(session) });
    assert.equal(response.status, 400);
    const body = await response.json();
    assert.equal(body.error.code, -32700);
    assert.equal("id" in body, false);
  });

  test("a body that is not application/json gets 415", async () => {
    const response = await post(JSON.stringify(initialize), { token: aliceToken, headers: { "content-type": "text/plain" } });
    assert.equal(response.status, 415);
  });

  test("GET on /mcp gets 405 naming the methods served", async () => {
    const response = await fetch(server.url, { headers: { authorization: `Bearer ${aliceToken}` } });
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "POST, DELETE");
  });

  test("after initialize, a request needs Mcp-Session-Id: 400 without it, 404 with an unknown one", async () => {
    await openSession(aliceToken);
    const ping = { jsonrpc: "2.0", id: 2, method: "ping" };
    assert.equal((await post(ping, { token: aliceToken })).status, 400);
    assert.equal((await post(ping, { token: aliceToken, headers: sessionHeaders("0".repeat(32)) })).status, 404);
  });

  test("a session opened with one token is unknown to another", async () => {
    const session = await openSession(aliceToken);
    const ping = { jsonrpc: "2.0", id: 2, method: "ping" };
    assert.equal((await post(ping, { token: bobToken, headers: sessionHeaders(session) })).status, 404);
    assert.equal((await post(ping, { token: aliceToken, headers: sessionHeaders(session) })).status, 200);
  });

  test("an unsupported MCP-Protocol-Version gets 400", async () => {
    const session = await openSession(aliceToken);
    const response = await post(
      { jsonrpc: "2.0", id: 2, method: "ping" },
      { token: aliceToken, headers: { ...sessionHeaders(session), "mcp-protocol-version": "1999-01-01" } },
    );
    assert.equal(response.status, 400);
  });

  test("DELETE ends a session: its id then gets 404", async () => {
    const session = await openSession(aliceToken);
    const deleted = await fetch(server.url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${aliceToken}`, ...sessionHeaders(session) },
    });
    assert.equal(deleted.status, 204);
    const ping = await post({ jsonrpc: "2.0", id: 2, method: "ping" }, { token: aliceToken, headers: sessionHeaders(session) });
    assert.equal(ping.status, 404);
  });

  test("an unknown path gets 404", async () => {
    const response = await fetch(new URL("/other", server.url), { headers: { authorization: `Bearer ${aliceToken}` } });
    assert.equal(response.status, 404);
  });
});

describe("what is served", () => {
  test("/healthz answers without a token and tells nothing", async () => {
    const response = await fetch(new URL("/healthz", server.url));
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "ok\n");
    assert.equal(response.headers.get("server"), "rawtool");
  });

  test("a token limited to some databases is shown and reaches only them", async () => {
    const session = await openSession(bobToken);
    const headers = sessionHeaders(session);
    const list = await (await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { token: bobToken, headers })).json();
    const raw = list.result.tools.find((tool) => tool.name === "raw_sql");
    assert.ok(raw, "raw_sql is listed");
    assert.equal(JSON.stringify(raw).includes('"main"'), false, "the schema names a database the token does not reach");
    const call = (id, args) => post({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "raw_sql", arguments: args } }, { token: bobToken, headers });
    const elsewhere = await (await call(3, { sql: "SELECT 1", database: "main" })).json();
    assert.ok(elsewhere.error || elsewhere.result?.isError, "a call naming another database must be refused");
    assert.equal(JSON.stringify(elsewhere).includes("rows"), false);
    const own = await (await call(4, { sql: "SELECT 42 AS answer" })).json();
    assert.equal(own.result.isError, false);
    assert.equal(own.result.structuredContent.raw_provenance.database, "scratch");
    assert.deepEqual(own.result.structuredContent.rows, [["42"]]);
  });

  test("every authenticated call is logged with the token's name, never the token", async () => {
    const session = await openSession(aliceToken);
    await (await post({ jsonrpc: "2.0", id: 7, method: "ping" }, { token: aliceToken, headers: sessionHeaders(session) })).json();
    const log = server.log();
    const requests = log
      .split("\n")
      .filter((line) => line.includes('"event":"request"'))
      .map((line) => JSON.parse(line));
    assert.ok(requests.some((entry) => entry.token === "alice" && entry.method === "ping" && entry.status === 200));
    assert.ok(requests.every((entry) => entry.token === "alice" || entry.token === "bob"));
    assert.equal(log.includes(aliceToken), false);
    assert.equal(log.includes(bobToken), false);
  });
});

describe("refusing to start", () => {
  test("no tokens on an address that is not loopback: exit 2, nothing served", async () => {
    const { url, exitCode, stderr } = await startHttpServer(binary, { databases: [{ path: ":memory:" }] }, { listen: "0.0.0.0:0" });
    assert.equal(url, null);
    assert.equal(exitCode, 2);
    assert.match(stderr, /http\.tokens/);
  });

  test("a memory budget smaller than one call's reservation: exit 2, naming the key and the reservation", async () => {
    const config = { databases: [{ path: ":memory:", limits: { max_bytes: 3 * 1024 * 1024 } }],
                     http: { max_memory_bytes: 32 * 1024 * 1024 } };
    const { url, exitCode, stderr } = await startHttpServer(binary, config);
    assert.equal(url, null);
    assert.equal(exitCode, 2);
    assert.match(stderr, /http\.max_memory_bytes/);
    assert.match(stderr, /41943040 bytes/);  // 2 × 8 MiB + 8 × 3 MiB
  });

  test("a listen address that is not HOST:PORT: exit 2", async () => {
    const { url, exitCode } = await startHttpServer(binary, { databases: [{ path: ":memory:" }] }, { listen: "127.0.0.1" });
    assert.equal(url, null);
    assert.equal(exitCode, 2);
  });
});

describe("the default listen address", () => {
  test("a port alone listens on loopback", async () => {
    const own = await startHttpServer(binary, { databases: [{ path: ":memory:" }] }, { listen: "0" });
    assert.match(own.url ?? "", /^http:\/\/127\.0\.0\.1:[0-9]+\/mcp$/);
    assert.equal(await own.stop(), 0);
  });
});

// A SQLite statement that runs for about 0.7 s on an idle machine, well
// inside the 5 s statement timeout and the 5 s grace of a stop; the tests
// wait for the server to say a call runs, never for a guessed time.
const slowSql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500000) SELECT count(*) AS c FROM n";

describe("calls in flight", () => {
  test("notifications/cancelled stops a running call: it gets no response, and is logged answered with nothing", async () => {
    const before = unansweredCalls(server);
    const session = await openSession(aliceToken);
    const headers = { authorization: `Bearer ${aliceToken}`, ...sessionHeaders(session) };
    const { messages } = await startWatchedCall(server.url, headers,
      { jsonrpc: "2.0", id: 41, method: "tools/call", params: { name: "raw_sql", arguments: { sql: slowSql.replace("1500000", "300000000") } } });
    const cancel = await post(
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 41, reason: "test" } },
      { token: aliceToken, headers: sessionHeaders(session) },
    );
    assert.equal(cancel.status, 202);
    const sent = await messages;
    assert.deepEqual(sent.filter((message) => message.id === 41), [], "a cancelled call gets no response");
    assert.ok((await waitForUnanswered(server, before)) > before, "the cancelled call is logged answered with nothing");
    // Its event stream had begun, so the status it was sent, and logged, is 200.
    assert.equal(unansweredCallStatuses(server).at(-1), 200);
  });

  test("a client that closes its connection during a call cancels the statement", async () => {
    const before = unansweredCalls(server);  // other tests cancel some
    const session = await openSession(aliceToken);
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 43,
      method: "tools/call",
      params: { name: "raw_sql", arguments: { sql: slowSql.replace("1500000", "300000000") }, _meta: { progressToken: "watch" } },
    });
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.on("connect", resolve));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${aliceToken}\r\nContent-Type: application/json\r\n` +
        "Accept: application/json, text/event-stream\r\n" +
        `Mcp-Session-Id: ${session}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // Hangs up once the server says the call runs (its first progress event).
    let received = "";
    await new Promise((resolve, reject) => {
      socket.on("data", (chunk) => {
        received += chunk;
        if (received.includes("notifications/progress")) resolve();
      });
      socket.on("close", () => reject(new Error(`closed before the call ran: ${received}`)));
    });
    socket.destroy();
    // Left alone the statement would run until its 5 s timeout and be
    // answered 200; cancelled, its request is logged answered with nothing.
    assert.ok((await waitForUnanswered(server, before)) > before, "the call was not cancelled within 3 s of the hang-up");
  });

  test("SIGTERM lets a call in flight finish and answer, then exits 0", async () => {
    const own = await startHttpServer(binary, config);
    assert.ok(own.url);
    const session = await ownSession(own.url);
    const { response, messages } = await startWatchedCall(own.url, { authorization: `Bearer ${aliceToken}`, ...sessionHeaders(session) },
      { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "raw_sql", arguments: { sql: slowSql } } });
    const stopped = own.stop();
    assert.equal(response.status, 200);
    const body = (await messages).find((message) => message.id === 5);
    assert.equal(body?.result?.isError, false, JSON.stringify(body));
    assert.deepEqual(body.result.structuredContent.rows, [["1500000"]]);
    assert.equal(await stopped, 0);
  });

  test("SIGTERM cancels a call still running after the 5 s grace and answers it 503 with a JSON-RPC error", async () => {
    const patient = structuredClone(config);
    patient.databases[0].limits = { statement_timeout_ms: 60000 };
    patient.http.max_calls_per_token = 1;  // a second call refused: the first is held
    const endless = slowSql.replace("1500000", "3000000000");
    const { response, exitCode, stoppedAt } = await callThenStop(patient, "long", endless);
    assert.equal(response.status, 503);
    const body = await response.json();
    assert.equal(body.id, "long");
    assert.equal(body.error.code, -32000);
    assert.ok(Date.now() - stoppedAt >= 4500, "answered before the grace ran out");
    assert.equal(exitCode, 0);
  });
});

// Opens a session on the server at `url` with alice's token; its id.
async function ownSession(url) {
  const opened = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${aliceToken}` },
    body: JSON.stringify(initialize),
  });
  await opened.json();
  return opened.headers.get("mcp-session-id");
}

// Starts a server of its own with `serverConfig` (max_calls_per_token 1),
// opens a session with alice's token, starts a raw_sql call of `sql` with
// request id `id` answered as plain JSON, and sends SIGTERM once the server
// holds it: a probe call of the same token is refused for the call slot the
// first one takes. Resolves with the call's response, the exit status and
// when the stop was sent.
async function callThenStop(serverConfig, id, sql) {
  const own = await startHttpServer(binary, serverConfig);
  assert.ok(own.url);
  const request = (body, headers = {}) =>
    fetch(own.url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${aliceToken}`, ...headers },
      body: JSON.stringify(body),
    });
  const session = await ownSession(own.url);
  const { response: call } = await startHeldCall(request, sessionHeaders(session),
    { jsonrpc: "2.0", id, method: "tools/call", params: { name: "raw_sql", arguments: { sql } } });
  const stoppedAt = Date.now();
  const stopped = own.stop();
  const response = await call;
  return { response, exitCode: await stopped, stoppedAt };
}

// A server of the enclosing describe's own, with `http` settings over the
// shared configuration's, started before its tests and stopped after them;
// and how its tests post to it and open sessions on it.
function ownServer(http) {
  const own = { url: null };
  before(async () => {
    Object.assign(own, await startHttpServer(binary, { ...config, http: { ...config.http, ...http } }));
    assert.ok(own.url);
  });
  after(async () => {
    if (own.url) assert.equal(await own.stop(), 0);
  });
  const request = (token, body, headers = {}) =>
    fetch(own.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
  const open = async (token) => {
    const response = await request(token, initialize);
    await response.text();
    return { status: response.status, id: response.headers.get("mcp-session-id") };
  };
  return { own, request, open };
}

describe("sessions per token", () => {
  const { own, request, open } = ownServer({ max_sessions_per_token: 2, session_idle_seconds: 2 });
  // Opens a session once the token has room for one (sessions that idle past
  // session_idle_seconds end); 503s until then, for at most 20 s.
  const openOnceRoom = async (token) => {
    const deadline = Date.now() + 20000;
    for (;;) {
      const opened = await open(token);
      if (opened.status !== 503 || Date.now() > deadline) return opened;
      await new Promise((resolve) => setTimeout(resolve, 50));  // pacing; the deadline bounds the wait
    }
  };

  test("a token gets max_sessions_per_token sessions; idle ones end after session_idle_seconds", async () => {
    const first = await open(aliceToken);
    const second = await open(aliceToken);
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    const refused = await request(aliceToken, initialize);
    assert.equal(refused.status, 503);
    assert.match((await refused.json()).error?.message,
      /^this token has max_sessions_per_token=2 \(http\.max_sessions_per_token\) sessions open; end one/);
    assert.equal((await open(bobToken)).status, 200, "another token's sessions are counted apart");
    const full = Date.now();
    const third = await openOnceRoom(aliceToken);
    assert.equal(third.status, 200, "idle sessions make room");
    assert.ok(Date.now() - full >= 1000, "a session idle for less than session_idle_seconds made room");
    const ping = await request(aliceToken, { jsonrpc: "2.0", id: 2, method: "ping" }, sessionHeaders(first.id));
    assert.equal(ping.status, 404, "an expired session is unknown");
    const ended = await fetch(own.url, { method: "DELETE", headers: { authorization: `Bearer ${aliceToken}`, ...sessionHeaders(third.id) } });
    assert.equal(ended.status, 204);
  });

});

describe("calls per token", () => {
  // Sessions never idle out here (the default session_idle_seconds), so the
  // checks hold however slowly the machine runs the call.
  const { own, request, open } = ownServer({ max_sessions_per_token: 2, max_calls_per_token: 1 });

  test("a token gets max_calls_per_token calls at once; another token is not held back", async () => {
    const a1 = await open(aliceToken);
    const a2 = await open(aliceToken);
    const b = await open(bobToken);
    const toolCall = (id, sql) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "raw_sql", arguments: { sql } } });
    const call = (token, session, id, sql) => request(token, toolCall(id, sql), sessionHeaders(session));
    // The first call runs until it is cancelled: the checks below meet it
    // running whatever the machine's speed.
    const running = await startWatchedCall(own.url, { authorization: `Bearer ${aliceToken}`, ...sessionHeaders(a1.id) },
      toolCall(1, slowSql.replace("1500000", "3000000000")));
    const refused = await (await call(aliceToken, a2.id, 2, "SELECT 1")).json();
    assert.equal(refused.id, 2);
    assert.equal(refused.error?.code, -32000);
    assert.match(refused.error.message, /^this token has max_calls_per_token=1 \(http\.max_calls_per_token\) tool calls running/);
    const other = await (await call(bobToken, b.id, 3, "SELECT 1")).json();
    assert.equal(other.result?.isError, false);
    const cancel = await request(aliceToken, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }, sessionHeaders(a1.id));
    assert.equal(cancel.status, 202);
    assert.deepEqual((await running.messages).filter((message) => message.id === 1), [], "the cancelled call is not answered");
    const after = await (await call(aliceToken, a2.id, 4, "SELECT 1")).json();
    assert.equal(after.result?.isError, false, "the token's call slot is free again once its call has ended");
  });

  test("a client that sends each call the moment it has read the last answer is never refused", async () => {
    // The client can read an answer before the server has seen its write
    // end; the next call waits for that instead of being refused.
    const { status, id } = await open(bobToken);
    assert.equal(status, 200);
    const busy = [];
    for (let i = 0; i < 300; ++i) {
      const body = { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "raw_sql", arguments: { sql: "SELECT 1" } } };
      const answer = await (await request(bobToken, body, sessionHeaders(id))).json();
      if (answer.result?.isError !== false) busy.push(answer);
    }
    assert.deepEqual(busy, []);
  });
});

describe("session limits under a burst", () => {
  // A place under the limits is taken when an initialize is accepted, not
  // when it is answered: 40 initializes at once cannot pass either limit.
  const { request } = ownServer({ max_sessions: 6, max_sessions_per_token: 4 });
  const burst = (token) =>
    Promise.all(
      Array.from({ length: 40 }, () =>
        request(token, initialize).then(async (response) => {
          await response.text();
          return { status: response.status, id: response.headers.get("mcp-session-id") };
        }),
      ),
    );

  test("40 initializes at once: max_sessions_per_token get sessions, the rest 503; then max_sessions caps the server, "+
    "shared between the tokens", async () => {
    // Initializes that fail, one after another, more than the limit: each
    // holds a place while it runs and gives it back when it fails.
    for (let i = 0; i < 6; ++i) {
      const response = await request(aliceToken, { ...initialize, params: { capabilities: {} } });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("mcp-session-id"), null, "an initialize without protocolVersion opens no session");
      assert.equal((await response.json()).error?.code, -32602);
    }
    const alice = await burst(aliceToken);
    assert.equal(alice.filter((r) => r.status === 200 && r.id).length, 4, "max_sessions_per_token is 4");
    assert.equal(alice.filter((r) => r.status === 503).length, 36);
    const bob = await burst(bobToken);
    assert.equal(bob.filter((r) => r.status === 200 && r.id).length, 3,
      "max_sessions is 6: bob got the 2 places left and one of alice's, who held two more than he did");
    assert.equal(bob.filter((r) => r.status === 503).length, 37);
    const open = [];
    for (const [token, replies] of [[aliceToken, alice], [bobToken, bob]]) {
      for (const { id } of replies.filter((r) => r.id)) {
        const ping = await request(token, { jsonrpc: "2.0", id: 2, method: "ping" }, sessionHeaders(id));
        await ping.text();
        if (ping.status === 200) open.push(token);
      }
    }
    assert.deepEqual(open.sort(), [aliceToken, aliceToken, aliceToken, bobToken, bobToken, bobToken].sort(),
      "6 sessions open, 3 each");
  });
});

describe("sessions shared fairly between tokens", () => {
  // max_sessions_per_token is left at its default (max_sessions): one token
  // may fill the server, but cannot keep another out.
  const { own, request, open } = ownServer({ max_sessions: 16 });

  test("one token opening sessions as fast as it can never locks another out: each gets half of max_sessions", async () => {
    // alice opens sessions on six connections at once, without pause, until told to stop.
    let flooding = true;
    let aliceFull;
    const full = new Promise((resolve) => { aliceFull = resolve; });
    const flood = Array.from({ length: 6 }, async () => {
      let opened = 0;
      while (flooding) {
        const { status } = await open(aliceToken);
        if (status === 200) ++opened;
        else if (status === 503) aliceFull();
        else assert.fail(`alice's initialize got ${status}`);
      }
      return opened;
    });
    await full;  // every place is alice's or being filled by her
    const bobs = [];
    for (let i = 0; i < 8; ++i) {
      const opened = await open(bobToken);
      assert.equal(opened.status, 200, `bob's initialize ${i + 1} while alice floods`);
      bobs.push(opened.id);
    }
    flooding = false;
    const aliceOpened = (await Promise.all(flood)).reduce((a, b) => a + b, 0);
    assert.ok(aliceOpened >= 16, "alice opened sessions throughout");
    for (const id of bobs) {
      const ping = await request(bobToken, { jsonrpc: "2.0", id: 2, method: "ping" }, sessionHeaders(id));
      assert.equal(ping.status, 200, "none of bob's sessions was taken");
      await ping.text();
    }
    // alice fills what is free; then the two hold half each and take nothing from each other.
    while ((await open(aliceToken)).status === 200);
    assert.equal((await open(bobToken)).status, 503);
    assert.equal((await open(aliceToken)).status, 503);
    assert.match(own.log(), /"event":"session_taken"/);
  });
});

describe("certified queries per token", () => {
  // Two queries on each database; bob reaches only scratch.
  const catalog = {
    queries: [
      { name: "main_answer", database: "main", description: "On main.", sql: "SELECT 'main' AS answer" },
      { name: "main_echo", database: "main", description: "On main too.", sql: "SELECT ?1 AS echoed", parameters: [{ name: "text", type: "text" }] },
      { name: "scratch_answer", database: "scratch", description: "On scratch.", sql: "SELECT 'scratch' AS answer" },
    ],
  };
  for (const mode of ["single", "per_query"]) {
    test(`certified_tools ${mode}: a token is shown and runs only the queries on its databases`, async () => {
      const own = await startHttpServer(binary, { ...structuredClone(config), catalog: "catalog.json", certified_tools: mode }, {
        files: { "catalog.json": catalog },
      });
      assert.ok(own.url, `the server must start with a catalog beyond a token's reach: ${own.stderr?.()}`);
      try {
        const request = (token, session, body) =>
          fetch(own.url, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              authorization: `Bearer ${token}`,
              ...(session ? sessionHeaders(session) : {}),
            },
            body: JSON.stringify(body),
          }).then((response) => response.json().then((json) => ({ response, json })));
        const open = async (token) => (await request(token, null, initialize)).response.headers.get("mcp-session-id");
        const tool = (token, session, id, name, args) =>
          request(token, session, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }).then((r) => r.json);

        const bob = await open(bobToken);
        const alice = await open(aliceToken);
        const bobInit = JSON.stringify((await request(bobToken, null, initialize)).json);
        assert.equal(bobInit.includes("main_answer") || bobInit.includes("main_echo"), false, "instructions name a query beyond reach");
        const bobTools = (await request(bobToken, bob, { jsonrpc: "2.0", id: 2, method: "tools/list" })).json.result.tools;
        const aliceTools = (await request(aliceToken, alice, { jsonrpc: "2.0", id: 2, method: "tools/list" })).json.result.tools;
        assert.equal(JSON.stringify(bobTools).includes("main_"), false, "bob's tools name a query on main");
        assert.ok(JSON.stringify(bobTools).includes("scratch_answer"));
        assert.ok(JSON.stringify(aliceTools).includes("main_echo"), "alice reaches every database and is shown every query");

        const listing = await tool(bobToken, bob, 3, "describe_catalog", {});
        assert.equal(listing.result.isError, false);
        assert.deepEqual(listing.result.structuredContent.queries.map((q) => q.name), ["scratch_answer"]);
        assert.equal(listing.result.content[0].text.includes("main_"), false);
        const aliceListing = await tool(aliceToken, alice, 3, "describe_catalog", {});
        assert.deepEqual(aliceListing.result.structuredContent.queries.map((q) => q.name), ["main_answer", "main_echo", "scratch_answer"]);

        const run = (token, session, id, name) =>
          mode === "single" ? tool(token, session, id, "certified_query", { name }) : tool(token, session, id, name, {});
        const reached = await run(bobToken, bob, 4, "scratch_answer");
        assert.equal(reached.result?.isError, false);
        assert.deepEqual(reached.result.structuredContent.rows, [["scratch"]]);
        const beyond = await run(bobToken, bob, 5, "main_answer");
        assert.ok(beyond.error || beyond.result?.isError, "a query on a database beyond reach must be refused");
        assert.equal(JSON.stringify(beyond).includes('"main"'), false, "the refusal shows main's rows or label");
        const aliceRun = await run(aliceToken, alice, 5, "main_answer");
        assert.deepEqual(aliceRun.result.structuredContent.rows, [["main"]]);

        // describe_schema takes a database argument too: bob's is scratch, and main is not his to describe.
        const schema = await tool(bobToken, bob, 6, "describe_schema", {});
        assert.equal(schema.result.isError, false);
        assert.equal(schema.result.structuredContent.certified_provenance.database, "scratch");
        const schemaBeyond = await tool(bobToken, bob, 7, "describe_schema", { database: "main" });
        assert.equal(schemaBeyond.result?.isError, true, "describe_schema on a database beyond reach must be refused");
        assert.equal(JSON.stringify(schemaBeyond.result.structuredContent).includes('"main"'), false);
      } finally {
        assert.equal(await own.stop(), 0);
      }
    });
  }
});

test("at start the HTTP server logs a warning with its cause for each database it cannot use, and serves on", async () => {
  const own = await startHttpServer(binary, {
    databases: [
      { label: "main", path: ":memory:" },
      { label: "gone", path: "/nonexistent-rawtool-dir/gone.sqlite" },
    ],
  });
  assert.ok(own.url, `the server did not start (exit ${own.exitCode}): ${own.stderr}`);
  try {
    const deadline = Date.now() + 10000;
    const unusable = () =>
      own
        .log()
        .split("\n")
        .filter((line) => line.includes('"event":"database_unusable"'))
        .map((line) => JSON.parse(line));
    while (unusable().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const warnings = unusable();
    assert.equal(warnings.length, 1, own.log());
    assert.equal(warnings[0].level, "warn");
    assert.equal(warnings[0].database, "gone");
    assert.equal(warnings[0].cause, "file_missing");
    assert.match(warnings[0].complaint, /\/nonexistent-rawtool-dir\/gone\.sqlite/);
    const answer = await fetch(own.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify(initialize),
    });
    assert.equal(answer.status, 200);
  } finally {
    assert.equal(await own.stop(), 0);
  }
});
