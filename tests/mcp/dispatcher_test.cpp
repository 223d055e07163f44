// The message-level core on its own, with no transport: several client
// sessions over one worker pool and one backend, each with its own
// description and its own reply channels, as a transport with many clients
// would use them.

#include "scripted_backend.hpp"

#include "mcp/dispatcher.hpp"
#include "mcp/tools.hpp"
#include "mcp/worker_pool.hpp"

#include <rawtool/log.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using nlohmann::json;
using namespace rawtool::mcp::detail;
using rawtool::mcp::test::CapturedLines;
using rawtool::mcp::test::description_with;
using rawtool::mcp::test::RecordingChannel;
using rawtool::mcp::test::ScriptedBackend;
using namespace std::chrono_literals;
using Handled = Dispatcher::Handled;

json initialize() {
  return json::parse(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                     R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
}

json raw_sql(const json& id, const std::string& sql, const std::optional<std::string>& database = std::nullopt) {
  json arguments{{"sql", sql}};
  if (database) arguments["database"] = *database;
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
              {"params", {{"name", "raw_sql"}, {"arguments", std::move(arguments)}}}};
}

json cancel(const json& id) {
  return json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}}}};
}

// Backend, pool and log shared by every session of a test; declared before
// the sessions so that they outlive them.
struct Shared {
  explicit Shared(std::size_t workers = 4, std::size_t max_waiting = 16) : pool(workers, max_waiting) {
    log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
  }
  ~Shared() { backend.release(); }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;

  CapturedLines lines;
  std::shared_ptr<rawtool::OperatorLog> log;
  ScriptedBackend backend;
  WorkerPool pool;
};

// One session, initialized, with a channel of its own for every message.
struct Client {
  Client(Shared& shared, ServerDescription description)
      : session(shared.backend, shared.pool, std::move(description), 1024 * 1024, *shared.log) {
    auto channel = std::make_shared<RecordingChannel>();
    REQUIRE(session.handle(initialize(), channel) == Handled::answered);
    REQUIRE(channel->messages().at(0).contains("result"));
  }

  Dispatcher session;
};

}  // namespace

TEST_CASE("handle says whether a message was answered, started a call or needs no reply", "[mcp][dispatcher]") {
  Shared shared;
  shared.backend.release();
  Client client(shared, description_with({"main"}));
  auto ping = std::make_shared<RecordingChannel>();
  REQUIRE(client.session.handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, ping) == Handled::answered);
  REQUIRE(ping->messages().size() == 1);  // sent before handle returned
  REQUIRE(ping->messages()[0]["id"] == 1);

  auto call = std::make_shared<RecordingChannel>();
  REQUIRE(client.session.handle(raw_sql(2, "q"), call) == Handled::started);
  REQUIRE(call->wait_for(1));
  REQUIRE(call->messages()[0]["id"] == 2);
  REQUIRE(call->messages()[0]["result"]["isError"] == false);

  auto quiet = std::make_shared<RecordingChannel>();
  REQUIRE(client.session.handle(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, quiet) ==
          Handled::no_reply);
  REQUIRE(client.session.handle(cancel(99), quiet) == Handled::no_reply);
  REQUIRE(client.session.handle(json::array(), quiet) == Handled::answered);  // a batch: an invalid request
  REQUIRE(quiet->messages().size() == 1);
  REQUIRE(quiet->messages()[0]["error"]["code"] == static_cast<int>(ErrorCode::invalid_request));
}

TEST_CASE("a running call's figures become progress notifications before its response, and only with a token", "[mcp][dispatcher]") {
  Shared shared;
  shared.backend.release();
  Client client(shared, description_with({"main"}));
  auto channel = std::make_shared<RecordingChannel>();
  json with_token = raw_sql(1, "progress");
  with_token["params"]["_meta"] = {{"progressToken", 9}};
  REQUIRE(client.session.handle(with_token, channel) == Handled::started);
  REQUIRE(channel->wait_for(4));
  const auto messages = channel->messages();
  REQUIRE(messages.size() == 4);
  REQUIRE(messages[0]["params"] == json{{"progressToken", 9}, {"progress", 0}, {"message", "running"}});
  REQUIRE(messages[1]["params"] == json{{"progressToken", 9}, {"progress", 1.5}, {"message", "running for 1.5 s; 10 rows read; row cap 100"}});
  REQUIRE(messages[2]["params"] == json{{"progressToken", 9}, {"progress", 2.5}, {"message", "running for 2.5 s; 20 rows read; row cap 100"}});
  REQUIRE(messages[3]["id"] == 1);

  auto quiet = std::make_shared<RecordingChannel>();
  REQUIRE(client.session.handle(raw_sql(2, "progress"), quiet) == Handled::started);
  REQUIRE(quiet->wait_for(1));
  REQUIRE(quiet->messages().size() == 1);
  REQUIRE(quiet->messages()[0]["id"] == 2);
}

