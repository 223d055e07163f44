// The real binary over pipes: `rawtool mcp --config FILE`, spoken to as an
// MCP client would, every line of its stdout checked to be a protocol message.

#include "mcp_process.hpp"

#include <catch2/catch.hpp>

namespace {

using nlohmann::json;
using rawtool::test::McpProcess;
using rawtool::test::TempDir;

}  // namespace

TEST_CASE("initialize answers the latest version with only the tools capability", "[mcp][e2e]") {
  TempDir dir;
  rawtool::test::make_sqlite_database(dir.path() / "db.sqlite", "CREATE TABLE t(x);");
  const auto config = dir.write("config.json", R"({"databases":[{"path":"db.sqlite"}]})");
  McpProcess server(config);
  const json result = server.initialize();
  REQUIRE(result["protocolVersion"] == "2025-11-25");
  REQUIRE(result["capabilities"] == json{{"tools", json::object()}});
}
