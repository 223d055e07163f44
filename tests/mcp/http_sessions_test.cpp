// The HTTP transport's session registry on its own, with no socket: whose a
// session is, which ids find nothing, the limits, idleness, the stop, and
// many threads making and ending sessions at once.

#include "scripted_backend.hpp"

#include "mcp/http_sessions.hpp"
#include "mcp/worker_pool.hpp"

#include <rawtool/log.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using namespace rawtool::mcp::detail;
using nlohmann::json;
using rawtool::mcp::test::CapturedLines;
using rawtool::mcp::test::description_with;
using rawtool::mcp::test::RecordingChannel;
using rawtool::mcp::test::ScriptedBackend;
constexpr auto admitted = SessionRegistry::Admission::admitted;
constexpr auto busy = SessionRegistry::Admission::busy;
constexpr auto later = SessionRegistry::Admission::later;

json raw_sql(int id) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
              {"params", {{"name", "raw_sql"}, {"arguments", {{"sql", "q"}}}}}};
}

// A registry over a scripted backend, with two tokens and a clock the test
// moves. Declared in the order of their lifetimes: the registry last.
struct Registry {
  Registry() {
    log = rawtool::OperatorLog::open(rawtool::LogConfig{}, lines.sink());
    config.open = description_with({"open_db"});
    config.clients.resize(2);
    config.clients[0].name = "alice";
    config.clients[0].sha256 = "a";
    config.clients[0].description = std::make_shared<const ServerDescription>(description_with({"alice_db"}));
    config.clients[1].name = "bob";
    config.clients[1].sha256 = "b";
    config.clients[1].description = std::make_shared<const ServerDescription>(description_with({"bob_db"}));
    alice = &config.clients[0];
    bob = &config.clients[1];
    registry = std::make_unique<SessionRegistry>(backend, pool, config, *log, [this] { return now; });
  }
  ~Registry() { backend.release(); }

  /// A registered session of `client`.
  std::shared_ptr<HttpSession> open(const HttpClient* client) {
    auto session = registry->make(client);
    REQUIRE(session != nullptr);
    registry->add(session);
    return session;
  }

  CapturedLines lines;
  std::shared_ptr<rawtool::OperatorLog> log;
  ScriptedBackend backend;
  WorkerPool pool{2, 8};
  HttpServerConfig config;
  const HttpClient* alice = nullptr;
  const HttpClient* bob = nullptr;
  SessionRegistry::Clock::time_point now{};
  std::unique_ptr<SessionRegistry> registry;
};

}  // namespace

TEST_CASE("an HTTP session is found and ended only by the token that opened it", "[http][sessions]") {
  Registry r;
  const auto alices = r.open(r.alice);
  const auto bobs = r.open(r.bob);
  REQUIRE(alices->id != bobs->id);

  // Another token, or a request without one, finds nothing under the id and
  // cannot end the session ...
  for (const HttpClient* other : {r.bob, static_cast<const HttpClient*>(nullptr)}) {
    CHECK(r.registry->find(alices->id, other) == nullptr);
    CHECK(r.registry->remove(alices->id, other) == nullptr);
  }
  // ... which its own token still finds and uses.
  CHECK(r.registry->find(alices->id, r.alice) == alices);
  CHECK(r.registry->find(bobs->id, r.bob) == bobs);
  CHECK(r.registry->begin_request(*alices, false) == admitted);
  r.registry->end_request(*alices, false);
  CHECK(r.registry->remove(alices->id, r.alice) == alices);
}

TEST_CASE("an HTTP session shows and lets use only its own token's databases", "[http][sessions]") {
  Registry r;
  const std::pair<const HttpClient*, const ServerDescription*> cases[] = {
      {r.alice, r.alice->description.get()}, {r.bob, r.bob->description.get()}, {nullptr, &r.config.open}};
  REQUIRE(r.alice->description->tools != r.bob->description->tools);  // each names its own database
  for (const auto& [client, description] : cases) {
    const auto session = r.open(client);
    session->dispatcher->assume_initialized("2025-11-25");
    auto channel = std::make_shared<RecordingChannel>();
    session->dispatcher->handle(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), channel);
    REQUIRE(channel->wait_for(1));
    CHECK(channel->messages().front()["result"]["tools"] == description->tools);
  }
}

