// SIGTERM to `rawtool mcp --http` while its PostgreSQL server has stopped
// answering mid-statement: a proxy between them holds every byte from the
// moment the statement's bytes reach it (a network partition). The server
// never sees the statement, never answers, and takes no cancel request; the
// call's own deadline is a minute away. The stop must not wait for it: the
// shutdown grace (1 s), then the driver's give-up after its cancel (2 s), then
// its attempt to end the backend from its reserve connection, held too (about
// 2 s): 5.3 s in all here, all of it timers. Then the call is answered 503 and
// the process exits 0. The bound, 12 s, leaves room for a slow machine and
// is still far from the call's minute.
//
//   RAWTOOL_TEST_PG_READER_URL=... node http_partition.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { connect, createServer } from "node:net";
import { test } from "node:test";

import { argument, sha256Hex, startHttpServer } from "./http_server.mjs";

const binary = argument("--binary");
const pgUrl = process.env.RAWTOOL_TEST_PG_READER_URL || process.env.RAWTOOL_TEST_PG_URL;
const token = "partition-token-41c2";

/// A TCP proxy to `host:port` that, once a client sends bytes holding
/// `marker`, forwards nothing more in either direction, on any connection, old
/// or new (new ones are accepted and never connected through). `frozen`
/// resolves then.
async function partitionProxy(host, port, marker) {
  let freeze;
  const frozen = new Promise((resolve) => (freeze = resolve));
  let held = false;
  const sockets = new Set();
  const server = createServer((client) => {
    sockets.add(client);
    client.on("error", () => {});
    if (held) return;
    const upstream = connect(port, host);
    sockets.add(upstream);
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.on("data", (chunk) => {
      if (held) return;
      if (chunk.includes(marker)) {
        held = true;
        freeze();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!held) client.write(chunk);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    frozen,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

test("SIGTERM while the database has stopped answering mid-statement exits within its bound, not the call's", async (t) => {
  if (!pgUrl) {
    if (process.env.RAWTOOL_REQUIRE_PG === "1") assert.fail("RAWTOOL_REQUIRE_PG=1 but RAWTOOL_TEST_PG_READER_URL is not set");
    t.skip("RAWTOOL_TEST_PG_READER_URL is not set: this PostgreSQL test did NOT run");
    return;
  }
  const target = new URL(pgUrl);
  const marker = `rawtool_partitioned_${Date.now()}`;
  const proxy = await partitionProxy(target.hostname, Number(target.port || 5432), marker);
  // rawtool reaches the server through the proxy, which listens here on the
  // loopback, wherever the server itself is (another container in CI).
  const through = new URL(pgUrl);
  through.hostname = "127.0.0.1";
  through.port = String(proxy.port);
  through.searchParams.set("connect_timeout", "5");
  const server = await startHttpServer(binary, {
    databases: [{ label: "pg", url: through.toString(), limits: { statement_timeout_ms: 60000 } }],
    http: { tokens: [{ name: "partitioned", sha256: sha256Hex(token) }], shutdown_grace_seconds: 1 },
  });
  let stopped = false;
  try {
    assert.ok(server.url, "the server did not start");
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` };
    const opened = await fetch(server.url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    assert.equal(opened.status, 200);
    await opened.json();
    const session = { "mcp-session-id": opened.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" };
    const call = fetch(server.url, {
      method: "POST",
      headers: { ...headers, ...session },
      body: JSON.stringify({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name: "raw_sql", arguments: { sql: `SELECT 1 AS ${marker}` } } }),
    });
    await Promise.race([
      proxy.frozen,
      new Promise((_, reject) => setTimeout(() => reject(new Error("the statement did not reach the proxy within 10 s")), 10000).unref()),
    ]);
    const stoppedAt = Date.now();
    stopped = true;
    const exitCode = await Promise.race([
      server.stop(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("SIGTERM did not end the server within 20 s")), 20000).unref()),
    ]);
    const took = Date.now() - stoppedAt;
    assert.equal(exitCode, 0);
    t.diagnostic(`stopped in ${took} ms`);
    assert.ok(took < 12000, `the server took ${took} ms to stop`);
    const answer = await call;
    assert.equal(answer.status, 503);
    const body = await answer.json();
    assert.equal(body.id, "held");
    assert.equal(body.error.code, -32000);
  } finally {
    // Released first, so that a server a failed test did not stop ends at once.
    proxy.close();
    if (!stopped && server.url) await server.stop();
  }
});
