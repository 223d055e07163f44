// Two tokens on one read-write SQLite database, through `rawtool mcp --http`
// with a pool of one connection, so both tokens' calls meet on it: nothing
// one token's call leaves on that connection reaches the other token's.
//
//   node http_isolation_sqlite.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { argument, sha256Hex, startHttpServer } from "./http_server.mjs";

const binary = argument("--binary");
const tokens = { alice: "isolation-alice-5d1e", bob: "isolation-bob-93a4" };
const dir = mkdtempSync(join(tmpdir(), "rawtool-isolation-"));
const database = join(dir, "shared.db");
const shared = { label: "shared", path: database, access: "read_write", pool_size: 1 };

// The database file as another process reads it: the CLI, a connection of its own.
const cliConfig = join(dir, "cli.json");
writeFileSync(cliConfig, JSON.stringify({ databases: [{ ...shared, create_if_missing: true }] }));
function fileRows(sql) {
  return JSON.parse(execFileSync(binary, ["query", "--config", cliConfig, "--json", sql], { encoding: "utf8" })).rows;
}

let server;
before(async () => {
  fileRows("CREATE TABLE t (x TEXT)");
  fileRows("CREATE TABLE notes (x TEXT)");
  server = await startHttpServer(binary, {
    databases: [shared],
    http: {
      tokens: [
        { name: "alice", sha256: sha256Hex(tokens.alice) },
        { name: "bob", sha256: sha256Hex(tokens.bob) },
      ],
    },
  });
  assert.ok(server.url, "the server did not start");
});
after(async () => {
  if (server?.url) assert.equal(await server.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

async function connectAs(token) {
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "rawtool-isolation-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    sql: (sql) => client.callTool({ name: "raw_sql", arguments: { sql } }),
    async close() {
      await transport.terminateSession();
      await client.close();
    },
  };
}

test("a temp table and a temp trigger one token makes neither catch nor show another token's inserts", async () => {
  const alice = await connectAs(tokens.alice);
  const bob = await connectAs(tokens.bob);
  // Alice shadows the file's table t and plants a trigger on the file's table notes.
  for (const sql of [
    "CREATE TEMP TABLE t (x TEXT)",
    "CREATE TEMP TABLE spy (x TEXT)",
    "CREATE TEMP TRIGGER copy AFTER INSERT ON main.notes BEGIN INSERT INTO spy VALUES (new.x); END",
  ]) {
    const result = await alice.sql(sql);
    assert.equal(result.isError, false, `${sql}: ${result.content?.[0]?.text}`);
  }
  // Bob's inserts report success, and land in the file.
  assert.equal((await bob.sql("INSERT INTO t VALUES ('bob row')")).isError, false);
  assert.equal((await bob.sql("INSERT INTO notes VALUES ('bob secret')")).isError, false);
  assert.deepEqual(fileRows("SELECT x FROM t"), [["bob row"]]);
  assert.deepEqual(fileRows("SELECT x FROM notes"), [["bob secret"]]);
  // Alice finds nothing of hers to read Bob's rows from, and her own temp table is gone.
  const spied = await alice.sql("SELECT x FROM spy");
  assert.equal(spied.isError, true);
  assert.ok(!JSON.stringify(spied).includes("bob secret"), "Alice read Bob's insert through her trigger");
  const seen = await alice.sql("SELECT x FROM t");
  assert.deepEqual(seen.structuredContent.rows, [["bob row"]]);
  // Nor does Bob learn Alice's rowids or change counts.
  const counts = await bob.sql("SELECT last_insert_rowid(), changes(), total_changes()");
  assert.deepEqual(counts.structuredContent.rows, [["0", "0", "0"]]);
  await alice.close();
  await bob.close();
});
