#pragma once

#include <rawtool/untrusted.hpp>

#include <string>

namespace rawtool::test {

/// The exact bytes of an untrusted value, for assertions only. Tests may read
/// untrusted bytes back; product code outside render/ cannot.
std::string bytes_of(const Untrusted& value);

}  // namespace rawtool::test
