// make_driver chooses the engine from the target's form alone.
#include <rawtool/driver.hpp>

#include <catch2/catch.hpp>

using rawtool::AccessMode;
using rawtool::Engine;

TEST_CASE("URLs and libpq key=value strings choose PostgreSQL", "[make_driver]") {
  for (const char* target : {"postgres://u@h/db", "postgresql://h:5/db", "host=localhost dbname=x", "dbname = x"}) {
    INFO(target);
    CHECK(rawtool::make_driver(target, AccessMode::read_only)->engine() == Engine::postgresql);
  }
}

TEST_CASE("paths, sqlite: prefixes and :memory: choose SQLite", "[make_driver]") {
  for (const char* target : {":memory:", "sqlite::memory:", "sqlite:data.db", "sqlite:///tmp/x.db", "data.db",
                             "/var/db/host=1.db", "hostname.db"}) {
    INFO(target);
    CHECK(rawtool::make_driver(target, AccessMode::read_only)->engine() == Engine::sqlite);
  }
}
