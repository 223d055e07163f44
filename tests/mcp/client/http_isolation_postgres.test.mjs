// Two tokens on one read-write PostgreSQL database through the real binary
// (`rawtool mcp --http`), with pool_size 1 so that both use the one pooled
// connection: token A leaves every kind of session state it can, and token B,
// asking as any caller would, finds none of it. A third token (admin) makes
// and drops the real table A's temporary table shadows, on a database label
// of its own.
//
//   RAWTOOL_TEST_PG_URL=... node http_isolation_postgres.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { argument, sha256Hex, startHttpServer } from "./http_server.mjs";

const binary = argument("--binary");
const pgUrl = process.env.RAWTOOL_TEST_PG_URL;
const tokens = { a: "tenant-a-5d1e", b: "tenant-b-9f02", admin: "admin-c37a" };

let server;
before(async () => {
  if (!pgUrl) return;
  server = await startHttpServer(binary, {
    databases: [
      { label: "shared", url: pgUrl, access: "read_write", pool_size: 1 },
      { label: "admin", url: pgUrl, access: "read_write", pool_size: 1 },
    ],
    http: {
      tokens: [
        { name: "tenant-a", sha256: sha256Hex(tokens.a), databases: ["shared"] },
        { name: "tenant-b", sha256: sha256Hex(tokens.b), databases: ["shared"] },
        { name: "admin", sha256: sha256Hex(tokens.admin), databases: ["admin"] },
      ],
    },
  });
  assert.ok(server.url, "the server did not start");
});
after(async () => {
  if (server?.url) assert.equal(await server.stop(), 0);
});

/// A session of `token`: initialize, then call(tool, sql) answers the result.
async function sessionOf(token) {
  let id = 0;
  let sessionId = null;
  const post = async (message) => {
    const headers = {
      Authorization: `Bearer ${token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    };
    if (sessionId) headers["Mcp-Session-Id"] = sessionId;
    const response = await fetch(server.url, { method: "POST", headers, body: JSON.stringify(message) });
    sessionId ??= response.headers.get("mcp-session-id");
    return response.status === 202 ? null : response.json();
  };
  await post({ jsonrpc: "2.0", id: ++id, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "tenant-test", version: "1" } } });
  await post({ jsonrpc: "2.0", method: "notifications/initialized" });
  const listed = await post({ jsonrpc: "2.0", id: ++id, method: "tools/list" });
  const names = listed.result.tools.map((tool) => tool.name);
  const writer = names.includes("raw_sql_write") ? "raw_sql_write" : "raw_sql";
  return {
    async sql(text) {
      const reply = await post({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: writer, arguments: { sql: text } } });
      return reply.result;
    },
  };
}

/// What a caller can ask about the session it is given, one answer each.
const probes = {
  "temporary table shadowing a real one": "SELECT string_agg(x, ',' ORDER BY x) FROM http_tenant_shadow",
  "temporary schema": "SELECT pg_my_temp_schema() <> 0",
  "session setting": "SELECT current_setting('work_mem')",
  "setting other sessions see": "SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()",
  "advisory lock": "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
  "prepared statement": "SELECT count(*) FROM pg_prepared_statements",
  LISTEN: "SELECT count(*) FROM pg_listening_channels()",
  "WITH HOLD cursor": "SELECT count(*) FROM pg_cursors",
};

async function answers(session) {
  const found = {};
  for (const [name, sql] of Object.entries(probes)) {
    const result = await session.sql(sql);
    assert.equal(result.isError, false, `${name}: ${result.content?.[0]?.text}`);
    found[name] = result.structuredContent.rows;
  }
  return found;
}

async function backendPid(session) {
  const result = await session.sql("SELECT pg_backend_pid()");
  assert.equal(result.isError, false);
  return result.structuredContent.rows[0][0];
}

test("nothing token A leaves on the shared pooled connection reaches token B's calls", async (t) => {
  if (!pgUrl) {
    if (process.env.RAWTOOL_REQUIRE_PG === "1") assert.fail("RAWTOOL_REQUIRE_PG=1 but RAWTOOL_TEST_PG_URL is not set");
    t.skip("RAWTOOL_TEST_PG_URL is not set: this PostgreSQL test did NOT run");
    return;
  }
  const admin = await sessionOf(tokens.admin);
  for (const sql of [
    "DROP TABLE IF EXISTS http_tenant_shadow",
    "CREATE TABLE http_tenant_shadow (x text)",
    "INSERT INTO http_tenant_shadow VALUES ('real')",
  ]) {
    assert.equal((await admin.sql(sql)).isError, false, sql);
  }
  try {
    const a = await sessionOf(tokens.a);
    const b = await sessionOf(tokens.b);
    const fresh = await answers(b);
    assert.deepEqual(fresh["temporary table shadowing a real one"], [["real"]]);

    // A temporary object first: the connection it leaves a temporary schema
    // on is not handed on. Then what DISCARD ALL resets, on the connection B
    // gets next.
    // (One statement: each call is reset, A's own next call included.)
    const shadow = await a.sql("CREATE TEMP TABLE http_tenant_shadow AS SELECT 'planted by A'::text AS x");
    assert.equal(shadow.isError, false, shadow.content?.[0]?.text);
    for (const sql of [
      "SET work_mem = '7777kB'",
      "SELECT set_config('application_name', 'planted by A', false)",
      "SELECT pg_advisory_lock(73001)",
      "PREPARE http_tenant_p AS SELECT 1",
      "LISTEN http_tenant_channel",
      "DECLARE http_tenant_c CURSOR WITH HOLD FOR SELECT 1",
    ]) {
      const left = await a.sql(sql);
      assert.equal(left.isError, false, `${sql}: ${left.content?.[0]?.text}`);
    }
    const pidOfA = await backendPid(a);
    const pidOfB = await backendPid(b);
    assert.equal(pidOfB, pidOfA, "B's calls did not get the connection A's calls used: the test proves nothing");
    assert.deepEqual(await answers(b), fresh);
  } finally {
    await admin.sql("DROP TABLE IF EXISTS http_tenant_shadow");
  }
});

test("the start-up log names the tokens of different scopes that connect as one role", async (t) => {
  if (!pgUrl) {
    if (process.env.RAWTOOL_REQUIRE_PG === "1") assert.fail("RAWTOOL_REQUIRE_PG=1 but RAWTOOL_TEST_PG_URL is not set");
    t.skip("RAWTOOL_TEST_PG_URL is not set: this PostgreSQL test did NOT run");
    return;
  }
  const shared = server
    .log()
    .split("\n")
    .filter((line) => line.includes('"event":"shared_role"'))
    .map((line) => JSON.parse(line));
  assert.equal(shared.length, 1, server.log());
  assert.deepEqual(shared[0].tokens, ["tenant-a", "tenant-b", "admin"]);
  assert.deepEqual(shared[0].databases, ["shared", "admin"]);
  assert.equal(typeof shared[0].role, "string");
  assert.match(shared[0].detail, /cancel or end/);
});