TEST_CASE("progress and the response go to the channel the request came with", "[mcp][dispatcher]") {
  Shared shared;
  shared.backend.release();
  Client client(shared, description_with({"main"}));
  auto first = std::make_shared<RecordingChannel>();
  auto second = std::make_shared<RecordingChannel>();
  json with_token = raw_sql(1, "q");
  with_token["params"]["_meta"] = {{"progressToken", "t"}};
  REQUIRE(client.session.handle(with_token, first) == Handled::started);
  REQUIRE(client.session.handle(raw_sql(2, "q"), second) == Handled::started);
  REQUIRE(first->wait_for(2));
  REQUIRE(second->wait_for(1));
  const auto on_first = first->messages();
  REQUIRE(on_first.size() == 2);
  REQUIRE(on_first[0]["method"] == "notifications/progress");
  REQUIRE(on_first[1]["id"] == 1);
  const auto on_second = second->messages();
  REQUIRE(on_second.size() == 1);
  REQUIRE(on_second[0]["id"] == 2);
}

TEST_CASE("two sessions on one pool may use the same request id at once, each answered on its own", "[mcp][dispatcher]") {
  Shared shared;
  Client a(shared, description_with({"main"}));
  Client b(shared, description_with({"main"}));
  auto to_a = std::make_shared<RecordingChannel>();
  auto to_b = std::make_shared<RecordingChannel>();
  REQUIRE(a.session.handle(raw_sql(1, "from a"), to_a) == Handled::started);
  REQUIRE(b.session.handle(raw_sql(1, "from b"), to_b) == Handled::started);
  REQUIRE(shared.backend.wait_running(2));
  shared.backend.release();
  REQUIRE(to_a->wait_for(1));
  REQUIRE(to_b->wait_for(1));
  REQUIRE(to_a->messages()[0]["result"]["content"][0]["text"] == "rawtool: ran \"from a\"\n");
  REQUIRE(to_b->messages()[0]["result"]["content"][0]["text"] == "rawtool: ran \"from b\"\n");
}

TEST_CASE("cancelling a request in one session leaves another session's request of the same id running",
          "[mcp][dispatcher]") {
  Shared shared;
  Client a(shared, description_with({"main"}));
  Client b(shared, description_with({"main"}));
  auto to_a = std::make_shared<RecordingChannel>();
  auto to_b = std::make_shared<RecordingChannel>();
  a.session.handle(raw_sql("x", "from a"), to_a);
  b.session.handle(raw_sql("x", "from b"), to_b);
  REQUIRE(shared.backend.wait_running(2));
  a.session.handle(cancel("x"), to_a);
  REQUIRE(shared.backend.wait_running(1));
  REQUIRE(shared.backend.cancels() == 1);
  shared.backend.release();
  REQUIRE(to_b->wait_for(1));
  REQUIRE(to_b->messages()[0]["id"] == "x");
  a.session.close(0ms);  // every call of a has ended: nothing more can reach its channel
  REQUIRE(to_a->messages().empty());
}