TEST_CASE("an id that names no session of the asking token finds nothing and ends nothing", "[http][sessions]") {
  Registry r;
  const auto session = r.open(r.alice);
  const auto unregistered = r.registry->make(r.alice);  // initialize not yet answered
  REQUIRE(unregistered != nullptr);
  const auto stateless = r.registry->make_stateless(r.alice, false, "2025-11-25");
  std::string upper = session->id;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  REQUIRE(upper != session->id);

  const std::vector<std::string> ids{
      "",                                      // no id (a stateless session's)
      std::string(session->id.size(), '0'),    // unknown, of the same shape
      session->id.substr(0, session->id.size() - 1),
      session->id + "0",
      " " + session->id,
      upper,
      unregistered->id,                        // its initialize has not succeeded
  };
  for (const auto& id : ids) {
    CAPTURE(id);
    CHECK(r.registry->find(id, r.alice) == nullptr);
    CHECK(r.registry->remove(id, r.alice) == nullptr);
  }
  // None of the attempts touched the real one.
  CHECK(r.registry->find(session->id, r.alice) == session);
}

TEST_CASE("an ended HTTP session is found no more and gives its place back", "[http][sessions]") {
  Registry r;
  r.config.max_sessions_per_token = 1;
  const auto session = r.open(r.alice);
  CHECK(r.registry->make(r.alice) == nullptr);  // its one place is taken

  REQUIRE(r.registry->remove(session->id, r.alice) == session);
  CHECK(r.registry->find(session->id, r.alice) == nullptr);
  CHECK(r.registry->remove(session->id, r.alice) == nullptr);  // a second DELETE finds nothing
  CHECK(r.registry->make(r.alice) != nullptr);
}

TEST_CASE("an HTTP session counts against max_sessions and max_sessions_per_token from the moment it is made",
          "[http][sessions]") {
  Registry r;
  r.config.max_sessions = 3;
  r.config.max_sessions_per_token = 2;

  auto first = r.registry->make(r.alice);
  auto second = r.registry->make(r.alice);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  // Neither is registered yet, and still the token has no place left ...
  using Limit = SessionRegistry::SessionLimit;
  Limit met = Limit::total;
  CHECK(r.registry->make(r.alice, &met) == nullptr);
  CHECK(met == Limit::per_token);
  // ... while another token has one, until every place is taken.
  const auto bobs = r.registry->make(r.bob);
  REQUIRE(bobs != nullptr);
  CHECK(r.registry->make(r.bob, &met) == nullptr);
  CHECK(met == Limit::total);

  // A session dropped before its initialize succeeded gives its place back;
  // a registered one keeps it.
  r.registry->add(first);
  second.reset();
  auto third = r.registry->make(r.alice);
  REQUIRE(third != nullptr);
  CHECK(r.registry->make(r.alice) == nullptr);
  CHECK(r.registry->make_stateless(r.alice, false, "2025-11-25") != nullptr);  // a stateless request holds no place
}

TEST_CASE("when max_sessions are open, a token holding fewer takes the least recently used idle place of the token "
          "holding the most, and no token is locked out",
          "[http][sessions]") {
  Registry r;
  r.config.max_sessions = 16;  // max_sessions_per_token stays at its default, above max_sessions
  std::vector<std::shared_ptr<HttpSession>> alices;
  for (std::size_t i = 0; i < 16; ++i) {
    alices.push_back(r.open(r.alice));
    r.now += 1ms;  // each used after the one before
  }
  CHECK(r.registry->make(r.alice) == nullptr);  // full, and alice holds the most: nothing to take
  // The oldest of alice's sessions is in use: it is passed over.
  REQUIRE(r.registry->begin_request(*alices[0], false) == admitted);

  // bob takes places while alice holds at least two more than he does ...
  std::vector<std::shared_ptr<HttpSession>> bobs;
  for (std::size_t i = 0; i < 8; ++i) bobs.push_back(r.open(r.bob));
  CHECK(r.registry->find(alices[0]->id, r.alice) == alices[0]);
  for (std::size_t i = 1; i <= 8; ++i) CHECK(r.registry->find(alices[i]->id, r.alice) == nullptr);  // least recently used first
  for (std::size_t i = 9; i < 16; ++i) CHECK(r.registry->find(alices[i]->id, r.alice) == alices[i]);
  // ... and then neither takes from the other: 8 each, nobody ping-pongs.
  CHECK(r.registry->make(r.bob) == nullptr);
  CHECK(r.registry->make(r.alice) == nullptr);
  for (const auto& bob : bobs) CHECK(r.registry->find(bob->id, r.bob) == bob);
  CHECK(r.lines.all().find("session_taken") != std::string::npos);

  // A taken session's dispatcher starts no call.
  auto channel = std::make_shared<RecordingChannel>();
  alices[1]->dispatcher->assume_initialized("2025-11-25");
  alices[1]->dispatcher->handle(raw_sql(7), channel);
  REQUIRE(channel->wait_for(1));
  CHECK(channel->messages().front()["error"]["message"] == "the session has ended");
  r.registry->end_request(*alices[0], false);
}

