// OAuth access tokens on the HTTP transport, end to end: the real binary, a
// key set served over HTTP by the test (so it can rotate keys or go down),
// and tokens signed here with node:crypto for every refusal the server must
// make. Static tokens work beside them.
//
//   node oauth.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac, generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import { argument, sha256Hex, startHttpServer } from "./http_server.mjs";

const binary = argument("--binary");
const resource = "https://db.example.test/mcp";
const staticToken = "static-token-4a19be";

// ---- keys, tokens and a key-set server -------------------------------------

function makeKey(kind, kid) {
  const { privateKey, publicKey } =
    kind === "RS256" ? generateKeyPairSync("rsa", { modulusLength: 2048 }) : generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { alg: kind, kid, privateKey, jwk: { ...publicKey.export({ format: "jwk" }), kid, use: "sig", alg: kind } };
}

const b64url = (data) => Buffer.from(data).toString("base64url");

function signToken(key, claims, header = {}) {
  const head = { alg: key.alg, typ: "at+jwt", kid: key.kid, ...header };
  const input = `${b64url(JSON.stringify(head))}.${b64url(JSON.stringify(claims))}`;
  const signature = sign("sha256", Buffer.from(input), key.alg === "ES256" ? { key: key.privateKey, dsaEncoding: "ieee-p1363" } : key.privateKey);
  return `${input}.${b64url(signature)}`;
}

/// Serves { keys } at /jwks; `state.down` answers 503 instead; counts fetches.
async function startKeyServer(keys) {
  const state = { keys, down: false, fetches: 0 };
  const server = createServer((request, response) => {
    if (request.url !== "/jwks") return response.writeHead(404).end();
    state.fetches += 1;
    if (state.down) return response.writeHead(503).end("down");
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: state.keys.map((k) => k.jwk) }));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${server.address().port}/jwks`;
  state.issuer = `http://127.0.0.1:${server.address().port}`;
  state.close = () => new Promise((resolve) => server.close(resolve));
  return state;
}

// ---- the MCP exchange ------------------------------------------------------

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "oauth-test", version: "1" } },
};

function post(url, body, token, sessionId) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (sessionId) headers["mcp-session-id"] = sessionId;
  return fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
}

/// initialize + initialized; the session id.
async function open(url, token) {
  const response = await post(url, initialize, token);
  assert.equal(response.status, 200, `initialize: ${response.status} ${await response.clone().text()}`);
  const id = response.headers.get("mcp-session-id");
  await response.json();
  const done = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, token, id);
  assert.equal(done.status, 202);
  return id;
}

async function call(url, token, sessionId, id, name, args) {
  const response = await post(url, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }, token, sessionId);
  assert.equal(response.status, 200);
  return response.json();
}

// A pinned query whose tenant comes from the caller's token, never the agent.
const catalog = {
  queries: [
    {
      name: "my_tenant",
      description: "The caller's own tenant.",
      database: "a",
      sql: "SELECT ?1 AS tenant, ?2 AS day",
      parameters: [
        { name: "tenant", type: "text", from_claim: "tenant_id" },
        { name: "day", type: "integer" },
      ],
    },
  ],
};

function configFor(keys, extra = {}) {
  return {
    catalog: "catalog.json",
    databases: [
      { label: "a", path: ":memory:" },
      { label: "b", path: ":memory:" },
    ],
    http: {
      tokens: [{ name: "static", sha256: sha256Hex(staticToken), databases: ["b"] }],
      resource,
      oauth: {
        issuer: keys.issuer,
        jwks_url: keys.url,
        scopes: { "db:a": ["a"], "db:all": null, "db:none-here": ["b"] },
        required_scopes: ["mcp"],
        leeway_seconds: 5,
        jwks_min_refetch_seconds: 0,
        ...extra,
      },
    },
  };
}

const now = () => Math.floor(Date.now() / 1000);

function claimsFor(keys, overrides = {}) {
  return {
    iss: keys.issuer,
    aud: resource,
    sub: "alice",
    client_id: "agent-7",
    scope: "mcp db:a",
    iat: now(),
    exp: now() + 300,
    jti: randomUUID(),
    ...overrides,
  };
}

function challenge(response) {
  return response.headers.get("www-authenticate") ?? "";
}

// ---- the tests ---------------------------------------------------------------

