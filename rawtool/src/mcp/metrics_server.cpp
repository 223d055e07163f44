// rawtool::mcp::MetricsServer: the metrics of an MCP server, on their own
// listener (prometheus-cpp's), whichever transport serves MCP.

#include <rawtool/mcp.hpp>

#include "mcp/http_access.hpp"
#include "mcp/metrics.hpp"

#include <rawtool/log.hpp>

#include <prometheus/exposer.h>

#include <stdexcept>
#include <string>

namespace rawtool::mcp {

struct MetricsServer::Impl {
  Impl(Tool& tool_in, detail::ListenAddress address_in) : tool(tool_in), address(std::move(address_in)), metrics(tool_in) {}
  Tool& tool;
  detail::ListenAddress address;
  detail::Metrics metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::uint16_t port = 0;
};

namespace {

detail::ListenAddress metrics_address(std::string_view listen) {
  auto address = detail::parse_listen_address(listen);
  if (!address || !detail::is_loopback_host(address->host).has_value()) {
    throw ConfigError("metrics.listen", "must be HOST:PORT, HOST an IP address (an IPv6 one in brackets) or localhost");
  }
  if (address->host == "localhost") address->host = "127.0.0.1";
  return *address;
}

}  // namespace

MetricsServer::MetricsServer(Tool& tool, std::string_view listen)
    : impl_(std::make_unique<Impl>(tool, metrics_address(listen))) {}

MetricsServer::~MetricsServer() = default;

bool MetricsServer::valid_address(std::string_view listen) {
  const auto address = detail::parse_listen_address(listen);
  return address && detail::is_loopback_host(address->host).has_value();
}

void MetricsServer::start() {
  if (impl_->exposer) throw std::logic_error("MetricsServer::start called twice");
  impl_->metrics.set_hazards(impl_->tool.inspect_databases());
  const std::string host = impl_->address.host.find(':') != std::string::npos ? "[" + impl_->address.host + "]" : impl_->address.host;
  const std::string bind = host + ":" + std::to_string(impl_->address.port);
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(bind, 1);
  } catch (const std::exception&) {
    // The listener's own words name nothing the operator did not give; say it in rawtool's.
    throw std::runtime_error("cannot listen for metrics on " + bind + ": the address is in use or not this machine's");
  }
  impl_->exposer->RegisterCollectable(impl_->metrics.registry());
  impl_->exposer->RegisterCollectable(impl_->metrics.live());
  const std::vector<int> ports = impl_->exposer->GetListeningPorts();
  impl_->port = ports.empty() ? impl_->address.port : static_cast<std::uint16_t>(ports.front());
  const OperatorLog& log = impl_->tool.log();
  if (log.enabled(LogLevel::info)) {
    log.write(LogLevel::info, "mcp", "metrics_serving",
              nlohmann::json{{"detail", "Prometheus metrics"},
                             {"url", "http://" + host + ":" + std::to_string(impl_->port) + "/metrics"}});
  }
}

std::uint16_t MetricsServer::port() const noexcept { return impl_->port; }

std::string MetricsServer::text() const { return impl_->metrics.text(); }

detail::Metrics& MetricsServer::recorder() noexcept { return impl_->metrics; }

}  // namespace rawtool::mcp
