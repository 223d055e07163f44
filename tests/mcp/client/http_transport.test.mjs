// The HTTP transport's timeouts, its reading of Accept, DELETE during a call,
// and its stateless mode, against the real binary.
//
//   node http_transport.test.mjs --binary build/dev/rawtool/rawtool [--sanitized]

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";

import { argument, parseEvents, sha256Hex, startHttpServer, startHeldCall, startWatchedCall, unansweredCallStatuses, unansweredCalls, waitForUnanswered } from "./http_server.mjs";

const binary = argument("--binary");
// Built with sanitizers (RAWTOOL_SANITIZE): their runtime needs file
// descriptors of its own (UBSan reads memory through a pipe to check a
// vptr), so a process out of them reports errors that are not rawtool's.
const sanitized = process.argv.includes("--sanitized");
const token = "transport-token-51c0";
const baseConfig = {
  databases: [{ label: "main", path: ":memory:", limits: { statement_timeout_ms: 60000 } }],
  http: { tokens: [{ name: "agent", sha256: sha256Hex(token) }] },
};
const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};
// Runs for minutes on SQLite unless cancelled.
const endlessSql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000000) SELECT count(*) FROM n";

function poster(url) {
  return (body, headers = {}) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
}

// Opens a raw connection; resolves with { socket, closed } where closed
// resolves with the milliseconds from `start` to the server's close, and
// everything received.
function rawConnection(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      const start = Date.now();
      let received = "";
      socket.on("data", (chunk) => (received += chunk));
      const closed = new Promise((done) => socket.on("close", () => done({ after: Date.now() - start, received })));
      resolve({ socket, closed });
    });
    socket.on("error", reject);
  });
}

// Posts `initialize` until a connection is taken and answered: the server
// notices a connection's close on its own time, so room made by closing one
// shows a moment later. The status of the first answer; fails after 5 s.
async function servedOnceRoom(url) {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      return (await poster(url)(initialize)).status;
    } catch (error) {
      // Closed unread: still over max_connections.
      if (Date.now() > deadline) throw new Error(`no connection was served within 5 s: ${error}`);
      await new Promise((resolve) => setTimeout(resolve, 20));  // pacing; the deadline bounds the wait
    }
  }
}

// Resolves once `connection` (a rawConnection) has received text matching
// `pattern`; fails after 10 s.
async function receivedOn(connection, pattern) {
  const deadline = Date.now() + 10000;
  let received = "";
  const seen = new Promise((resolve) => {
    const look = (chunk) => {
      received += chunk;
      if (pattern.test(received)) {
        connection.socket.off("data", look);
        resolve(received);
      }
    };
    connection.socket.on("data", look);
  });
  const late = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`nothing matching ${pattern} within 10 s; received ${JSON.stringify(received)}`)), deadline - Date.now()).unref(),
  );
  return Promise.race([seen, late]);
}

// A raw connection that has sent `initialize` with the token and read its
// answer: it now waits for its next request, and has carried a valid token.
async function servedWithToken(url) {
  const connection = await rawConnection(url);
  const body = JSON.stringify(initialize);
  connection.socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  await receivedOn(connection, /"protocolVersion"/);
  return connection;
}

// Whether `connection` is closed by now (what has already arrived is seen):
// for one that must still be open after the event that would have closed it.
async function isClosed(connection) {
  return (await Promise.race([connection.closed.then(() => true), new Promise((resolve) => setImmediate(() => resolve(false)))]));
}

function toolCall(id, sql) {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name: "raw_sql", arguments: { sql } } };
}