TEST_CASE("closing one session cancels its own calls and drops its waiting ones, and no other session's",
          "[mcp][dispatcher]") {
  Shared shared(/*workers=*/2, /*max_waiting=*/4);
  Client a(shared, description_with({"main"}));
  Client b(shared, description_with({"main"}));
  auto to_a = std::make_shared<RecordingChannel>();
  auto to_b = std::make_shared<RecordingChannel>();
  a.session.handle(raw_sql(1, "a runs"), to_a);
  b.session.handle(raw_sql(1, "b runs"), to_b);
  REQUIRE(shared.backend.wait_running(2));
  REQUIRE(a.session.handle(raw_sql(2, "a waits"), to_a) == Handled::started);
  a.session.close(0ms);
  REQUIRE(shared.backend.cancels() == 1);
  REQUIRE(shared.backend.wait_running(1));  // b's call still runs
  shared.backend.release();
  REQUIRE(to_b->wait_for(1));
  REQUIRE(to_b->messages()[0]["id"] == 1);
  REQUIRE(shared.backend.started() == 2);  // a's waiting call never ran
  REQUIRE(to_a->messages().empty());

  // A closed session refuses new calls in so many words.
  auto late = std::make_shared<RecordingChannel>();
  REQUIRE(a.session.handle(raw_sql(3, "too late"), late) == Handled::answered);
  REQUIRE(late->messages()[0]["error"]["code"] == static_cast<int>(ErrorCode::invalid_request));
}

TEST_CASE("the waiting bound is the pool's: a call from any session beyond it is answered server_busy",
          "[mcp][dispatcher]") {
  Shared shared(/*workers=*/1, /*max_waiting=*/1);
  Client a(shared, description_with({"main"}));
  Client b(shared, description_with({"main"}));
  auto to_a = std::make_shared<RecordingChannel>();
  auto to_b = std::make_shared<RecordingChannel>();
  REQUIRE(a.session.handle(raw_sql(1, "runs"), to_a) == Handled::started);
  REQUIRE(shared.backend.wait_running(1));
  REQUIRE(a.session.handle(raw_sql(2, "waits"), to_a) == Handled::started);
  REQUIRE(b.session.handle(raw_sql(1, "no room"), to_b) == Handled::answered);
  REQUIRE(to_b->messages()[0]["error"]["code"] == static_cast<int>(ErrorCode::server_busy));
  shared.backend.release();
  REQUIRE(to_a->wait_for(2));
}

TEST_CASE("each session lists its own tools and may name only its own databases, the first by default",
          "[mcp][dispatcher]") {
  Shared shared;
  shared.backend.release();
  Client wide(shared, description_with({"sales", "audit"}));
  Client narrow(shared, description_with({"audit"}, /*raw_path=*/true));
  Client certified_only(shared, description_with({"sales"}, /*raw_path=*/false));

  auto listed = std::make_shared<RecordingChannel>();
  certified_only.session.handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}}, listed);
  const json tools = listed->messages().at(0)["result"]["tools"];
  REQUIRE(tools.size() == 3);  // certified_query, describe_catalog, describe_schema
  for (const json& tool : tools) REQUIRE(tool["name"] != "raw_sql");
  auto refused_tool = std::make_shared<RecordingChannel>();
  REQUIRE(certified_only.session.handle(raw_sql(2, "q"), refused_tool) == Handled::answered);
  REQUIRE(refused_tool->messages()[0]["error"]["code"] == static_cast<int>(ErrorCode::invalid_params));

  auto outside = std::make_shared<RecordingChannel>();
  REQUIRE(narrow.session.handle(raw_sql(1, "q", "sales"), outside) == Handled::answered);
  // A database this session may not name is the model's mistake to correct: a result naming the argument.
  REQUIRE(outside->messages()[0]["result"]["isError"] == true);
  REQUIRE(outside->messages()[0]["result"]["structuredContent"]["argument"]["name"] == "database");
  REQUIRE(shared.backend.databases().empty());  // nothing reached the backend

  auto runs = std::make_shared<RecordingChannel>();
  REQUIRE(narrow.session.handle(raw_sql(2, "q"), runs) == Handled::started);
  REQUIRE(runs->wait_for(1));
  REQUIRE(wide.session.handle(raw_sql(3, "q"), runs) == Handled::started);
  REQUIRE(runs->wait_for(2));
  REQUIRE(wide.session.handle(raw_sql(4, "q", "audit"), runs) == Handled::started);
  REQUIRE(runs->wait_for(3));
  REQUIRE(shared.backend.databases() == std::vector<std::string>{"audit", "sales", "audit"});
}

