// rawtool mcp: the Model Context Protocol server on stdin/stdout, or on HTTP.

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/open_tool.hpp"
#include "cli/output.hpp"

#include <rawtool/mcp.hpp>

#include <array>
#include <optional>
#include <string>

#include <pthread.h>
#include <signal.h>

namespace rawtool::cli {

namespace {

constexpr std::string_view help =
    "Usage: rawtool mcp [--http [HOST:]PORT] [--metrics HOST:PORT] [--config FILE] [--db URL|PATH]\n"
    "                   [--log FILE|syslog|stderr] [--log-level LEVEL]\n"
    "\n"
    "Serves the Model Context Protocol (newline-delimited JSON-RPC 2.0 over stdio)\n"
    "until stdin closes. stdout carries protocol messages only. The operator log,\n"
    "with certified failures under their log references, goes to stderr unless\n"
    "--log or the configuration's log key says otherwise: an MCP host keeps its\n"
    "server's stderr in its own log and does not show it to the model. The\n"
    "configuration is checked before anything is served.\n"
    "\n"
    "With --http, serves the Streamable HTTP transport at http://HOST:PORT/mcp\n"
    "instead, until SIGTERM or SIGINT; the configuration's http key holds the\n"
    "bearer tokens (as SHA-256 digests) and the origins it accepts. Without\n"
    "tokens it serves only on a loopback address.\n"
    "\n"
    "With --metrics (or the configuration's metrics.listen), also serves\n"
    "Prometheus metrics at http://HOST:PORT/metrics, without authentication:\n"
    "tool calls by tool, database and outcome, durations, pools, and over HTTP\n"
    "requests, memory and each token's sessions and calls.\n"
    "\n"
    "Options:\n"
    "  --http [HOST:]PORT  serve on HTTP; a port alone listens on 127.0.0.1\n"
    "  --metrics HOST:PORT  serve Prometheus metrics there (overrides metrics.listen)\n"
    "  --config FILE       configuration file (JSON); see the README\n"
    "  --db URL|PATH       the database, replacing the configuration's first target\n"
    "\n"
    "Exit status: 0 when stdin closed normally (with --http: after SIGTERM or\n"
    "SIGINT), 2 for a usage or configuration error, 1 otherwise.\n";

constexpr std::string_view examples =
    "  rawtool mcp --config config.json\n"
    "  rawtool mcp --config config.json --http 127.0.0.1:8808\n";

constexpr std::array<OptionSpec, 6> options{{{"--http", "[HOST:]PORT"},
                                             {"--metrics", "HOST:PORT"},
                                             {"--config", "FILE"},
                                             {"--db", "URL|PATH"},
                                             {"--log", "FILE|syslog|stderr"},
                                             {"--log-level", "LEVEL"}}};

/// Serves `listen` until SIGTERM or SIGINT, then stops the server and waits
/// for it; returns its status. The signals are the command line's: blocked
/// before the server makes its threads (which inherit the mask), taken here
/// with sigwait, and left blocked until the process ends, so that a second
/// one during the stop is ignored as before.
int serve_http_until_signal(Tool& tool, std::string_view listen, const std::string& metrics_listen) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  try {
    std::optional<mcp::MetricsServer> metrics;
    if (!metrics_listen.empty()) metrics.emplace(tool, metrics_listen);
    mcp::HttpServer server(tool, listen, metrics ? &*metrics : nullptr);
    if (metrics) metrics->start();
    server.start();
    int signo = 0;
    while (sigwait(&signals, &signo) != 0) {
    }
    server.stop();
    return server.wait();
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
}

}  // namespace

int run_mcp(Arguments argv) {
  const Args args(argv, options);
  if (args.help()) {
    const auto exit_paragraph = help.find("\nExit status");
    write_all(1, std::string(help.substr(0, exit_paragraph)) + std::string(log_options_help) +
                     std::string(help.substr(exit_paragraph)) + std::string(examples_lead) + std::string(examples));
    return static_cast<int>(Exit::ok);
  }
  if (!args.positionals().empty()) {
    throw UsageError("mcp takes no arguments");
  }
  CommandConfig command = config_from(args, LogDefault::standard_error);
  // An agent pays for every word of a reply: brief frames, the long form of
  // the boundary said once in the server's instructions.
  command.config.render.brief = true;
  auto tool = open_configured(std::move(command));
  const auto metrics_flag = args.value("--metrics");
  const std::string metrics_listen = metrics_flag.value_or(tool->config().metrics.listen);
  if (metrics_flag && !mcp::MetricsServer::valid_address(*metrics_flag)) {
    throw UsageError("--metrics must be HOST:PORT, HOST an IP address (an IPv6 one in brackets) or localhost");
  }
  if (const auto listen = args.value("--http")) return serve_http_until_signal(*tool, *listen, metrics_listen);
  std::optional<mcp::MetricsServer> metrics;
  if (!metrics_listen.empty()) {
    metrics.emplace(*tool, metrics_listen);
    metrics->start();
  }
  mcp::ServerOptions options;
  options.metrics = metrics ? &*metrics : nullptr;
  return mcp::serve(*tool, 0, 1, options);
}

}  // namespace rawtool::cli
