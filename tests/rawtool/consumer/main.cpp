// Embeds rawtool as a gateway would: a configuration, a Tool, one raw call
// against SQLite. Exits 0 only when the reply is the expected rows.

#include <rawtool/config.hpp>
#include <rawtool/tool.hpp>

#include <cstdio>
#include <exception>

int main() {
  try {
    rawtool::Config config = rawtool::parse_config(R"({"databases": [{"label": "gateway", "path": ":memory:"}]})", ".");
    std::unique_ptr<rawtool::Tool> tool = rawtool::Tool::open(std::move(config));
    rawtool::Reply reply = tool->raw("SELECT 1 AS one");
    std::fputs(reply.text().c_str(), stdout);
    const nlohmann::json& s = reply.structured();
    const bool expected = !reply.is_error() && s.value("kind", "") == "raw_rows" &&
                          s["rows"] == nlohmann::json::array({nlohmann::json::array({"1"})}) &&
                          s["raw_provenance"]["database"] == "gateway" && s["raw_provenance"]["engine"] == "sqlite";
    if (!expected) {
      std::fputs("rawtool_consumer: the reply is not the expected rows\n", stderr);
      return 1;
    }
    return 0;
  } catch (const std::exception&) {
    std::fputs("rawtool_consumer: rawtool threw\n", stderr);
    return 2;
  }
}
