// The docker/ files, checked statically: no Docker engine runs where the
// tests run. The compose files parse (strictly, within the YAML subset they
// are written in) and wire PostgreSQL 15 to rawtool; the Dockerfile's package
// lists follow `.ci/deps --list` by a stated rule; the runtime stage runs as an
// unprivileged user; the configuration the image ships is one rawtool serves.

#include "process.hpp"
#include "yaml_subset.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

const std::filesystem::path source_dir = RAWTOOL_SOURCE_DIR;
const std::filesystem::path docker_dir = source_dir / "docker";

// The rule: packages .ci/deps installs only to test (the test framework, the
// benchmark library, the PostgreSQL server and client the tests start, and the
// fuzzing compiler) go in the test stage; every other package it lists goes in
// the build stage. Node.js and npm come with CI's machine image rather than
// from .ci/deps, so the test stage installs them from Debian in addition.
const std::set<std::string> test_only_packages = {"catch2",  "libbenchmark-dev", "postgresql-15", "postgresql-client-15",
                                                  "clang",   "libclang-rt-14-dev"};
const std::set<std::string> test_stage_extras = {"nodejs", "npm"};

std::string read_file(const std::filesystem::path& file) {
  std::ifstream stream(file, std::ios::binary);
  if (!stream) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

std::set<std::string> ci_deps_list() {
  const std::string command = "bash '" + (source_dir / ".ci" / "deps").string() + "' --list";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run .ci/deps --list");
  std::string out;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  if (::pclose(pipe) != 0) throw std::runtime_error(".ci/deps --list failed");
  std::set<std::string> packages;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) packages.insert(line);
  }
  return packages;
}

struct Stage {
  std::string name;
  std::string from;
  std::vector<std::string> runs;
  std::set<std::string> apt_packages;
  std::vector<std::string> users;  // USER values, in order
  std::string entrypoint;
  std::string cmd;
  bool user_before_entrypoint = false;
};

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// The Dockerfile as stages: instructions joined across "\" continuations,
/// comments dropped; the packages of each `apt-get install` gathered.
std::vector<Stage> parse_dockerfile(const std::string& text) {
  std::vector<std::string> instructions;
  std::string current;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.pop_back();
    current += line + " ";
    if (!continued) {
      instructions.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) instructions.push_back(current);

  std::vector<Stage> stages;
  for (const std::string& instruction : instructions) {
    const auto w = words(instruction);
    if (w.empty()) continue;
    const std::string& keyword = w.front();
    const std::string rest = instruction.substr(instruction.find(keyword) + keyword.size());
    if (keyword == "FROM") {
      Stage stage;
      stage.from = w.at(1);
      if (w.size() >= 4 && (w[2] == "AS" || w[2] == "as")) stage.name = w[3];
      stages.push_back(stage);
      continue;
    }
    if (stages.empty()) continue;
    Stage& stage = stages.back();
    if (keyword == "RUN") {
      stage.runs.push_back(rest);
      for (std::size_t i = 1; i + 1 < w.size(); ++i) {
        if (w[i] != "apt-get" || w[i + 1] != "install") continue;
        for (std::size_t k = i + 2; k < w.size() && w[k] != "&&" && w[k] != ";"; ++k) {
          if (!w[k].starts_with("-")) stage.apt_packages.insert(w[k]);
        }
      }
    } else if (keyword == "USER") {
      stage.users.push_back(w.at(1));
    } else if (keyword == "ENTRYPOINT") {
      stage.entrypoint = rest;
      stage.user_before_entrypoint = !stage.users.empty();
    } else if (keyword == "CMD") {
      stage.cmd = rest;
    }
  }
  return stages;
}

const Stage* stage_named(const std::vector<Stage>& stages, std::string_view name) {
  for (const auto& s : stages) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool is_root(const std::string& user) {
  const std::string name = user.substr(0, user.find(':'));
  return name == "root" || name == "0";
}

std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

std::set<std::string> plus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out = a;
  out.insert(b.begin(), b.end());
  return out;
}

}  // namespace

TEST_CASE("the YAML subset reader rejects what it does not understand", "[cli][docker]") {
  using rawtool::test::parse_yaml_subset;
  CHECK(parse_yaml_subset("a:\n  b: [x, \"y z\"]\n  c:\n    - d: 1\n      e: '2'\n    - f\n") ==
        json::parse(R"({"a":{"b":["x","y z"],"c":[{"d":"1","e":"2"},"f"]}})"));
  for (const char* bad : {"a: 1\na: 2\n", "a:\n\tb: 1\n", "a: &x 1\n", "a: *x\n", "a: |\n  text\n", "a: !tag 1\n",
                          "a: [1, [2]]\n", "a: \"open\n", "a:\n  b: 1\n c: 2\n", "---\na: 1\n", "a: b: c\n"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_yaml_subset(bad), rawtool::test::YamlError);
  }
}

