// Throughput of escaping and per-line quoting on clean ASCII, mixed UTF-8 and
// hostile-dense input (a random mix of every kind of byte and code point that
// must be escaped: the worst case for branch prediction), each beside memcpy of the same bytes in the same run.
// Figures are bytes of input per second (SetBytesProcessed).
//
// Escaping and quoting run through the public functions. On a shared machine
// compare two builds by running both programs in turn, each with
//   render_bench --benchmark_enable_random_interleaving=true --benchmark_repetitions=9

#include <rawtool/render/escape.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr std::size_t input_size = 1 << 20;

std::string repeat_to_size(const std::vector<std::string>& pieces, bool with_lines, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, pieces.size() - 1);
  std::string s;
  std::size_t line = 0;
  while (s.size() < input_size) {
    const std::string& piece = pieces[pick(rng)];
    s += piece;
    line += piece.size();
    if (with_lines && line > 80) {
      s += '\n';
      line = 0;
    }
  }
  return s;
}

const std::vector<std::string> clean_pieces = {"invalid input syntax for type integer: ", "relation ", "does not exist", "SELECT ", "FROM ",
                                               "WHERE id = 42 ", "'abc' ", "column ", "constraint ", "(1, 2, 3) ", "PL/pgSQL function f() line 3 "};
const std::vector<std::string> mixed_pieces = {"caf\xc3\xa9 ", "na\xc3\xafve ", "\xe4\xb8\xad\xe6\x96\x87 ", "\xf0\x9f\x98\x80 ",
                                               "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 ", "value ", "relation ", "\xce\xb1\xce\xb2\xce\xb3 "};
const std::vector<std::string> hostile_pieces = {"\x1b",         "\x07",         "\\",           "\t",           "\r",           "\x7f",
                                                 "\xc2\x85",     "\xc2\x9b",     "\x9b",         "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x80\x8b",
                                                 "\xe2\x80\xa8", "\xf3\xa0\x81\xa7", "\xef\xb8\x8f", "\xc0\xaf", "\xed\xa0\x80", "\xff", std::string(1, '\0')};

// Two more hostile shapes, each one technique repeated: tag-smuggled ASCII
// (every code point from the Tags block) and terminal control sequences.
const std::vector<std::string> tag_pieces = {"\xf3\xa0\x81\xa7", "\xf3\xa0\x81\xa2", "\xf3\xa0\x81\xa5", "\xf3\xa0\x80\xa0", "\xf3\xa0\x81\xbf"};
const std::vector<std::string> ansi_pieces = {"\x1b[2J", "\x1b[1;1H", "\x1b]0;title\x07", "\x1b]8;;http://x.invalid\x07", "link", "\x1b]8;;\x07", "\x9b" "31m"};

enum class Kind { clean, mixed, hostile, tags, ansi };

const std::string& input(Kind kind, bool with_lines) {
  static const std::string inputs[2][5] = {
      {repeat_to_size(clean_pieces, false, 1), repeat_to_size(mixed_pieces, false, 2), repeat_to_size(hostile_pieces, false, 3),
       repeat_to_size(tag_pieces, false, 4), repeat_to_size(ansi_pieces, false, 5)},
      {repeat_to_size(clean_pieces, true, 1), repeat_to_size(mixed_pieces, true, 2), repeat_to_size(hostile_pieces, true, 3),
       repeat_to_size(tag_pieces, true, 4), repeat_to_size(ansi_pieces, true, 5)},
  };
  return inputs[with_lines ? 1 : 0][static_cast<int>(kind)];
}

void memcpy_baseline(benchmark::State& state, Kind kind) {
  const std::string& in = input(kind, false);
  std::string out(in.size(), '\0');
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), in.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
}

void escape(benchmark::State& state, Kind kind, rawtool::render::EscapeContext context) {
  const rawtool::Untrusted in(input(kind, false));
  const rawtool::render::RenderOptions options;
  std::string out;
  for (auto _ : state) {
    out.clear();
    rawtool::render::append_escaped(out, in, context, options);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
  state.counters["out_per_in"] = static_cast<double>(out.size()) / static_cast<double>(in.size());
}

void quote(benchmark::State& state, Kind kind) {
  const rawtool::Untrusted in(input(kind, true));
  const rawtool::render::RenderOptions options;
  std::string out;
  for (auto _ : state) {
    out.clear();
    rawtool::render::append_quoted_lines(out, in, "> ", options);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
}

using rawtool::render::EscapeContext;

BENCHMARK_CAPTURE(memcpy_baseline, clean_ascii, Kind::clean);
BENCHMARK_CAPTURE(escape, clean_ascii_line, Kind::clean, EscapeContext::line);
BENCHMARK_CAPTURE(escape, clean_ascii_cell, Kind::clean, EscapeContext::cell);
BENCHMARK_CAPTURE(quote, clean_ascii_lines, Kind::clean);
BENCHMARK_CAPTURE(memcpy_baseline, mixed_utf8, Kind::mixed);
BENCHMARK_CAPTURE(escape, mixed_utf8_line, Kind::mixed, EscapeContext::line);
BENCHMARK_CAPTURE(quote, mixed_utf8_lines, Kind::mixed);
BENCHMARK_CAPTURE(memcpy_baseline, hostile_dense, Kind::hostile);
BENCHMARK_CAPTURE(escape, hostile_dense_line, Kind::hostile, EscapeContext::line);
BENCHMARK_CAPTURE(quote, hostile_dense_lines, Kind::hostile);
BENCHMARK_CAPTURE(memcpy_baseline, hostile_tags, Kind::tags);
BENCHMARK_CAPTURE(escape, hostile_tags_line, Kind::tags, EscapeContext::line);
BENCHMARK_CAPTURE(memcpy_baseline, hostile_ansi, Kind::ansi);
BENCHMARK_CAPTURE(escape, hostile_ansi_line, Kind::ansi, EscapeContext::line);

}  // namespace

BENCHMARK_MAIN();
