// The docker/ files, in what their real run cannot show. .ci/docker builds the
// images, runs the suite in the test container against a PostgreSQL container
// and drives the runtime image over MCP (which shows that the stages have their
// packages, that the image runs as non-root without a compiler, and that the
// shipped configuration serves) — but always with local stand-ins for the
// public images, named through BASE_IMAGE and POSTGRES_IMAGE. What is left to
// pin here is what a user gets with those unset: the public images.

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {


const std::filesystem::path source_dir = RAWTOOL_SOURCE_DIR;
const std::filesystem::path docker_dir = source_dir / "docker";

std::string read_file(const std::filesystem::path& file) {
  std::ifstream stream(file, std::ios::binary);
  if (!stream) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The public image each variable stands for when it is left unset.
const std::map<std::string, std::string> public_images = {
    {"BASE_IMAGE", "debian:trixie-slim"}, {"NODE_IMAGE", "node:22-trixie-slim"}, {"POSTGRES_IMAGE", "postgres:17-trixie"}};

struct Dockerfile {
  std::map<std::string, std::string> image_defaults;  // ARG NAME_IMAGE=default, before the first FROM
  std::vector<std::string> froms;                     // the image of every FROM, in order
  std::set<std::string> stages;                       // the names given with AS
};

/// The image arguments and FROM lines of a Dockerfile (instructions joined
/// across "\" continuations, comments dropped).
Dockerfile read_dockerfile(const std::filesystem::path& file) {
  Dockerfile out;
  std::istringstream lines(read_file(file));
  std::string instruction;
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    const bool continued = line.back() == '\\';
    if (continued) line.pop_back();
    instruction += line + " ";
    if (continued) continue;
    const auto w = words(instruction);
    instruction.clear();
    if (w.empty()) continue;
    if (w[0] == "ARG" && out.froms.empty() && w.size() >= 2) {
      const auto equals = w[1].find('=');
      const std::string name = w[1].substr(0, equals);
      if (name.ends_with("_IMAGE")) out.image_defaults[name] = equals == std::string::npos ? "" : w[1].substr(equals + 1);
    }
    if (w[0] == "FROM" && w.size() >= 2) {
      out.froms.push_back(w[1]);
      if (w.size() >= 4 && (w[2] == "AS" || w[2] == "as")) out.stages.insert(w[3]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every Dockerfile starts from the public images unless BASE_IMAGE or NODE_IMAGE names another",
          "[cli][docker]") {
  for (const auto* name : {"Dockerfile", "Dockerfile.test", "ci/postgres/Dockerfile"}) {
    INFO("docker/" << name);
    const Dockerfile dockerfile = read_dockerfile(docker_dir / name);
    CHECK(dockerfile.image_defaults.at("BASE_IMAGE") == public_images.at("BASE_IMAGE"));
    for (const auto& [argument, image] : dockerfile.image_defaults) {
      INFO("ARG " << argument);
      CHECK(public_images.count(argument) == 1);
      if (public_images.count(argument) == 1) CHECK(image == public_images.at(argument));
    }
    REQUIRE(!dockerfile.froms.empty());
    for (const auto& from : dockerfile.froms) {
      INFO("FROM " << from);
      const bool argument = from.starts_with("${") && from.ends_with("}") &&
                            dockerfile.image_defaults.count(from.substr(2, from.size() - 3)) == 1;
      CHECK((argument || dockerfile.stages.count(from) == 1));
    }
  }
}

TEST_CASE("the compose files use the public images unless POSTGRES_IMAGE, BASE_IMAGE or NODE_IMAGE names another",
          "[cli][docker]") {
  const auto expected = [](const std::string& argument) {
    return "${" + argument + ":-" + public_images.at(argument) + "}";
  };
  for (const auto* name : {"compose.yaml", "compose.test.yaml"}) {
    INFO("docker/" << name);
    const YAML::Node compose = YAML::LoadFile((docker_dir / name).string());
    int databases = 0;
    int builds = 0;
    REQUIRE(compose["services"].IsMap());
    for (const auto& service : compose["services"]) {
      INFO("service " << service.first.as<std::string>());
      const YAML::Node& definition = service.second;
      if (definition["build"]) {
        ++builds;
        const YAML::Node& arguments = definition["build"]["args"];
        REQUIRE(arguments.IsMap());
        REQUIRE(arguments["BASE_IMAGE"]);
        CHECK(arguments["BASE_IMAGE"].as<std::string>() == expected("BASE_IMAGE"));
        for (const auto& argument : arguments) {
          const auto name_of = argument.first.as<std::string>();
          INFO("build argument " << name_of);
          REQUIRE(public_images.count(name_of) == 1);
          CHECK(argument.second.as<std::string>() == expected(name_of));
        }
      } else {
        ++databases;
        CHECK(definition["image"].as<std::string>() == expected("POSTGRES_IMAGE"));
      }
    }
    CHECK(databases == 1);
    CHECK(builds == 1);
  }
}