namespace {

// A channel that throws from its Nth notify or Nth send (counted from 1; 0:
// never), and keeps every message it does take.
class FailingChannel final : public rawtool::mcp::detail::ReplyChannel {
public:
  FailingChannel(int failing_notify, int failing_send) : failing_notify_(failing_notify), failing_send_(failing_send) {}
  void send(std::string message) override {
    if (++sends_ == failing_send_) throw std::runtime_error("a transport that cannot write");
    kept_.send(std::move(message));
  }
  void notify(std::string message) override {
    if (++notifies_ == failing_notify_) throw std::runtime_error("a transport that cannot write");
    kept_.send(std::move(message));
  }
  RecordingChannel& kept() { return kept_; }

private:
  const int failing_notify_;
  const int failing_send_;
  std::atomic<int> notifies_{0};
  std::atomic<int> sends_{0};
  RecordingChannel kept_;
};

}  // namespace

TEST_CASE("a reply channel that throws on a worker is logged, the call is answered with an internal error, and the "
          "session keeps serving",
          "[mcp][dispatcher]") {
  // The "running" notification, a progress figure, and the response itself.
  const auto failure = GENERATE(std::make_pair(1, 0), std::make_pair(2, 0), std::make_pair(0, 1));
  const int failing_notify = failure.first;
  const int failing_send = failure.second;
  CAPTURE(failing_notify, failing_send);
  Shared shared;
  shared.backend.release();
  Client client(shared, description_with({"main"}));
  auto channel = std::make_shared<FailingChannel>(failing_notify, failing_send);
  json call = raw_sql(1, "progress");
  call["params"]["_meta"] = {{"progressToken", 9}};
  REQUIRE(client.session.handle(call, channel) == Handled::started);

  // Answered all the same: its last message is the response, an internal error.
  const std::size_t expected = failing_notify == 1 ? 1 : failing_notify == 2 ? 2 : 4;
  REQUIRE(channel->kept().wait_for(expected));
  const json answer = channel->kept().messages().back();
  REQUIRE(answer["id"] == 1);
  REQUIRE(answer["error"]["code"] == static_cast<int>(ErrorCode::internal_error));
  REQUIRE(answer["error"]["message"] == "internal error");
  REQUIRE(shared.lines.all().find("\"internal_error\"") != std::string::npos);
  REQUIRE(shared.lines.all().find("a transport that cannot write") == std::string::npos);

  // The id is free again and the session serves the next call.
  auto next = std::make_shared<RecordingChannel>();
  REQUIRE(client.session.handle(raw_sql(1, "q"), next) == Handled::started);
  REQUIRE(next->wait_for(1));
  REQUIRE(next->messages()[0]["result"]["isError"] == false);
}

namespace {

// A channel whose transport has no room for a call (its memory budget spent).
class FullChannel final : public rawtool::mcp::detail::ReplyChannel {
public:
  void send(std::string message) override { kept_.send(std::move(message)); }
  void notify(std::string message) override { kept_.send(std::move(message)); }
  bool reserve() override { return false; }
  RecordingChannel& kept() { return kept_; }

private:
  RecordingChannel kept_;
};

}  // namespace

TEST_CASE("a call its transport has no room for is answered busy without running, and sends no progress",
          "[mcp][dispatcher]") {
  Shared shared;
  shared.backend.release();
  Client client(shared, description_with({"main"}));
  auto full = std::make_shared<FullChannel>();
  json call = raw_sql(1, "progress");
  call["params"]["_meta"] = {{"progressToken", 9}};
  REQUIRE(client.session.handle(call, full) == Handled::started);
  REQUIRE(full->kept().wait_for(1));
  const auto messages = full->kept().messages();
  REQUIRE(messages.size() == 1);
  REQUIRE(messages[0]["id"] == 1);
  REQUIRE(messages[0]["error"]["code"] == static_cast<int>(ErrorCode::server_busy));
  REQUIRE(messages[0]["error"]["message"].get<std::string>().find("try again") != std::string::npos);
  REQUIRE(shared.backend.started() == 0);

  // The id is free again, and a call with room runs.
  auto room = std::make_shared<RecordingChannel>();
  REQUIRE(client.session.handle(raw_sql(1, "q"), room) == Handled::started);
  REQUIRE(room->wait_for(1));
  REQUIRE(room->messages()[0]["result"]["isError"] == false);
  REQUIRE(shared.backend.started() == 1);
}
