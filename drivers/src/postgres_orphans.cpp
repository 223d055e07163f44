// Record files of the server processes a rawtool process started, and the
// ending of those a dead process left running. See detail/postgres_orphans.hpp.
#include "detail/postgres_orphans.hpp"
#include "detail/postgres_round_trip.hpp"

#include <rawtool/crypto.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace rawtool::detail {
namespace {

constexpr std::string_view record_suffix = ".backends";
constexpr std::string_view record_header = "rawtool backends 1\n";

/// How long a round waits for the backends it ended to leave pg_stat_activity.
constexpr std::chrono::seconds ending_patience{5};

struct Line {
  std::string key;
  int pid = 0;
  std::int64_t start_us = 0;
};

std::string format_lines(const std::vector<Line>& lines) {
  std::string text(record_header);
  for (const Line& line : lines) text += line.key + ' ' + std::to_string(line.pid) + ' ' + std::to_string(line.start_us) + '\n';
  return text;
}

/// The lines of a record file; a line that does not parse (a write cut short)
/// is skipped.
std::vector<Line> parse_lines(const std::string& text) {
  std::vector<Line> lines;
  if (!text.starts_with(record_header)) return lines;
  std::istringstream in(text.substr(record_header.size()));
  std::string key;
  std::string pid;
  std::string start;
  while (in >> key >> pid >> start) {
    Line line{key, 0, 0};
    const bool pid_ok = std::from_chars(pid.data(), pid.data() + pid.size(), line.pid).ec == std::errc{};
    const bool start_ok = std::from_chars(start.data(), start.data() + start.size(), line.start_us).ec == std::errc{};
    if (key.size() == 64 && pid_ok && start_ok && line.pid > 0) lines.push_back(std::move(line));
  }
  return lines;
}

/// Replaces the content of the open file `fd` by `text`. The new text is
/// written over the old in one write, then the file is cut to its length, so
/// a process killed between the two leaves every line it had plus a tail
/// parse_lines skips or reads as lines that were there before.
bool rewrite(int fd, const std::string& text) {
  if (pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return false;
  return ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  off_t offset = 0;
  for (;;) {
    const ssize_t got = pread(fd, buffer, sizeof buffer, offset);
    if (got <= 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    offset += got;
    if (text.size() > 16 * 1024 * 1024) break;  // not a file rawtool wrote
  }
  return text;
}

/// The record directory, opened, when it is the user's own and closed to
/// others; -1 otherwise.
int open_record_directory() {
  const std::string path = record_directory();
  if (path.empty()) return -1;
  // The parent of $XDG_RUNTIME_DIR/rawtool exists; /tmp/rawtool-<uid> is made here.
  ::mkdir(path.c_str(), 0700);
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid() || (info.st_mode & 077) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// This process's record file: created at the first line, locked while the
/// process lives, never closed (the lock ends with the process).
class ProcessRecord {
public:
  static ProcessRecord& instance() {
    // Never destroyed: drivers that outlive static destruction may still remove lines.
    static ProcessRecord* record = new ProcessRecord();
    return *record;
  }

  std::uint64_t add(const std::string& key, int pid, std::int64_t start_us) {
    std::lock_guard lock(mutex_);
    if (!open_locked()) return 0;
    const std::uint64_t id = ++last_id_;
    lines_.emplace(id, Line{key, pid, start_us});
    write_locked();
    return id;
  }

  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    if (lines_.erase(id) != 0) write_locked();
  }

  /// The name of this process's file, to be passed over when looking for others.
  std::string own_name() {
    std::lock_guard lock(mutex_);
    return name_;
  }

private:
  bool open_locked() {
    if (fd_ >= 0) return true;
    if (failed_) return false;
    failed_ = true;
    const int directory = open_record_directory();
    if (directory < 0) return false;
    std::random_device random;
    const std::string stem = std::to_string(::getpid()) + '-' + std::to_string(random()) + std::to_string(random());
    const std::string temporary = '.' + stem + ".tmp";
    const std::string name = stem + std::string(record_suffix);
    // Locked under a name no one looks for, then renamed into place, so that
    // no other process can find it unlocked and take it for a dead one's.
    const int fd = ::openat(directory, temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      ::close(directory);
      return false;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || !rewrite(fd, format_lines({})) ||
        ::renameat(directory, temporary.c_str(), directory, name.c_str()) != 0) {
      ::unlinkat(directory, temporary.c_str(), 0);
      ::close(fd);
      ::close(directory);
      return false;
    }
    ::close(directory);
    fd_ = fd;
    name_ = name;
    failed_ = false;
    return true;
  }

  void write_locked() {
    if (fd_ < 0) return;
    std::vector<Line> lines;
    lines.reserve(lines_.size());
    for (const auto& [id, line] : lines_) lines.push_back(line);
    rewrite(fd_, format_lines(lines));
  }

  std::mutex mutex_;
  int fd_ = -1;
  bool failed_ = false;  ///< the file could not be made; tried again at the next line
  std::string name_;
  std::uint64_t last_id_ = 0;
  std::map<std::uint64_t, Line> lines_;
};

/// Ends the backends of `lines` on `conn` and waits for them to go. Returns
/// the lines whose backend is still there (empty when all went); std::nullopt
/// when the server did not answer.
std::optional<std::vector<Line>> end_backends(PGconn* conn, const std::vector<Line>& lines, SteadyClock::time_point deadline) {
  if (lines.empty()) return std::vector<Line>{};
  std::string pids = "{";
  std::string starts = "{";
  for (const Line& line : lines) {
    pids += (pids.size() > 1 ? "," : "") + std::to_string(line.pid);
    starts += (starts.size() > 1 ? "," : "") + std::to_string(line.start_us);
  }
  pids += '}';
  starts += '}';
  const char* values[] = {pids.c_str(), starts.c_str()};
  // A backend is the recorded one only when both its pid and its start match.
  constexpr const char* still_there =
      "SELECT r.pid::text FROM ROWS FROM (pg_catalog.unnest($1::integer[]), pg_catalog.unnest($2::bigint[])) AS r(pid, start_us) "
      "JOIN pg_catalog.pg_stat_activity a ON a.pid = r.pid "
      "AND (extract(epoch FROM a.backend_start) * 1000000)::bigint = r.start_us";
  // The matching backends are found first, in a CTE the planner may not
  // inline: pg_terminate_backend in a WHERE clause would be pushed down to
  // the scan of pg_stat_activity and called for every session of the role
  // (of the server, for a superuser) before the join narrowed it.
  const std::string terminate = std::string("WITH matched AS MATERIALIZED (") + still_there +
                                ") SELECT m.pid, pg_catalog.pg_terminate_backend(m.pid::integer) FROM matched m";
  const Result ended = round_trip(conn, Command{.text = terminate.c_str(), .values = values}, deadline);
  if (PQresultStatus(ended.get()) != PGRES_TUPLES_OK) return std::nullopt;
  const auto patience = std::min(deadline, SteadyClock::now() + ending_patience);
  for (;;) {
    const Result left = round_trip(conn, Command{.text = still_there, .values = values}, deadline);
    if (PQresultStatus(left.get()) != PGRES_TUPLES_OK) return std::nullopt;
    if (PQntuples(left.get()) == 0) return std::vector<Line>{};
    if (SteadyClock::now() >= patience) {
      std::vector<Line> remaining;
      for (int row = 0; row < PQntuples(left.get()); ++row) {
        const std::string_view pid = PQgetvalue(left.get(), row, 0);
        for (const Line& line : lines)
          if (std::to_string(line.pid) == pid) remaining.push_back(line);
      }
      return remaining;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// One round over the record files of processes that have ended. False when
/// it could not finish (the connection failed), so it is tried again.
bool end_orphans_once(PGconn* conn, const std::string& key, SteadyClock::time_point deadline) {
  const int directory = open_record_directory();
  if (directory < 0) return true;  // nothing was recorded anywhere rawtool would look
  const std::string own = ProcessRecord::instance().own_name();
  std::vector<std::string> names;
  if (DIR* listing = ::fdopendir(::dup(directory))) {
    while (const dirent* entry = ::readdir(listing)) {
      const std::string_view name = entry->d_name;
      if (name.ends_with(record_suffix) && !name.starts_with('.') && name != own) names.emplace_back(name);
    }
    ::closedir(listing);
  }
  bool finished = true;
  for (const std::string& name : names) {
    const int fd = ::openat(directory, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat info {};
    // A live process holds its lock: its sessions are its own.
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != geteuid() || flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    // Another process may have finished with it and removed it meanwhile.
    if (fstat(fd, &info) != 0 || info.st_nlink == 0) {
      ::close(fd);
      continue;
    }
    std::vector<Line> keep;
    std::vector<Line> mine;
    for (Line& line : parse_lines(read_all(fd))) (line.key == key ? mine : keep).push_back(std::move(line));
    const std::optional<std::vector<Line>> remaining = end_backends(conn, mine, deadline);
    if (!remaining) {
      finished = false;
      keep.insert(keep.end(), mine.begin(), mine.end());
    } else {
      keep.insert(keep.end(), remaining->begin(), remaining->end());
    }
    if (keep.empty()) {
      ::unlinkat(directory, name.c_str(), 0);
    } else if (!mine.empty()) {
      rewrite(fd, format_lines(keep));
    }
    ::close(fd);  // lets the lock go
    if (!finished) break;
  }
  ::close(directory);
  return finished;
}

}  // namespace

std::string target_key(std::string_view conninfo, std::string_view password_file) {
  crypto::Sha256 digest;
  digest.update_field("rawtool postgres target");
  digest.update_field(conninfo);
  digest.update_field(password_file);
  return digest.hex_digest();
}

std::string record_directory() {
  if (const char* set = std::getenv("RAWTOOL_RUNTIME_DIR"); set != nullptr && *set != '\0') return set;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/') {
    return std::string(runtime) + "/rawtool";
  }
  return "/tmp/rawtool-" + std::to_string(geteuid());
}

RecordedBackend::RecordedBackend(const std::string& key, int pid, std::int64_t backend_start_us)
    : id_(ProcessRecord::instance().add(key, pid, backend_start_us)) {}

RecordedBackend::~RecordedBackend() {
  if (id_ != 0 && !kept_) ProcessRecord::instance().remove(id_);
}

void end_orphans(PGconn* conn, const std::string& key, SteadyClock::time_point deadline) {
  struct Round {
    std::mutex mutex;
    bool done = false;  ///< guarded by mutex
  };
  static std::mutex rounds_mutex;
  static std::map<std::string, std::shared_ptr<Round>> rounds;
  std::shared_ptr<Round> round;
  {
    std::lock_guard lock(rounds_mutex);
    std::shared_ptr<Round>& slot = rounds[key];
    if (slot == nullptr) slot = std::make_shared<Round>();
    round = slot;
  }
  std::lock_guard lock(round->mutex);  // a second driver of the database waits for the first's round
  if (round->done) return;
  round->done = end_orphans_once(conn, key, deadline);
}

BackendIdentity backend_identity(PGconn* conn, SteadyClock::time_point deadline) {
  const Result result = round_trip(conn,
                                   "SELECT pg_catalog.pg_backend_pid(), (SELECT (extract(epoch FROM a.backend_start) * "
                                   "1000000)::bigint FROM pg_catalog.pg_stat_activity a WHERE a.pid = pg_catalog.pg_backend_pid())",
                                   deadline);
  BackendIdentity identity;
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1 || PQnfields(result.get()) != 2) {
    return identity;
  }
  const char* pid = PQgetvalue(result.get(), 0, 0);
  const char* start = PQgetvalue(result.get(), 0, 1);
  std::from_chars(pid, pid + std::strlen(pid), identity.pid);
  std::from_chars(start, start + std::strlen(start), identity.start_us);
  return identity;
}

}  // namespace rawtool::detail
