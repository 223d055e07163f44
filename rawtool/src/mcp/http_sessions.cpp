#include "mcp/http_sessions.hpp"

#include <rawtool/crypto.hpp>

#include <algorithm>
#include <utility>

namespace rawtool::mcp::detail {

HttpSession::~HttpSession() {
  if (release_place) release_place();
}

SessionRegistry::SessionRegistry(Backend& backend, WorkerPool& pool, const HttpServerConfig& config,
                                 const rawtool::OperatorLog& log, std::function<Clock::time_point()> now)
    : backend_(backend), pool_(pool), config_(config), log_(log), now_(std::move(now)) {}

std::unique_ptr<Dispatcher> SessionRegistry::make_dispatcher(const HttpClient* client) const {
  return std::make_unique<Dispatcher>(backend_, pool_, client != nullptr ? *client->description : config_.open,
                                      config_.max_reply_bytes, log_);
}

std::shared_ptr<HttpSession> SessionRegistry::make(const HttpClient* client, SessionLimit* met) {
  std::vector<std::shared_ptr<HttpSession>> expired;  // closed outside the lock
  std::vector<std::shared_ptr<HttpSession>> taken;    // ended to admit this one; closed outside the lock
  Clock::time_point now;
  {
    std::lock_guard lock(mutex_);
    now = now_();
    for (auto entry = sessions_.begin(); entry != sessions_.end();) {
      HttpSession& old = *entry->second;
      if (old.requests_in_flight == 0 && now - old.last_used > config_.session_idle) {
        --sessions_by_client_[old.client];
        expired.push_back(std::move(entry->second));
        entry = sessions_.erase(entry);
      } else {
        ++entry;
      }
    }
    const std::size_t held = sessions_by_client_[client];
    if (held >= config_.max_sessions_per_token) {
      if (met != nullptr) *met = SessionLimit::per_token;
      return nullptr;
    }
    if (sessions_.size() + unregistered_ >= config_.max_sessions) {
      // Full: the place is taken from the token holding the most, when it
      // holds at least two more than this one (so that no two tokens take
      // places from each other in turn), and one of its sessions is idle.
      const auto victim = fairest_to_end(held);
      if (victim == sessions_.end()) {
        if (met != nullptr) *met = SessionLimit::total;
        return nullptr;
      }
      --sessions_by_client_[victim->second->client];
      taken.push_back(std::move(victim->second));
      sessions_.erase(victim);
    }
    ++unregistered_;
    ++sessions_by_client_[client];
  }
  // Nothing runs in an idle session: closing it returns at once.
  for (const auto& old : expired) old->dispatcher->close(std::chrono::milliseconds(0));
  for (const auto& old : taken) old->dispatcher->close(std::chrono::milliseconds(0));
  if (!expired.empty()) log_event(log_, LogLevel::info, "sessions_expired", "idle sessions were ended");
  if (!taken.empty()) {
    log_event(log_, LogLevel::info, "session_taken",
              "max_sessions were open: the least recently used idle session of the token holding the most was ended "
              "to admit another token's");
  }
  auto session = std::make_shared<HttpSession>();
  session->client = client;
  session->last_used = now;
  session->release_place = [this, client] {
    std::lock_guard lock(mutex_);
    --unregistered_;
    --sessions_by_client_[client];
  };
  session->id = crypto::random_hex(16);
  session->dispatcher = make_dispatcher(client);
  return session;
}

SessionRegistry::Sessions::iterator SessionRegistry::fairest_to_end(std::size_t held) {
  auto victim = sessions_.end();
  std::size_t victim_holds = held + 1;
  for (auto entry = sessions_.begin(); entry != sessions_.end(); ++entry) {
    const HttpSession& candidate = *entry->second;
    if (candidate.requests_in_flight != 0) continue;  // in use: never ended under its caller
    const std::size_t holds = sessions_by_client_[candidate.client];
    if (holds > victim_holds ||
        (holds == victim_holds && victim != sessions_.end() && candidate.last_used < victim->second->last_used)) {
      victim = entry;
      victim_holds = holds;
    }
  }
  return victim;
}

void SessionRegistry::add(std::shared_ptr<HttpSession> session) {
  std::lock_guard lock(mutex_);
  session->release_place = nullptr;
  --unregistered_;
  // Registered after the stop closed the sessions: closed here, so that it
  // starts no call. (It runs nothing yet, so this returns at once.)
  if (closing_) session->dispatcher->close(std::chrono::milliseconds(0));
  sessions_.emplace(session->id, std::move(session));
}

std::shared_ptr<HttpSession> SessionRegistry::find(const std::string& id, const HttpClient* client) {
  std::lock_guard lock(mutex_);
  const auto found = sessions_.find(id);
  if (found == sessions_.end() || found->second->client != client) return nullptr;
  return found->second;
}

std::shared_ptr<HttpSession> SessionRegistry::remove(const std::string& id, const HttpClient* client) {
  std::lock_guard lock(mutex_);
  const auto found = sessions_.find(id);
  if (found == sessions_.end() || found->second->client != client) return nullptr;
  auto session = std::move(found->second);
  sessions_.erase(found);
  --sessions_by_client_[client];
  return session;
}

std::shared_ptr<HttpSession> SessionRegistry::make_stateless(const HttpClient* client, bool initialize,
                                                             std::string_view protocol_version) {
  auto session = std::make_shared<HttpSession>();
  session->client = client;
  session->dispatcher = make_dispatcher(client);
  if (!initialize) session->dispatcher->assume_initialized(std::string(negotiate_protocol_version(protocol_version)));
  bool closing = false;
  {
    std::lock_guard lock(mutex_);
    stateless_.push_back(session);
    closing = closing_;
  }
  // Made after the stop closed the sessions: it answers, but starts no
  // call. (Closing a session that runs nothing returns at once.)
  if (closing) session->dispatcher->close(std::chrono::milliseconds(0));
  return session;
}

void SessionRegistry::end_stateless(const std::shared_ptr<HttpSession>& session) {
  std::lock_guard lock(mutex_);
  stateless_.erase(std::remove(stateless_.begin(), stateless_.end(), session), stateless_.end());
}

SessionRegistry::Admission SessionRegistry::begin_request(HttpSession& session, bool tool_call,
                                                         std::function<void()> on_room) {
  std::lock_guard lock(mutex_);
  if (tool_call) {
    std::size_t& calls = calls_by_client_[session.client];
    if (config_.max_calls_per_token != 0 && calls >= config_.max_calls_per_token) {
      // One call waits per answer being written, so waiting holds no more
      // connections than the token's calls do. After close_all() nothing is
      // woken again: the stop refuses.
      auto& waiting = waiting_[session.client];
      if (closing_ || !on_room || waiting.size() >= answering_by_client_[session.client]) return Admission::busy;
      waiting.push_back(std::move(on_room));
      return Admission::later;
    }
    ++calls;
  }
  ++session.requests_in_flight;
  session.last_used = now_();
  return Admission::admitted;
}

void SessionRegistry::answering(HttpSession& session) {
  std::lock_guard lock(mutex_);
  ++answering_by_client_[session.client];
}

void SessionRegistry::end_request(HttpSession& session, bool tool_call, bool answering) {
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard lock(mutex_);
    if (tool_call) {
      --calls_by_client_[session.client];
      if (answering) --answering_by_client_[session.client];
      if (const auto found = waiting_.find(session.client); found != waiting_.end()) {
        woken = std::move(found->second);
        waiting_.erase(found);
      }
    }
    --session.requests_in_flight;
    session.last_used = now_();
  }
  for (auto& ask_again : woken) ask_again();
}