describe("OAuth access tokens", () => {
  const rsa = makeKey("RS256", "rsa-1");
  const ec = makeKey("ES256", "ec-1");
  let keys;
  let server;

  before(async () => {
    keys = await startKeyServer([rsa, ec]);
    server = await startHttpServer(binary, configFor(keys), { files: { "catalog.json": catalog } });
    assert.ok(server.url, `the server did not start (exit ${server.exitCode}): ${server.stderr}`);
  });
  after(async () => {
    if (server?.url) assert.equal(await server.stop(), 0);
    await keys?.close();
  });

  test("the Protected Resource Metadata is served at both well-known paths, without a token", async () => {
    const origin = new URL(server.url).origin;
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const response = await fetch(origin + path);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get("content-type"), /^application\/json/);
      assert.deepEqual(await response.json(), {
        resource,
        authorization_servers: [keys.issuer],
        scopes_supported: ["db:a", "db:all", "db:none-here"],
        bearer_methods_supported: ["header"],
      });
    }
    assert.equal((await fetch(origin + "/.well-known/oauth-protected-resource/other")).status, 404);
  });

  test("a request without a token gets 401 naming where the metadata is", async () => {
    const response = await post(server.url, initialize);
    assert.equal(response.status, 401);
    assert.equal(
      challenge(response),
      'Bearer realm="rawtool", resource_metadata="https://db.example.test/.well-known/oauth-protected-resource/mcp"',
    );
  });

  test("RS256 and ES256 tokens for this resource open sessions that reach only their scopes' databases", async () => {
    for (const key of [rsa, ec]) {
      const token = signToken(key, claimsFor(keys));
      const session = await open(server.url, token);
      const reached = await call(server.url, token, session, 2, "raw_sql", { sql: "SELECT 'in a' AS x", database: "a" });
      assert.equal(reached.result.isError, false, JSON.stringify(reached));
      assert.deepEqual(reached.result.structuredContent.rows, [["in a"]]);
      const beyond = await call(server.url, token, session, 3, "raw_sql", { sql: "SELECT 1", database: "b" });
      assert.ok(beyond.error || beyond.result?.isError, `database b is beyond the token's scopes: ${JSON.stringify(beyond)}`);
    }
    // A scope mapped to null reaches every database.
    const all = signToken(rsa, claimsFor(keys, { sub: "carol", scope: "mcp db:all" }));
    const session = await open(server.url, all);
    const b = await call(server.url, all, session, 2, "raw_sql", { sql: "SELECT 'in b' AS x", database: "b" });
    assert.deepEqual(b.result.structuredContent.rows, [["in b"]]);
  });

  test("the log names the token's subject and client, never the token", async () => {
    const token = signToken(rsa, claimsFor(keys, { sub: "dave", client_id: "agent-9" }));
    await open(server.url, token);
    const lines = server.log().split("\n").filter((line) => line.includes('"event":"request"') && line.includes("dave"));
    assert.ok(lines.length >= 2, server.log());
    const entry = JSON.parse(lines[0]);
    assert.equal(entry.token, "oauth");
    assert.equal(entry.subject, "dave");
    assert.equal(entry.client_id, "agent-9");
    assert.equal(server.log().includes(token), false, "the token itself is in the log");
    assert.equal(server.log().includes(token.split(".")[2]), false, "the token's signature is in the log");
  });

  test("a session belongs to the identity that opened it: another subject cannot use it, a later token of the same can", async () => {
    const alice1 = signToken(rsa, claimsFor(keys));
    const session = await open(server.url, alice1);
    const alice2 = signToken(ec, claimsFor(keys));  // another token, another key, the same identity
    const again = await call(server.url, alice2, session, 5, "raw_sql", { sql: "SELECT 1 AS one", database: "a" });
    assert.equal(again.result.isError, false);
    const mallory = signToken(rsa, claimsFor(keys, { sub: "mallory" }));
    const stolen = await post(server.url, { jsonrpc: "2.0", id: 6, method: "tools/list" }, mallory, session);
    assert.equal(stolen.status, 404, "another subject's request found alice's session");
    const other = await post(server.url, { jsonrpc: "2.0", id: 7, method: "tools/list" }, staticToken, session);
    assert.equal(other.status, 404, "a static token's request found alice's session");
  });

  test("a static token is accepted beside OAuth, with its own databases", async () => {
    const session = await open(server.url, staticToken);
    const b = await call(server.url, staticToken, session, 2, "raw_sql", { sql: "SELECT 'static' AS x" });
    assert.deepEqual(b.result.structuredContent.rows, [["static"]]);
    const a = await call(server.url, staticToken, session, 3, "raw_sql", { sql: "SELECT 1", database: "a" });
    assert.ok(a.error || a.result?.isError, "database a is beyond the static token's databases");
  });

  const refusals = [
    ["expired", () => signToken(rsa, claimsFor(keys, { exp: now() - 60 })), "the token has expired"],
    ["not valid yet", () => signToken(rsa, claimsFor(keys, { nbf: now() + 600 })), "the token is not valid yet"],
    ["for another resource", () => signToken(rsa, claimsFor(keys, { aud: "https://other.example.test/mcp" })), "the token is for another resource"],
    ["from another issuer", () => signToken(rsa, claimsFor(keys, { iss: "https://evil.example.test" })), "the token is from another issuer"],
    ["without a subject", () => signToken(rsa, claimsFor(keys, { sub: undefined })), "the token names no subject"],
    ["alg none", () => `${b64url(JSON.stringify({ alg: "none", kid: "rsa-1" }))}.${b64url(JSON.stringify(claimsFor(keys)))}.`, "the token's algorithm is not accepted"],
    [
      "HS256 keyed with the public key",
      () => {
        const input = `${b64url(JSON.stringify({ alg: "HS256", kid: "rsa-1" }))}.${b64url(JSON.stringify(claimsFor(keys)))}`;
        return `${input}.${createHmac("sha256", JSON.stringify(rsa.jwk)).update(input).digest("base64url")}`;
      },
      "the token's algorithm is not accepted",
    ],
    ["signed by a key not in the set", () => signToken(makeKey("RS256", "stranger"), claimsFor(keys)), "no key of the issuer's key set signed the token"],
    ["signed by another key under a known kid", () => signToken(makeKey("RS256", "rsa-1"), claimsFor(keys)), "the token's signature is invalid"],
    ["not a JWT", () => "opaque-token-1234", "the token is not a JWT"],
  ];
  for (const [name, make, why] of refusals) {
    test(`a token ${name} gets 401 invalid_token, saying why`, async () => {
      const response = await post(server.url, initialize, make());
      assert.equal(response.status, 401);
      assert.equal(
        challenge(response),
        `Bearer realm="rawtool", resource_metadata="https://db.example.test/.well-known/oauth-protected-resource/mcp", ` +
          `error="invalid_token", error_description="${why}"`,
      );
    });
  }

  test("a token without a required scope, or with no scope reaching a database, gets 403 insufficient_scope", async () => {
    const missing = await post(server.url, initialize, signToken(rsa, claimsFor(keys, { scope: "db:a" })));
    assert.equal(missing.status, 403);
    assert.match(challenge(missing), /error="insufficient_scope", scope="mcp"/);
    const nothing = await post(server.url, initialize, signToken(rsa, claimsFor(keys, { scope: "mcp other" })));
    assert.equal(nothing.status, 403);
    assert.match(challenge(nothing), /error="insufficient_scope", scope="db:a db:all db:none-here"/);
  });

  test("a parameter bound to a claim takes the token's value; the agent cannot set it, and a token without the claim cannot run it", async () => {
    const token = signToken(rsa, claimsFor(keys, { sub: "erin", tenant_id: "t-17" }));
    const session = await open(server.url, token);
    const tools = await (await post(server.url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, token, session)).json();
    assert.equal(JSON.stringify(tools).includes('"tenant"'), false, "a claim-bound parameter is offered to the agent");
    const listing = await call(server.url, token, session, 3, "describe_catalog", {});
    assert.match(JSON.stringify(listing.result.content), /set from the caller's token claim/);

    const own = await call(server.url, token, session, 4, "certified_query", { name: "my_tenant", params: { day: 3 } });
    assert.equal(own.result.isError, false, JSON.stringify(own));
    assert.deepEqual(own.result.structuredContent.rows, [["t-17", "3"]]);

    const forged = await call(server.url, token, session, 5, "certified_query", { name: "my_tenant", params: { day: 3, tenant: "t-99" } });
    assert.equal(forged.result.isError, true);
    assert.equal(forged.result.structuredContent.argument.rule, "unknown_parameter");
    assert.equal(JSON.stringify(forged).includes("t-17"), false, "the refusal shows the caller's claim");

    const unclaimed = signToken(rsa, claimsFor(keys, { sub: "erin" }));
    const none = await call(server.url, unclaimed, session, 6, "certified_query", { name: "my_tenant", params: { day: 3 } });
    assert.equal(none.result.isError, true);
    assert.equal(none.result.structuredContent.argument.rule, "missing");
  });

  test("a key rotated into the set is fetched when a token names it, without a restart", async () => {
    const rotated = makeKey("ES256", "ec-2");
    const token = signToken(rotated, claimsFor(keys));
    assert.equal((await post(server.url, initialize, token)).status, 401, "accepted before the issuer published the key");
    keys.keys = [rsa, ec, rotated];
    const before = keys.fetches;
    await open(server.url, token);
    assert.equal(keys.fetches, before + 1, "the key set was not fetched exactly once more");
    keys.keys = [rsa, ec];
  });
});

