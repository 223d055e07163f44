// Embeds the MCP server as a gateway would: serve() over a pipe pair on a
// Tool against SQLite, with initialize, a raw_sql call and a ping written
// before end of input. Exits 0 only when all three are answered as expected.

#include <rawtool/config.hpp>
#include <rawtool/mcp.hpp>
#include <rawtool/tool.hpp>

#include <array>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

}  // namespace

int main() {
  try {
    rawtool::Config config = rawtool::parse_config(R"({"databases": [{"label": "gateway", "path": ":memory:"}]})", ".");
    std::unique_ptr<rawtool::Tool> tool = rawtool::Tool::open(std::move(config));
    std::array<int, 2> requests{};
    std::array<int, 2> responses{};
    if (::pipe(requests.data()) != 0 || ::pipe(responses.data()) != 0) return 2;
    // Small enough for the pipes' buffers: written whole before serve() reads, read whole after it returns.
    const std::string input =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"consumer","version":"1"}}})"
        "\n"
        R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"raw_sql","arguments":{"sql":"SELECT 1 AS one"}}})"
        "\n"
        R"({"jsonrpc":"2.0","id":3,"method":"ping"})"
        "\n";
    if (!write_all(requests[1], input)) return 2;
    ::close(requests[1]);
    const int status = rawtool::mcp::serve(*tool, requests[0], responses[1]);
    ::close(responses[1]);
    std::string output;
    std::array<char, 4096> chunk{};
    for (ssize_t got; (got = ::read(responses[0], chunk.data(), chunk.size())) > 0;) output.append(chunk.data(), static_cast<std::size_t>(got));
    std::fputs(output.c_str(), stdout);
    const bool expected = status == 0 && output.find(R"("protocolVersion":"2025-11-25")") != std::string::npos &&
                          output.find(R"("id":2,"jsonrpc":"2.0","result":{"content")") != std::string::npos &&
                          output.find(R"("isError":false)") != std::string::npos &&
                          output.find(R"({"id":3,"jsonrpc":"2.0","result":{}})") != std::string::npos;
    if (!expected) {
      std::fputs("rawtool_mcp_consumer: the server's answers are not the expected ones\n", stderr);
      return 1;
    }
    return 0;
  } catch (const std::exception&) {
    std::fputs("rawtool_mcp_consumer: rawtool threw\n", stderr);
    return 2;
  }
}