TEST_CASE("compose.yaml parses and runs rawtool's MCP server beside PostgreSQL 15", "[cli][docker]") {
  const json compose = rawtool::test::parse_yaml_subset(read_file(docker_dir / "compose.yaml"));
  const json& services = compose.at("services");
  CHECK(services.at("postgres").at("image").get<std::string>().starts_with("postgres:15"));
  const json& rawtool = services.at("rawtool");
  CHECK(rawtool.at("build").at("dockerfile") == "docker/Dockerfile");
  CHECK(rawtool.at("build").at("target") == "runtime");
  CHECK(rawtool.at("command") == json::parse(R"(["mcp", "--config", "/etc/rawtool/config.json"])"));
  CHECK(rawtool.at("stdin_open") == "true");
  CHECK(rawtool.at("depends_on").at("postgres").at("condition") == "service_healthy");
  const std::string url = rawtool.at("environment").at("RAWTOOL_DATABASE_URL");
  CHECK(url.starts_with("postgresql://rawtool_reader:"));
  CHECK(url.ends_with("@postgres:5432/rawtool"));
  for (const auto& volume : services.at("postgres").at("volumes")) {
    const std::string host = volume.get<std::string>().substr(0, volume.get<std::string>().find(':'));
    if (host.starts_with("./")) CHECK(std::filesystem::exists(docker_dir / host));
  }
}

TEST_CASE("compose.test.yaml parses and points the test suite at its PostgreSQL container", "[cli][docker]") {
  const json compose = rawtool::test::parse_yaml_subset(read_file(docker_dir / "compose.test.yaml"));
  const json& services = compose.at("services");
  CHECK(services.at("postgres").at("image").get<std::string>().starts_with("postgres:15"));
  CHECK(services.at("postgres").at("environment").at("POSTGRES_DB") == "rawtool_test");
  const json& tests = services.at("tests");
  CHECK(tests.at("build").at("target") == "test");
  CHECK(tests.at("environment").at("RAWTOOL_TEST_PG_URL") == "postgresql://postgres@postgres:5432/rawtool_test");
  CHECK(tests.at("environment").at("RAWTOOL_TEST_PG_READER_URL") ==
        "postgresql://rawtool_reader@postgres:5432/rawtool_test");
  CHECK(tests.at("environment").at("RAWTOOL_REQUIRE_PG") == "1");
  CHECK(tests.at("command").at(0) == "ctest");
  CHECK(tests.at("depends_on").at("postgres").at("condition") == "service_healthy");
}

TEST_CASE("the Dockerfile's build and test stages install exactly the packages .ci/deps lists, split by the rule",
          "[cli][docker]") {
  const auto stages = parse_dockerfile(read_file(docker_dir / "Dockerfile"));
  const Stage* build = stage_named(stages, "build");
  const Stage* test = stage_named(stages, "test");
  REQUIRE(build != nullptr);
  REQUIRE(test != nullptr);
  CHECK(build->from == "debian:bookworm");
  CHECK(test->from == "build");
  const auto deps = ci_deps_list();
  REQUIRE(!deps.empty());
  // Every test-only package is one .ci/deps really lists, so the rule cannot go stale silently.
  CHECK(minus(test_only_packages, deps).empty());
  CHECK(build->apt_packages == minus(deps, test_only_packages));
  CHECK(test->apt_packages == plus(test_only_packages, test_stage_extras));
}

TEST_CASE("the Dockerfile's runtime stage is the default target, installs no build packages and runs as non-root",
          "[cli][docker]") {
  const auto stages = parse_dockerfile(read_file(docker_dir / "Dockerfile"));
  REQUIRE(!stages.empty());
  const Stage& runtime = stages.back();
  CHECK(runtime.name == "runtime");
  CHECK(runtime.from.starts_with("debian:bookworm"));
  REQUIRE(!runtime.apt_packages.empty());
  for (const auto& package : runtime.apt_packages) {
    INFO(package);
    CHECK(!package.ends_with("-dev"));
    CHECK(test_only_packages.count(package) == 0);
  }
  REQUIRE(!runtime.users.empty());
  CHECK(!is_root(runtime.users.back()));
  CHECK(runtime.user_before_entrypoint);
  CHECK(json::parse(runtime.entrypoint) == json::parse(R"(["/usr/local/bin/rawtool"])"));
  CHECK(json::parse(runtime.cmd) == json::parse(R"(["mcp", "--config", "/etc/rawtool/config.json"])"));
}

TEST_CASE("the configuration and catalog the image ships pass rawtool check-config", "[cli][docker]") {
  rawtool::test::RunOptions options;
  options.env.emplace_back("RAWTOOL_DATABASE_URL", "postgresql://rawtool_reader@postgres:5432/rawtool");
  const auto result =
      rawtool::test::run_rawtool({"check-config", "--config", (docker_dir / "config.json").string()}, options);
  INFO(result.err);
  CHECK(result.exit_status == 0);
  CHECK_THAT(result.out, Catch::Contains("configuration OK"));
}