describe("the key set's source", () => {
  test("a key set that cannot be fetched at start is logged, tokens are refused, and accepted once it can", async () => {
    const key = makeKey("RS256", "k");
    const keys = await startKeyServer([key]);
    keys.down = true;
    const server = await startHttpServer(binary, configFor(keys), { files: { "catalog.json": catalog } });
    try {
      assert.ok(server.url, `the server did not start (exit ${server.exitCode}): ${server.stderr}`);
      const failed = server.log().split("\n").filter((l) => l.includes('"event":"oauth_keys"')).map((l) => JSON.parse(l));
      assert.equal(failed.length, 1);
      assert.equal(failed[0].level, "error");
      assert.match(failed[0].detail, /answered HTTP 503/);
      const token = signToken(key, claimsFor(keys));
      assert.equal((await post(server.url, initialize, token)).status, 401);
      keys.down = false;
      await open(server.url, token);
    } finally {
      assert.equal(await server.stop(), 0);
      await keys.close();
    }
  });

  test("unknown keys fetch the set at most once per jwks_min_refetch_seconds", async () => {
    const key = makeKey("RS256", "k");
    const keys = await startKeyServer([key]);
    const server = await startHttpServer(binary, configFor(keys, { jwks_min_refetch_seconds: 3600 }), {
      files: { "catalog.json": catalog },
    });
    try {
      assert.ok(server.url, server.stderr);
      const start = keys.fetches;
      for (let i = 0; i < 5; ++i) {
        const response = await post(server.url, initialize, signToken(makeKey("RS256", `unknown-${i}`), claimsFor(keys)));
        assert.equal(response.status, 401);
      }
      assert.equal(keys.fetches, start, "a token naming an unknown key fetched the set within the interval");
    } finally {
      assert.equal(await server.stop(), 0);
      await keys.close();
    }
  });

  test("check-config --connect loads the key set as the server would, and fails when it cannot", async () => {
    const keys = await startKeyServer([makeKey("RS256", "k1"), makeKey("ES256", "k2")]);
    const dir = mkdtempSync(join(tmpdir(), "rawtool-oauth-check-"));
    try {
      const config = configFor(keys);
      delete config.catalog;
      writeFileSync(join(dir, "config.json"), JSON.stringify(config));
      // Asynchronous: the key server runs in this process and must answer while check-config waits.
      const check = () =>
        new Promise((resolve) => {
          const child = spawn(binary, ["check-config", "--config", join(dir, "config.json"), "--connect"]);
          const out = { stdout: "", stderr: "" };
          child.stdout.on("data", (d) => (out.stdout += d));
          child.stderr.on("data", (d) => (out.stderr += d));
          child.on("close", (status) => resolve({ ...out, status }));
        });
      const ok = await check();
      assert.equal(ok.status, 0, ok.stdout + ok.stderr);
      assert.match(ok.stdout, /^oauth: the issuer's key set: 2 signing keys usable, 0 ignored$/m);
      keys.down = true;
      const down = await check();
      assert.equal(down.status, 1, down.stdout + down.stderr);
      assert.match(down.stdout, /^oauth: the issuer's key set could not be loaded: GET http:\/\/127\.0\.0\.1:\d+\/jwks: answered HTTP 503, not 200$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await keys.close();
    }
  });

  test("a key set from a file", async () => {
    const key = makeKey("ES256", "file-key");
    const issuer = "https://issuer.example.test";
    const config = configFor({ issuer, url: "" });
    delete config.http.oauth.jwks_url;
    config.http.oauth.jwks_file = "jwks.json";
    const server = await startHttpServer(binary, config, { files: { "jwks.json": { keys: [key.jwk] }, "catalog.json": catalog } });
    try {
      assert.ok(server.url, server.stderr);
      await open(server.url, signToken(key, claimsFor({ issuer })));
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

describe("limits per identity", () => {
  test("http.max_sessions_per_token holds for each OAuth identity as for each static token", async () => {
    const key = makeKey("RS256", "k");
    const keys = await startKeyServer([key]);
    const config = configFor(keys);
    config.http.max_sessions_per_token = 1;
    const server = await startHttpServer(binary, config, { files: { "catalog.json": catalog } });
    try {
      assert.ok(server.url, server.stderr);
      await open(server.url, signToken(key, claimsFor(keys)));
      // Another token of the same identity counts against the same limit...
      const second = await post(server.url, initialize, signToken(key, claimsFor(keys)));
      assert.equal(second.status, 503, "a second session of one identity past the limit");
      // ...another subject has its own.
      await open(server.url, signToken(key, claimsFor(keys, { sub: "bob" })));
    } finally {
      assert.equal(await server.stop(), 0);
      await keys.close();
    }
  });
});
