// rawtool as an OAuth protected resource beside a real authorization server:
// oidc-provider, run here with resource indicators (RFC 8707) and JWT access
// tokens, issues tokens by the client-credentials grant; the official MCP
// SDK's client finds the authorization server through rawtool's 401 and
// Protected Resource Metadata and gets its token on its own.
//
//   node oauth_idp.test.mjs --binary build/dev/rawtool/rawtool

import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Provider, { errors } from "oidc-provider";

import { argument, startHttpServer } from "./http_server.mjs";

const binary = argument("--binary");
const clientId = "report-agent";
const clientSecret = "report-agent-secret-5b2f";

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/// oidc-provider issuing ES256-signed JWT access tokens for `resource` (and,
/// to show the audience check, for another resource).
async function startAuthorizationServer(resource) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const signingKey = { ...privateKey.export({ format: "jwk" }), kid: "idp-1", alg: "ES256", use: "sig" };
  const resources = new Set([resource, "https://other.example.test/mcp"]);
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        grant_types: ["client_credentials"],
        redirect_uris: [],
        response_types: [],
        scope: "mcp db:a db:all",
        id_token_signed_response_alg: "ES256",  // the provider's only key
      },
    ],
    scopes: ["mcp", "db:a", "db:all"],
    jwks: { keys: [signingKey] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          if (!resources.has(indicator)) throw new errors.InvalidTarget();
          return {
            scope: "mcp db:a db:all",
            audience: indicator,
            accessTokenTTL: 300,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "ES256" } },
          };
        },
      },
    },
  });
  const server = createServer(provider.callback());
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { issuer, close: () => new Promise((resolve) => server.close(resolve)) };
}

/// A token by the client-credentials grant, as a client would ask for it.
async function clientCredentialsToken(idp, scope, resource) {
  const response = await fetch(`${idp.issuer}/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", scope, resource }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  assert.equal(body.token_type, "Bearer");
  assert.equal(body.access_token.split(".").length, 3, "the access token is not a JWT");
  return body.access_token;
}

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "idp-test", version: "1" } },
};

function post(url, body, token, sessionId) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` };
  if (sessionId) headers["mcp-session-id"] = sessionId;
  return fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
}

describe("rawtool beside a real authorization server (oidc-provider)", () => {
  let idp;
  let server;
  let resource;

  before(async () => {
    // The resource is the URL clients reach, as the SDK's client checks.
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    idp = await startAuthorizationServer(resource);
    server = await startHttpServer(
      binary,
      {
        databases: [
          { label: "a", path: ":memory:" },
          { label: "b", path: ":memory:" },
        ],
        http: {
          resource,
          oauth: {
            issuer: idp.issuer,
            jwks_url: `${idp.issuer}/jwks`,
            scopes: { "db:a": ["a"], "db:all": null },
            required_scopes: ["mcp"],
          },
        },
      },
      { listen: `127.0.0.1:${port}` },
    );
    assert.ok(server.url, `the server did not start (exit ${server.exitCode}): ${server.stderr}`);
  });
  after(async () => {
    if (server?.url) assert.equal(await server.stop(), 0);
    await idp?.close();
  });

  test("a client-credentials token for this resource reaches the databases of its scopes", async () => {
    const token = await clientCredentialsToken(idp, "mcp db:a", resource);
    const init = await post(server.url, initialize, token);
    assert.equal(init.status, 200, await init.clone().text());
    const session = init.headers.get("mcp-session-id");
    const call = async (id, database) =>
      (await post(server.url, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "raw_sql", arguments: { sql: "SELECT 'x' AS x", database } } }, token, session)).json();
    assert.equal((await call(2, "a")).result.isError, false);
    const beyond = await call(3, "b");
    assert.ok(beyond.error || beyond.result?.isError, "db:a reaches only a");
    // The client credentials' token has the client as its subject.
    const logged = server.log().split("\n").filter((l) => l.includes('"event":"request"') && l.includes('"subject"')).map((l) => JSON.parse(l));
    assert.ok(logged.length > 0);
    assert.equal(logged[0].client_id, clientId);
  });

  test("a token the same server issued for another resource is refused", async () => {
    const token = await clientCredentialsToken(idp, "mcp db:a", "https://other.example.test/mcp");
    const response = await post(server.url, initialize, token);
    assert.equal(response.status, 401);
    assert.match(response.headers.get("www-authenticate"), /error_description="the token is for another resource"/);
  });

  test("a token without the required scope gets 403 insufficient_scope", async () => {
    const token = await clientCredentialsToken(idp, "db:a", resource);
    const response = await post(server.url, initialize, token);
    assert.equal(response.status, 403);
    assert.match(response.headers.get("www-authenticate"), /error="insufficient_scope", scope="mcp"/);
  });

  test("the official SDK's client discovers the authorization server from the 401 and gets its own token", async () => {
    const client = new Client({ name: "sdk-oauth", version: "1" });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      authProvider: new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: idp.issuer, scope: "mcp db:all" }),
    });
    await client.connect(transport);
    try {
      const tools = await client.listTools();
      assert.ok(tools.tools.some((t) => t.name === "raw_sql"));
      const result = await client.callTool({ name: "raw_sql", arguments: { sql: "SELECT 'via sdk' AS x", database: "b" } });
      assert.equal(result.isError, false, JSON.stringify(result));
      assert.deepEqual(result.structuredContent.rows, [["via sdk"]]);
    } finally {
      await client.close();
    }
  });
});