TEST_CASE("a place under max_sessions is taken only from an idle session: a token whose sessions are all in use "
          "keeps them",
          "[http][sessions]") {
  Registry r;
  r.config.max_sessions = 4;
  std::vector<std::shared_ptr<HttpSession>> alices;
  for (std::size_t i = 0; i < 4; ++i) {
    alices.push_back(r.open(r.alice));
    REQUIRE(r.registry->begin_request(*alices.back(), false) == admitted);
  }
  CHECK(r.registry->make(r.bob) == nullptr);
  // An initialize still in flight holds its place too, and cannot be taken.
  r.registry->end_request(*alices[3], false);
  r.registry->remove(alices[3]->id, r.alice);
  const auto pending = r.registry->make(r.alice);
  REQUIRE(pending != nullptr);
  CHECK(r.registry->make(r.bob) == nullptr);
  for (std::size_t i = 0; i < 3; ++i) CHECK(r.registry->find(alices[i]->id, r.alice) == alices[i]);
  for (std::size_t i = 0; i < 3; ++i) r.registry->end_request(*alices[i], false);
  CHECK(r.registry->make(r.bob) != nullptr);  // now one is idle
}

TEST_CASE("an idle HTTP session is ended when a session is made, and one with a request in flight is not",
          "[http][sessions]") {
  Registry r;
  r.config.session_idle = 10s;
  const auto in_use = r.open(r.alice);
  const auto idle = r.open(r.bob);
  const auto fresh = r.open(r.bob);
  REQUIRE(r.registry->begin_request(*in_use, true) == admitted);

  r.now += 10s;  // idle exactly as long as allowed: kept
  REQUIRE(r.registry->make(r.alice) != nullptr);
  CHECK(r.registry->find(idle->id, r.bob) == idle);

  REQUIRE(r.registry->begin_request(*fresh, false) == admitted);
  r.registry->end_request(*fresh, false);  // used now
  r.now += 1ms;
  REQUIRE(r.registry->make(r.alice) != nullptr);
  CHECK(r.registry->find(idle->id, r.bob) == nullptr);
  CHECK(r.registry->find(fresh->id, r.bob) == fresh);
  CHECK(r.registry->find(in_use->id, r.alice) == in_use);
  CHECK(r.lines.all().find("sessions_expired") != std::string::npos);

  // The ended session's dispatcher starts no call.
  auto channel = std::make_shared<RecordingChannel>();
  idle->dispatcher->assume_initialized("2025-11-25");
  idle->dispatcher->handle(raw_sql(7), channel);
  REQUIRE(channel->wait_for(1));
  CHECK(channel->messages().front()["error"]["message"] == "the session has ended");
}

TEST_CASE("max_calls_per_token counts one token's tool calls across its sessions and no other token's",
          "[http][sessions]") {
  Registry r;
  r.config.max_calls_per_token = 2;
  const auto one = r.open(r.alice);
  const auto two = r.open(r.alice);
  const auto bobs = r.open(r.bob);

  REQUIRE(r.registry->begin_request(*one, true) == admitted);
  REQUIRE(r.registry->begin_request(*two, true) == admitted);
  CHECK(r.registry->begin_request(*one, true) == busy);
  CHECK(r.registry->begin_request(*one, false) == admitted);  // not a tool call: not limited
  r.registry->end_request(*one, false);
  CHECK(r.registry->begin_request(*bobs, true) == admitted);

  r.registry->end_request(*two, true);
  CHECK(r.registry->begin_request(*one, true) == admitted);
}

TEST_CASE("a tool call that finds its token's slots held by an answer being written waits for that write, not refused",
          "[http][sessions]") {
  Registry r;
  r.config.max_calls_per_token = 1;
  const auto one = r.open(r.alice);
  const auto two = r.open(r.alice);
  int asked_again = 0;
  const auto ask_again = [&asked_again] { ++asked_again; };

  // Running, not answering: refused, and nothing to wait for.
  REQUIRE(r.registry->begin_request(*one, true) == admitted);
  CHECK(r.registry->begin_request(*two, true, ask_again) == busy);
  // Its answer is being written: the next call waits, still uncounted...
  r.registry->answering(*one);
  CHECK(r.registry->begin_request(*two, true, ask_again) == later);
  CHECK(r.registry->begin_request(*two, true, ask_again) == busy);  // one waits per answer being written
  CHECK(r.registry->begin_request(*two, true) == busy);             // nothing to call back: refused
  CHECK(r.registry->load().front().calls == 1);
  CHECK(asked_again == 0);
  // ...until the write ends: then it asks again, and is admitted.
  r.registry->end_request(*one, true, true);
  CHECK(asked_again == 1);
  REQUIRE(r.registry->begin_request(*two, true) == admitted);
  // Answering counts were given back: a running call is refused outright again.
  CHECK(r.registry->begin_request(*one, true, ask_again) == busy);

  // A call waiting when the stop comes asks again then, and is refused for good.
  r.registry->answering(*two);
  CHECK(r.registry->begin_request(*one, true, ask_again) == later);
  r.registry->close_all();
  CHECK(asked_again == 2);
  CHECK(r.registry->begin_request(*one, true, ask_again) == busy);
  r.registry->end_request(*two, true, true);
  CHECK(asked_again == 2);
}