std::vector<std::shared_ptr<HttpSession>> SessionRegistry::close_all() {
  std::vector<std::shared_ptr<HttpSession>> sessions;
  decltype(waiting_) woken;
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    for (auto& entry : sessions_) sessions.push_back(entry.second);
    sessions.insert(sessions.end(), stateless_.begin(), stateless_.end());
    woken = std::move(waiting_);
    waiting_.clear();
  }
  // Each asks again and is refused, or admitted by a closed session.
  for (auto& [client, calls] : woken)
    for (auto& ask_again : calls) ask_again();
  return sessions;
}

std::vector<SessionRegistry::TokenLoad> SessionRegistry::load() {
  const auto count = [](const std::unordered_map<const HttpClient*, std::size_t>& counts, const HttpClient* client) {
    const auto found = counts.find(client);
    return found != counts.end() ? found->second : std::size_t{0};
  };
  std::vector<TokenLoad> loads;
  std::lock_guard lock(mutex_);
  if (config_.clients.empty()) {
    loads.push_back({"", count(sessions_by_client_, nullptr), count(calls_by_client_, nullptr)});
  }
  for (const HttpClient& client : config_.clients) {
    loads.push_back({client.name, count(sessions_by_client_, &client), count(calls_by_client_, &client)});
  }
  if (config_.oauth) {
    // OAuth identities together, under their common name: one figure per
    // identity would grow with the identity provider's users.
    TokenLoad oauth{"oauth", 0, 0};
    const auto add = [&](const std::unordered_map<const HttpClient*, std::size_t>& counts, std::size_t& into) {
      for (const auto& [client, n] : counts)
        if (client != nullptr && !client->subject.empty()) into += n;
    };
    add(sessions_by_client_, oauth.sessions);
    add(calls_by_client_, oauth.calls);
    loads.push_back(oauth);
  }
  return loads;
}

}  // namespace rawtool::mcp::detail