describe("timeouts", () => {
  let server;
  before(async () => {
    const config = structuredClone(baseConfig);
    Object.assign(config.http, { request_timeout_seconds: 1, idle_timeout_seconds: 2 });
    server = await startHttpServer(binary, config);
    assert.ok(server.url);
  });
  after(async () => {
    if (server?.url) assert.equal(await server.stop(), 0);
  });

  test("a client that sends its headers a byte at a time is cut off at request_timeout_seconds", async () => {
    const { socket, closed } = await rawConnection(server.url);
    const head = `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n`;
    let at = 0;
    const drip = setInterval(() => {
      if (!socket.destroyed && at < head.length) socket.write(head[at++]);
    }, 100);
    const { after: closedAfter, received } = await closed;
    clearInterval(drip);
    assert.ok(at < head.length, "the whole request was read: the test dripped too fast");
    assert.ok(closedAfter >= 900 && closedAfter < 3000, `closed after ${closedAfter} ms`);
    assert.equal(received, "", "a request cut off is not answered");
  });

  test("a body that stops coming is cut off at request_timeout_seconds", async () => {
    const { socket, closed } = await rawConnection(server.url);
    socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`);
    const { after: closedAfter } = await closed;
    assert.ok(closedAfter >= 900 && closedAfter < 3000, `closed after ${closedAfter} ms`);
  });

  test("a connection with no request is closed at idle_timeout_seconds; one that sends in time is served", async () => {
    const idle = await rawConnection(server.url);
    const busy = await rawConnection(server.url);
    // Longer than request_timeout_seconds, shorter than idle_timeout_seconds: waiting is not sending slowly.
    await new Promise((resolve) => setTimeout(resolve, 1300));
    const body = JSON.stringify(initialize);
    busy.socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    const { after: idleAfter, received: idleReceived } = await idle.closed;
    assert.ok(idleAfter >= 1900 && idleAfter < 4000, `the idle connection closed after ${idleAfter} ms`);
    assert.equal(idleReceived, "");
    // The served connection is kept alive, then closed once idle in turn.
    const { after: busyAfter, received } = await busy.closed;
    assert.match(received, /^HTTP\/1\.1 200 /);
    assert.ok(received.includes('"protocolVersion"'));
    assert.ok(busyAfter >= 1300 + 1900, `the served connection closed after ${busyAfter} ms`);
  });
});

describe("head_timeout_seconds", () => {
  let server;
  before(async () => {
    const config = structuredClone(baseConfig);
    Object.assign(config.http, { head_timeout_seconds: 1, request_timeout_seconds: 5, idle_timeout_seconds: 5 });
    server = await startHttpServer(binary, config);
    assert.ok(server.url);
  });
  after(async () => {
    if (server?.url) assert.equal(await server.stop(), 0);
  });

  test("a connection that sends nothing, or its headers a byte at a time, is closed at head_timeout_seconds of its opening", async () => {
    const silent = await rawConnection(server.url);
    const slow = await rawConnection(server.url);
    const head = `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n`;
    let sent = 0;
    const drip = setInterval(() => slow.socket.write(head[sent++ % head.length]), 100);
    try {
      for (const { after, received } of [await silent.closed, await slow.closed]) {
        assert.ok(after >= 900 && after < 3000, `closed after ${after} ms, not at head_timeout_seconds`);
        assert.equal(received, "");
      }
    } finally {
      clearInterval(drip);
    }
  });

  test("a connection served once waits idle_timeout_seconds for its next request, not head_timeout_seconds", async () => {
    const served = await servedWithToken(server.url);
    await new Promise((resolve) => setTimeout(resolve, 1500));  // past head_timeout_seconds, within idle_timeout_seconds
    assert.equal(await isClosed(served), false, "a kept-alive connection was closed at head_timeout_seconds");
    served.socket.destroy();
  });
});

describe("Accept", () => {
  let server;
  let post;
  before(async () => {
    server = await startHttpServer(binary, baseConfig);
    assert.ok(server.url);
    post = poster(server.url);
  });
  after(async () => {
    if (server?.url) assert.equal(await server.stop(), 0);
  });

  test("a client that accepts neither JSON nor an event stream gets 406, before its body is read", async () => {
    for (const accept of ["text/html", "application/xml, text/plain", "application/json;q=0", "application/json; q=0.0, text/event-stream;q=0"]) {
      const response = await post(initialize, { accept });
      assert.equal(response.status, 406, accept);
      const body = await response.json();
      assert.equal(body.error.code, -32600);
    }
  });

  test("JSON by any spelling of the media range is answered as JSON", async () => {
    for (const accept of ["application/json", "*/*", "application/*;q=0.5", "APPLICATION/JSON"]) {
      const response = await post(initialize, { accept });
      assert.equal(response.status, 200, accept);
      assert.match(response.headers.get("content-type"), /^application\/json/);
      assert.ok((await response.json()).result);
    }
  });

  test("a client that takes only an event stream gets every answer as one, the session id included", async () => {
    const response = await post(initialize, { accept: "text/event-stream" });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type"), /^text\/event-stream/);
    const session = response.headers.get("mcp-session-id");
    assert.match(session ?? "", /^[0-9a-f]{32}$/);
    const events = parseEvents(await response.text());
    assert.equal(events.length, 2);
    assert.equal(events[0].data, "", "a priming event first");
    assert.ok(JSON.parse(events[1].data).result.protocolVersion);
    const headers = { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
    const call = await post(toolCall(2, "SELECT 7 AS seven"), headers);
    assert.match(call.headers.get("content-type"), /^text\/event-stream/);
    const data = JSON.parse(parseEvents(await call.text()).at(-1).data);
    assert.deepEqual(data.result.structuredContent.rows, [["7"]]);
  });
});

describe("event ids: unique per stream, none resumed", () => {
  // The events of one tools/call asked with a progress token, from a fresh
  // server's session (or, stateless, its own request).
  async function streamedCall(post, id, headers = {}) {
    const call = toolCall(id, `SELECT ${id} AS n`);
    call.params._meta = { progressToken: `t${id}` };
    const response = await post(call, headers);
    assert.match(response.headers.get("content-type"), /^text\/event-stream/);
    return parseEvents(await response.text());
  }

  for (const sessions of [true, false]) {
    test(`every event has an id, the first an empty priming event, and no id repeats across streams (sessions ${sessions})`, async () => {
      const config = structuredClone(baseConfig);
      config.http.sessions = sessions;
      const server = await startHttpServer(binary, config);
      try {
        const post = poster(server.url);
        const opened = await post(initialize);
        await opened.json();
        const headers = sessions ? { "mcp-session-id": opened.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" } : {};
        const streams = [await streamedCall(post, 2, headers), await streamedCall(post, 3, headers)];
        for (const [i, events] of streams.entries()) {
          assert.ok(events.length >= 3, "priming, running, the response");
          assert.equal(events[0].data, "", "the priming event's data is empty");
          assert.equal(JSON.parse(events.at(-1).data).id, i + 2);
          assert.ok(events.every((event) => /^[0-9a-f]{16}-[0-9]+$/.test(event.id ?? "")), JSON.stringify(events));
          assert.equal(new Set(events.map((event) => event.id.split("-")[0])).size, 1, "one stream, one prefix");
        }
        const ids = streams.flat().map((event) => event.id);
        assert.equal(new Set(ids).size, ids.length, `an id repeats: ${ids}`);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    });
  }

  test("a GET with a stream's Last-Event-ID is 405, as for any GET: rawtool resumes no stream", async () => {
    const server = await startHttpServer(binary, baseConfig);
    try {
      const post = poster(server.url);
      const opened = await post(initialize);
      await opened.json();
      const headers = { "mcp-session-id": opened.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" };
      const events = await streamedCall(post, 2, headers);
      assert.ok(events.at(-1).id, "the response's event has an id");
      const resumed = await fetch(server.url, {
        method: "GET",
        headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, "last-event-id": events.at(-1).id, ...headers },
      });
      assert.equal(resumed.status, 405);
      assert.equal(resumed.headers.get("allow"), "POST, DELETE");
      assert.equal(await resumed.text(), "");
      // The session is untouched.
      assert.equal(JSON.parse((await streamedCall(post, 3, headers)).at(-1).data).id, 3);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe("DELETE during a call", () => {
  test("DELETE is answered at once while the session's call is cancelled", async () => {
    const held = structuredClone(baseConfig);
    held.http.max_calls_per_token = 1;  // a probe call refused: the first is held
    const server = await startHttpServer(binary, held);
    try {
      const post = poster(server.url);
      const opened = await post(initialize);
      const session = opened.headers.get("mcp-session-id");
      await opened.json();
      const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
      const started = Date.now();
      const { response: call } = await startHeldCall(post, headers, toolCall("long", endlessSql));
      const deleted = await fetch(server.url, { method: "DELETE", headers: { authorization: `Bearer ${token}`, ...headers } });
      assert.equal(deleted.status, 204);
      const answer = await call;
      assert.equal(answer.status, 202, "a cancelled call gets no response");
      assert.deepEqual(unansweredCallStatuses(server), [202], "logged with the status sent, answered with nothing");
      assert.ok(Date.now() - started < 10000, "the statement was not cancelled");
      // The server still serves: its I/O threads were not held.
      assert.equal((await post(initialize)).status, 200);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe("stateless mode (http.sessions false)", () => {
  let server;
  let post;
  before(async () => {
    const config = structuredClone(baseConfig);
    config.http.sessions = false;
    config.http.shutdown_grace_seconds = 1;
    server = await startHttpServer(binary, config);
    assert.ok(server.url);
    post = poster(server.url);
  });
  after(async () => {
    if (server?.url) assert.equal(await server.stop(), 0);
  });

  test("initialize issues no session id, and any request stands alone without one", async () => {
    const opened = await post(initialize);
    assert.equal(opened.status, 200);
    assert.equal(opened.headers.get("mcp-session-id"), null);
    assert.ok((await opened.json()).result.protocolVersion);
    const listed = await (await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-protocol-version": "2025-11-25" })).json();
    assert.ok(listed.result.tools.some((tool) => tool.name === "raw_sql"));
    const called = await (await post(toolCall(3, "SELECT 5 AS five"))).json();
    assert.equal(called.result.isError, false);
    assert.deepEqual(called.result.structuredContent.rows, [["5"]]);
    // A session id a client sends anyway is not looked up.
    const withId = await post(toolCall(4, "SELECT 6"), { "mcp-session-id": "0123456789abcdef0123456789abcdef" });
    assert.equal(withId.status, 200);
  });

  test("requests with the same id from different clients at once are answered apart", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(toolCall(1, `SELECT ${i} AS n`)).then((response) => response.json())),
    );
    answers.forEach((answer, i) => assert.deepEqual(answer.result.structuredContent.rows, [[String(i)]]));
  });

  test("DELETE and GET are 405 naming POST", async () => {
    for (const method of ["DELETE", "GET"]) {
      const response = await fetch(server.url, { method, headers: { authorization: `Bearer ${token}` } });
      assert.equal(response.status, 405, method);
      assert.equal(response.headers.get("allow"), "POST");
    }
  });

  test("closing the connection cancels the call", async () => {
    const before = unansweredCalls(server);
    const { socket, closed } = await rawConnection(server.url);
    const watched = toolCall(9, endlessSql);
    watched.params._meta = { progressToken: "watch" };  // its answer an event stream, its start an event
    const body = JSON.stringify(watched);
    let received = "";
    const running = new Promise((resolve) => socket.on("data", (chunk) => {
      received += chunk;
      if (received.includes("notifications/progress")) resolve();
    }));
    socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await running;  // hangs up once the server says the call runs
    socket.destroy();
    await closed;
    // Left alone the statement would run for minutes (statement_timeout_ms
    // is 60000); cancelled, its request is logged answered with nothing.
    assert.equal(await waitForUnanswered(server, before), before + 1, "the call was not cancelled within 3 s of the hang-up");
  });
});

describe("a stop with shutdown_grace_seconds", () => {
  test("SIGTERM in stateless mode cancels a call past the configured grace and answers it 503", async () => {
    const config = structuredClone(baseConfig);
    // max_calls_per_token 1: the call is known to be held when a probe is refused its slot.
    Object.assign(config.http, { sessions: false, shutdown_grace_seconds: 1, max_calls_per_token: 1 });
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    const { response: call } = await startHeldCall(poster(server.url), {}, toolCall("long", endlessSql));
    const stoppedAt = Date.now();
    const stopped = server.stop();
    const response = await call;
    const answeredAfter = Date.now() - stoppedAt;
    assert.equal(response.status, 503);
    const body = await response.json();
    assert.equal(body.id, "long");
    assert.equal(body.error.code, -32000);
    assert.ok(answeredAfter >= 900 && answeredAfter < 4000, `answered ${answeredAfter} ms after the stop`);
    assert.equal(await stopped, 0);
  });

  test("a call whose event stream had begun ends it with the stop's error, and is logged with the 200 it was sent", async () => {
    const config = structuredClone(baseConfig);
    Object.assign(config.http, { sessions: false, shutdown_grace_seconds: 1 });
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    const { response, messages } = await startWatchedCall(server.url, { authorization: `Bearer ${token}` }, toolCall("long", endlessSql));
    const stopped = server.stop();
    assert.equal(response.status, 200);
    const answer = (await messages).find((message) => message.id === "long");
    assert.equal(answer?.error?.code, -32000, JSON.stringify(answer));
    // Logged before the answer was written; read before the stop removes the log.
    const logged = server.log().split("\n").filter((line) => line.includes('"method":"tools/call"')).map((line) => JSON.parse(line));
    assert.deepEqual(logged.map((entry) => [entry.status, entry.answered]), [[200, undefined]]);
    assert.equal(await stopped, 0);
  });
});

// Asks, on a raw connection of its own, for about 7 MB of answer (a 3.5 MB
// cell twice: text and structured), under the 8 MiB reply limit and past
// what the sockets between hold unread; reads its first bytes (the answer is
// being written) and stops reading there. `streamed`: the call asks for
// progress and takes an event stream. The connection, and the bytes read.
async function unreadReply(url, { streamed = false } = {}) {
  const reader = await rawConnection(url);
  const call = toolCall("big", "SELECT printf('%.*c', 3500000, 'x') AS x");
  if (streamed) call.params._meta = { progressToken: "big" };
  const body = JSON.stringify(call);
  const accept = streamed ? "application/json, text/event-stream" : "application/json";
  reader.socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nAccept: ${accept}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  const received = await new Promise((resolve) => reader.socket.once("data", (chunk) => { reader.socket.pause(); resolve(chunk.length); }));
  assert.ok(received < 6 * 1024 * 1024);
  return { reader, received };
}

describe("a reply waiting for a client that does not read", () => {
  test("holds its token's call slot until it is written, and only its token's; one call waits for the write, "+
    "the rest are refused", async () => {
    const config = structuredClone(baseConfig);
    config.databases[0].limits.max_bytes = 4 * 1024 * 1024;
    config.http.tokens.push({ name: "other", sha256: sha256Hex("other-token-9f2e") });
    Object.assign(config.http, { sessions: false, max_calls_per_token: 1, request_timeout_seconds: 60 });
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    try {
      const unread = await unreadReply(server.url);
      const { reader } = unread;
      let { received } = unread;
      // Four more calls of the token at once: one waits for the unwritten
      // reply's slot, three are refused at once.
      const probe = toolCall("probe", "SELECT 1");
      const answered = [];
      const probes = Array.from({ length: 4 }, () =>
        poster(server.url)(probe).then((response) => response.json()).then((answer) => {
          answered.push(answer);
          return answer;
        }));
      const deadline = Date.now() + 20000;
      while (answered.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(answered.map((answer) => answer.error?.code), [-32000, -32000, -32000],
        `a second call of the token ran beside an unwritten reply: ${JSON.stringify(answered)}`);
      const other = await poster(server.url)(probe, { authorization: "Bearer other-token-9f2e" });
      assert.equal((await other.json()).result?.isError, false, "another token was held back");
      assert.equal(answered.length, 3, "a call ran while the reply was unwritten");
      // Read to the end: once the write has completed the waiting call runs.
      reader.socket.on("data", (chunk) => (received += chunk.length));
      reader.socket.resume();
      const all = await Promise.all(probes);
      assert.equal(all.filter((answer) => answer.result?.isError === false).length, 1,
        `the waiting call did not run once the reply was written: ${JSON.stringify(all)}`);
      // The whole reply arrives (the write completed before the client read its end).
      const end = Date.now() + 10000;
      while (received <= 7 * 1000 * 1000 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(received > 7 * 1000 * 1000, `the reply was ${received} bytes`);
      reader.socket.destroy();
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe("the server's memory budget (http.max_memory_bytes)", () => {
  test("an unread reply holds its bytes of it: a call or a body that does not fit beside it is refused busy, for every token, until it is read", async () => {
    const config = structuredClone(baseConfig);
    // A call reserves twice its answer's limit (8 MiB) and 8 × max_bytes:
    // 48 MiB. 52 MiB holds one call, but not one beside a 7 MB unread reply.
    config.databases[0].limits.max_bytes = 4 * 1024 * 1024;
    config.http.tokens.push({ name: "other", sha256: sha256Hex("other-token-9f2e") });
    Object.assign(config.http, { sessions: false, request_timeout_seconds: 60, max_body_bytes: 64 * 1024 * 1024,
                                 max_memory_bytes: 52 * 1024 * 1024 });
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    try {
      const unread = await unreadReply(server.url);
      const { reader } = unread;
      let { received } = unread;
      const probe = toolCall("probe", "SELECT 1");
      for (const authorization of [`Bearer ${token}`, "Bearer other-token-9f2e"]) {
        const refused = await (await poster(server.url)(probe, { authorization })).json();
        assert.equal(refused.error?.code, -32000, `a call ran beside the unread reply: ${JSON.stringify(refused)}`);
        assert.match(refused.error.message, /^max_memory_bytes=54525952 \(http\.max_memory_bytes\), .* is in use; the call did not run/);
      }
      // A body that would not fit is refused before it is read, in HTTP's words.
      const large = await rawConnection(server.url);
      large.socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`);
      const answer = await large.closed;
      assert.match(answer.received, /^HTTP\/1\.1 503 /);
      assert.match(answer.received, /\r\nRetry-After: 1\r\n/i);
      assert.match(answer.received, /max_memory_bytes=54525952 \(http\.max_memory_bytes\), .* is in use; try again/);
      // Read to the end: the budget is free once the write has completed,
      // which the server learns on its own time, so the probe is repeated (5 s).
      reader.socket.on("data", (chunk) => (received += chunk.length));
      reader.socket.resume();
      const deadline = Date.now() + 5000;
      for (;;) {
        const next = await (await poster(server.url)(probe, { authorization: "Bearer other-token-9f2e" })).json();
        if (next.result) break;
        assert.ok(Date.now() < deadline, `the budget stayed taken after the reply was read (${received} bytes)`);
        await new Promise((resolve) => setTimeout(resolve, 20));  // pacing; the deadline bounds the wait
      }
      reader.socket.destroy();
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  // One JSON body, and an event stream (progress asked for) whose last event is the reply.
  for (const streamed of [false, true]) test(`a reply${streamed ? " streamed as events" : ""} not taken within request_timeout is dropped with its connection, and its memory is free again`, async () => {
    const config = structuredClone(baseConfig);
    config.databases[0].limits.max_bytes = 4 * 1024 * 1024;
    Object.assign(config.http, { sessions: false, request_timeout_seconds: 1, max_memory_bytes: 52 * 1024 * 1024 });
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    try {
      const { reader } = await unreadReply(server.url, { streamed });
      const probe = toolCall("probe", "SELECT 1");
      assert.equal((await (await poster(server.url)(probe)).json()).error?.code, -32000);
      // Never read: after request_timeout (1 s) the server drops the
      // connection, and with it the reply's hold on the budget (10 s).
      const deadline = Date.now() + 10000;
      for (;;) {
        const answer = await (await poster(server.url)(probe)).json();
        if (answer.result) break;
        assert.ok(Date.now() < deadline, `the budget stayed taken past request_timeout: ${JSON.stringify(answer)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));  // pacing; the deadline bounds the wait
      }
      // What the client reads now is what was already on its way: not the whole reply.
      reader.socket.resume();
      const closed = await Promise.race([reader.closed, new Promise((resolve) => setTimeout(() => resolve(null), 10000))]);
      assert.ok(closed !== null, "the connection of the unread reply was kept open");
      assert.ok(closed.received.length < 7 * 1000 * 1000, "the reply was written whole after all");
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

// CPU seconds the process has used (user + system), from /proc.
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;  // utime, stime in clock ticks (100 a second on Linux)
}

describe("connections", () => {
  test("a connection over max_connections is closed unread when every connection is busy with a request; one more fits once another closes", async () => {
    const config = structuredClone(baseConfig);
    Object.assign(config.http, { max_connections: 3, sessions: false });
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    try {
      // Busy: each runs a tool call the server has said it started (its
      // progress event), so none waits for a request and none may be closed
      // to make room.
      const held = [];
      for (let i = 0; i < 3; ++i) {
        const connection = await rawConnection(server.url);
        const call = toolCall(i, endlessSql);
        call.params._meta = { progressToken: `busy-${i}` };
        const body = JSON.stringify(call);
        connection.socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        await receivedOn(connection, /notifications\/progress/);
        held.push(connection);
      }
      const extra = await rawConnection(server.url);
      const closed = await Promise.race([extra.closed, new Promise((resolve) => setTimeout(() => resolve(null), 2000))]);
      assert.ok(closed !== null, "the fourth connection was kept open");
      assert.equal(closed.received, "");
      held[0].socket.destroy();
      await held[0].closed;
      assert.equal(await servedOnceRoom(server.url), 200, "a connection fits again");
      for (const connection of held.slice(1)) connection.socket.destroy();
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  test("at max_connections a new connection closes the oldest waiting one, first those that never carried a valid token", async () => {
    const config = structuredClone(baseConfig);
    config.http.max_connections = 2;
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    try {
      const first = await servedWithToken(server.url);
      const second = await servedWithToken(server.url);
      // Both wait and both carried a token: one goes, the one that began
      // waiting first. A connection begins waiting when the server learns its
      // answer was written, which can come after the client has read it, so
      // which of the two is not known here (IdleConnections' own test checks
      // the order).
      const third = await rawConnection(server.url);
      const gone = await Promise.race([first.closed.then(() => first), second.closed.then(() => second)]);
      const kept = gone === first ? second : first;
      assert.equal((await gone.closed).received.match(/HTTP\/1\.1 /g).length, 1, "the closed connection got nothing more");
      // The third never carried a token: it goes before the one kept, though newer.
      const fourth = await rawConnection(server.url);
      assert.equal((await third.closed).received, "");
      assert.equal(await isClosed(kept), false, "a connection that carried a token was closed before one that never did");
      fourth.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.match(await receivedOn(fourth, /\r\n\r\nok\n/), /^HTTP\/1\.1 200 /);
      assert.ok(server.log().includes('"event":"made_room"'), "making room is not logged");
      kept.socket.destroy();
      fourth.socket.destroy();
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  test("/healthz and a token holder are served while an attacker holds every connection idle and reopens each one closed", async () => {
    const config = structuredClone(baseConfig);
    config.http.max_connections = 8;
    const server = await startHttpServer(binary, config);
    assert.ok(server.url);
    let attacking = true;
    const attacker = new Set();
    const hold = async () => {
      if (!attacking) return;
      const connection = await rawConnection(server.url).catch(() => null);
      if (connection === null) return void setImmediate(hold);
      attacker.add(connection);
      connection.closed.then(() => {
        attacker.delete(connection);
        hold();
      });
    };
    try {
      for (let i = 0; i < 8; ++i) await hold();
      let served = 0;
      for (let i = 0; i < 30; ++i) {
        const connection = await rawConnection(server.url);
        connection.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        if (/^HTTP\/1\.1 200 /.test((await connection.closed).received)) ++served;
      }
      // Each new connection closes the oldest waiting one, and the attacker's
      // are older than a client's that sends at once: only an attacker who
      // reopens all eight between a client's connect and its headers gets
      // that client closed. Before, every one of these was closed unread.
      assert.ok(served >= 28, `${served} of 30 /healthz requests answered 200`);
      for (let i = 0; i < 5; ++i) {
        const connection = await servedWithToken(server.url);
        connection.socket.destroy();
      }
      assert.ok(server.log().includes('"event":"made_room"'));
    } finally {
      attacking = false;
      for (const connection of attacker) connection.socket.destroy();
      assert.equal(await server.stop(), 0);
    }
  });

  const noDescriptors = sanitized ? "built with sanitizers, whose runtime fails without file descriptors" : false;
  test("out of file descriptors, the server waits instead of spinning, and serves again once connections close", { skip: noDescriptors }, async () => {
    const server = await startHttpServer(binary, baseConfig, { wrapper: ["prlimit", "--nofile=48:48"] });
    assert.ok(server.url, "the server did not start under prlimit");
    const connections = [];
    try {
      for (let i = 0; i < 60; ++i) connections.push(await rawConnection(server.url));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const before = cpuSeconds(server.pid);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const used = cpuSeconds(server.pid) - before;
      assert.ok(used < 0.5, `the server used ${used} s of CPU in 1.5 s while it could not accept`);
      assert.ok(server.log().includes('"event":"accept_failed"'), "the failure to accept is not logged");
      for (const connection of connections) connection.socket.destroy();
      connections.length = 0;
      assert.equal(await servedOnceRoom(server.url), 200, "the server serves again");
    } finally {
      for (const connection of connections) connection.socket.destroy();
      assert.equal(await server.stop(), 0);
    }
  });
});