TEST_CASE("after the stop took every HTTP session, one registered or made stateless later starts no call",
          "[http][sessions]") {
  Registry r;
  const auto before = r.open(r.alice);
  const auto pending = r.registry->make(r.alice);
  const auto request = r.registry->make_stateless(r.bob, false, "2025-11-25");
  const auto taken = r.registry->close_all();
  CHECK(taken.size() == 2);  // the registered and the stateless one; the pending one is not registered yet
  CHECK(std::find(taken.begin(), taken.end(), before) != taken.end());
  CHECK(std::find(taken.begin(), taken.end(), request) != taken.end());

  pending->dispatcher->assume_initialized("2025-11-25");
  r.registry->add(pending);
  const auto late = r.registry->make_stateless(r.bob, false, "2025-11-25");
  for (const auto& session : {pending, late}) {
    auto channel = std::make_shared<RecordingChannel>();
    session->dispatcher->handle(raw_sql(1), channel);
    REQUIRE(channel->wait_for(1));
    CHECK(channel->messages().front()["error"]["message"] == "the session has ended");
  }
}

TEST_CASE("HTTP sessions made and ended from many threads at once never pass a limit, never show across tokens, and "
          "give every place back",
          "[http][sessions]") {
  Registry r;
  // Fewer places than threads, per token and in all: the threads contend.
  r.config.max_sessions = 3;
  r.config.max_sessions_per_token = 2;
  const HttpClient* tokens[] = {r.alice, r.bob};
  std::atomic<std::size_t> held[2] = {0, 0};
  std::atomic<std::size_t> held_total{0};
  std::atomic<std::size_t> most[2] = {0, 0};
  std::atomic<std::size_t> most_total{0};
  std::atomic<std::size_t> seen_across{0};
  std::atomic<std::size_t> made{0};
  std::atomic<std::size_t> lost{0};  // a session its own token could not end
  const auto raise = [](std::atomic<std::size_t>& most_seen, std::size_t value) {
    for (auto seen = most_seen.load(); value > seen && !most_seen.compare_exchange_weak(seen, value);) {
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const int mine = t % 2;
      for (int round = 0; round < 2000; ++round) {
        auto session = r.registry->make(tokens[mine]);
        if (session == nullptr) continue;
        ++made;
        // Counted after the registry counted it and uncounted before it is
        // ended: never more than the registry holds.
        raise(most[mine], ++held[mine]);
        raise(most_total, ++held_total);
        const bool register_it = (round + t) % 2 == 0;
        if (register_it) {
          r.registry->add(session);
          if (r.registry->find(session->id, tokens[1 - mine]) != nullptr) ++seen_across;
          if (r.registry->remove(session->id, tokens[1 - mine]) != nullptr) ++seen_across;
        }
        std::this_thread::yield();  // held while others try
        --held[mine];
        --held_total;
        if (register_it && r.registry->remove(session->id, tokens[mine]) != session) ++lost;
        session.reset();  // an unregistered one gives its place back here
      }
    });
  }
  for (auto& thread : threads) thread.join();

  CHECK(made > 0);
  CHECK(seen_across == 0);
  CHECK(lost == 0);
  CHECK(most[0] <= r.config.max_sessions_per_token);
  CHECK(most[1] <= r.config.max_sessions_per_token);
  CHECK(most_total <= r.config.max_sessions);
  // Every place is free again: the limits allow exactly as many as at first.
  std::vector<std::shared_ptr<HttpSession>> again;
  for (int i = 0; i < 2; ++i) again.push_back(r.registry->make(r.alice));
  again.push_back(r.registry->make(r.bob));
  CHECK(std::count(again.begin(), again.end(), nullptr) == 0);
  CHECK(r.registry->make(r.alice) == nullptr);
  CHECK(r.registry->make(r.bob) == nullptr);
}
