// Tests of calibrate/ on the CPU: the harness's shape grids, statistics and JSON writer (the same
// headers the CUDA harness compiles), the nccl-tests importer on logs in nccl-tests' exact
// formats (tests/data/nccl-tests/README.md cites where each format is defined), the fit of a
// recorded raw-measurement file, the profile schema (version 2) and its errors, the comparison,
// and the `overlapsim calibrate` command line. No GPU and no timing assertions: every expected
// value is computed by hand from the fixtures' documented construction.
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include "calibrate/collective_fit.hpp"
#include "calibrate/compare.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/harness/grid.hpp"
#include "calibrate/harness/json_writer.hpp"
#include "calibrate/harness/stats.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_measurements.hpp"
#include "models/cost_model.hpp"
#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
const std::string kLogs = kSrc + "/tests/data/nccl-tests/";
const std::string kRaw = kSrc + "/tests/data/calibrate/";
const std::string kProfiles = kSrc + "/tests/data/profile/";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// The InputError thrown by `f` (what() and line), or empty when none was thrown.
template <class F>
std::pair<std::string, int> input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return {e.what(), e.where().line};
  }
  return {"", 0};
}

std::string write_script(const std::string& body) {
  const std::string path = temp_path(".sh");
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

bool near_rel(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::fabs(b); }

}  // namespace

// ---------------------------------------------------------------- harness grids and statistics

TEST_CASE("harness grid: GEMM axes, grid order and key transformer shapes") {
  for (bool quick : {true, false}) {
    CAPTURE(quick);
    const harness::GemmAxes a = harness::gemm_axes(quick);
    for (const auto* axis : {&a.m, &a.n, &a.k}) {
      REQUIRE(!axis->empty());
      for (std::size_t i = 1; i < axis->size(); ++i) CHECK(axis->at(i) > axis->at(i - 1));
    }
    const auto grid = harness::gemm_grid(a);
    CHECK(grid.size() == a.m.size() * a.n.size() * a.k.size());
    // M slowest, K fastest
    CHECK(grid[1].k == a.k[1]);
    CHECK(grid[1].m == a.m[0]);
    CHECK(grid.back().m == a.m.back());
  }
  CHECK(harness::gemm_grid(harness::gemm_axes(true)).size() == 64);
  CHECK(harness::gemm_grid(harness::gemm_axes(false)).size() == 512);
  // GPT-3 175B at TP 8, 2048 tokens: QKV (2048, 3·12288/8, 12288), FC2 (2048, 12288, 4·12288/8)
  const auto keys = harness::key_gemm_shapes(false);
  REQUIRE(keys.size() == 16);
  CHECK(keys[0] == harness::GemmShape{2048, 4608, 12288, ""});
  CHECK(keys[0].label == "gpt3-175b tp8 qkv");
  CHECK(keys[3] == harness::GemmShape{2048, 12288, 6144, ""});
  CHECK(keys[8].m == 512);  // chunked 4 ways
  CHECK(contains(keys[8].label, "chunk4"));
  CHECK(harness::key_gemm_shapes(true).size() == 8);
  CHECK(keys[0].flops() == 2.0 * 2048 * 4608 * 12288);
}

TEST_CASE("harness grid: memory sizes, attention, collectives, interference") {
  const auto mq = harness::memory_sizes(true);
  CHECK(mq == std::vector<int64_t>{1 << 20, 1 << 24, 1 << 28});
  CHECK(harness::memory_sizes(false).size() == 7);
  CHECK(harness::attention_grid(true).size() == 2);
  CHECK(harness::attention_grid(false).size() == 24);
  CHECK(harness::AttentionShape{1, 16, 1024, 128}.flops() == 4.0 * 16 * 1024 * 1024 * 128);
  const auto cs = harness::collective_sizes(true);
  CHECK(cs.front() == 1024);
  CHECK(cs.back() == (int64_t{256} << 20));
  CHECK(harness::collective_sizes(false).size() == 30);  // 8 B .. 4 GiB by 2
  CHECK(harness::collective_group_sizes(1).empty());
  CHECK(harness::collective_group_sizes(2) == std::vector<int>{2});
  CHECK(harness::collective_group_sizes(8) == std::vector<int>{2, 4, 8});
  CHECK(harness::collective_group_sizes(6) == std::vector<int>{2, 4, 6});
  CHECK(harness::interference_sm_counts(132, true) == std::vector<int>{2, 8, 32});
  CHECK(harness::interference_sm_counts(20, false) == std::vector<int>{1, 2, 4, 8});
}

TEST_CASE("harness statistics: percentiles, summary, samples per launch") {
  using harness::summarize;
  const harness::Summary s = summarize({5, 1, 4, 2, 3});
  CHECK(s.n == 5);
  CHECK(s.median == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.p10 == testing::approx(1.4));  // 1 + 0.4·(2 − 1)
  CHECK(s.p90 == testing::approx(4.6));
  CHECK(s.mean == 3);
  CHECK(s.spread == testing::approx(3.2 / 3));
  CHECK(summarize({1, 2, 3, 4}).median == 2.5);
  CHECK(summarize({7}).p10 == 7);
  CHECK(summarize({}).n == 0);
  CHECK(harness::choose_inner(1e-3, 100e-6, 1000) == 1);
  CHECK(harness::choose_inner(10e-6, 100e-6, 1000) == 10);
  CHECK(harness::choose_inner(1e-9, 100e-6, 1000) == 1000);
  CHECK(harness::choose_inner(0, 100e-6, 50) == 50);
  CHECK(harness::timing_plan(true).repeats < harness::timing_plan(false).repeats);
}

TEST_CASE("harness JSON writer: valid JSON, exact doubles, null for non-finite, nested raw text") {
  std::ostringstream inner_text;
  harness::JsonWriter inner(inner_text);
  inner.begin_array();
  inner.value(int64_t{1});
  inner.value("two\n\"quoted\"");
  inner.end_array();

  std::ostringstream out;
  harness::JsonWriter w(out);
  w.begin_object();
  w.field("pi", 3.141592653589793);
  w.field("tiny", 1.2345678901234567e-7);
  w.field("big", int64_t{1} << 40);
  w.field("nan", std::nan(""));
  w.field("flag", true);
  w.key("empty");
  w.begin_object();
  w.end_object();
  w.key("inner");
  w.raw(inner_text.str());
  w.end_object();
  CHECK(w.done());
  const auto j = nlohmann::json::parse(out.str());
  CHECK(j["pi"].get<double>() == 3.141592653589793);
  CHECK(j["tiny"].get<double>() == 1.2345678901234567e-7);
  CHECK(j["big"].get<int64_t>() == (int64_t{1} << 40));
  CHECK(j["nan"].is_null());
  CHECK(j["empty"].empty());
  CHECK(j["inner"][1].get<std::string>() == "two\n\"quoted\"");

  std::ostringstream bad;
  harness::JsonWriter b(bad);
  b.begin_object();
  CHECK_THROWS_AS(b.value(1), std::logic_error);  // a value without a key
  CHECK_THROWS_AS(b.end_array(), std::logic_error);
}

// ---------------------------------------------------------------- nccl-tests importer

TEST_CASE("nccl-tests: logs of three nccl-tests output generations parse") {
  SUBCASE("2.19 format: all_reduce_perf, 8 GPUs in one process") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "all_reduce_perf_8xh100.log");
    CHECK(l.collective == "all_reduce");
    CHECK(l.program == "all_reduce_perf");
    CHECK(l.ranks == 8);
    CHECK(l.nodes == 1);
    CHECK(l.ranks_from == "rank lines");
    CHECK(l.gpu_name == "NVIDIA H100 80GB HBM3");
    CHECK(l.nccl_version == "2.28.9");
    CHECK(l.threads == 1);
    CHECK(l.gpus_per_thread == 8);
    REQUIRE(l.rows.size() == 31);  // 8 B .. 8 GiB
    CHECK(l.rows[0].line == 18);
    CHECK(l.rows[0].size_bytes == 8);
    CHECK(l.rows[0].count == 2);
    CHECK(l.rows[0].type == "float");
    CHECK(l.rows[0].redop == "sum");
    CHECK(l.rows[0].out_of_place.time_us == 18.00);
    CHECK(l.rows[0].in_place.time_us == 18.21);
    CHECK(l.rows.back().size_bytes == (int64_t{8} << 30));
    CHECK(l.rows.back().out_of_place.busbw_GBps == 356.26);
    CHECK(l.avg_busbw_GBps == 135.61);
    CHECK(l.algorithm == "auto");
    CHECK(l.warnings.empty());
  }
  SUBCASE("2.13 format with NCCL INFO lines: the forced algorithm and NCCL's version") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "all_gather_perf_8xh100.log");
    CHECK(l.collective == "all_gather");  // from the file name: 2.13 logs have no "Collective test starting"
    CHECK(l.program.empty());
    CHECK(l.algorithm == "Ring");
    CHECK(l.protocol == "auto");
    CHECK(l.nccl_version == "2.18.5");
    CHECK(l.ranks == 8);
    CHECK(l.rows.size() == 21);
    CHECK(l.rows[0].redop == "none");
  }
  SUBCASE("2.13 format, 16 processes on 2 nodes") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "reduce_scatter_perf_2x8xh100.log");
    CHECK(l.collective == "reduce_scatter");
    CHECK(l.ranks == 16);
    CHECK(l.nodes == 2);
  }
  SUBCASE("AllToAll: in-place #wrong printed as N/A") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "alltoall_perf_8xh100.log");
    CHECK(l.collective == "alltoall");
    CHECK(l.rows[0].in_place.wrong == "N/A");
    CHECK(l.rows[0].in_place.usable);
  }
  SUBCASE("2.11 format: SendRecv without root and redop columns, 'error' column") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "sendrecv_perf_8xh100.log");
    CHECK(l.collective == "sendrecv");
    CHECK(l.ranks == 8);
    CHECK(l.rows.size() == 28);
    CHECK(l.rows[0].redop.empty());
    CHECK(l.rows[0].out_of_place.wrong == "0e+00");
    CHECK(l.rows[0].out_of_place.usable);
  }
  SUBCASE("#wrong > 0: those halves are left out, with a warning naming the line") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "all_reduce_perf_wrong.log");
    REQUIRE(l.rows.size() == 7);
    CHECK_FALSE(l.rows[2].in_place.usable);
    CHECK(l.rows[2].out_of_place.usable);
    CHECK_FALSE(l.rows[4].out_of_place.usable);
    CHECK_FALSE(l.rows[4].in_place.usable);
    REQUIRE(l.warnings.size() == 3);
    CHECK(contains(l.warnings[0], "all_reduce_perf_wrong.log:" + std::to_string(l.rows[2].line) + ": #wrong = 1024"));
  }
  SUBCASE("a zero time and a type nccl-tests never prints: warned, not taken silently") {
    // The first row's out-of-place time set to 0.00 and the second row's type to 'quux'.
    std::ifstream f(kLogs + "all_reduce_perf_8xa100.log");
    std::stringstream edited;
    int rows = 0;
    for (std::string line; std::getline(f, line);) {
      if (!line.empty() && line.find_first_not_of(' ') != std::string::npos && std::isdigit(static_cast<unsigned char>(
                                                                                  line[line.find_first_not_of(' ')]))) {
        ++rows;
        if (rows == 1) line.replace(line.find("22.00"), 5, " 0.00");
        if (rows == 2) line.replace(line.find("float"), 5, " quux");
      }
      edited << line << "\n";
    }
    const NcclTestsLog l = parse_nccl_tests_log("all_reduce_perf_z.log", edited);
    CHECK_FALSE(l.rows[0].out_of_place.usable);
    CHECK(l.rows[0].in_place.usable);
    REQUIRE(l.warnings.size() == 2);
    CHECK(contains(l.warnings[0], ": the out-of-place time is 0 us for 8 B, below a kernel launch (1 us)"));
    CHECK(contains(l.warnings[1], ": type 'quux' is none nccl-tests prints"));
  }
  SUBCASE("a time below a kernel launch (1e-300 us written by hand) is left out, with a warning") {
    std::ifstream f(kLogs + "all_reduce_perf_8xh100.log");
    std::stringstream edited;
    for (std::string line; std::getline(f, line);) {
      std::istringstream words(line);
      std::string first;
      words >> first;
      if (first == "1048576") {  // the 1 MiB row: both times replaced
        std::vector<std::string> w{first};
        for (std::string x; words >> x;) w.push_back(x);
        w[5] = w[9] = "1e-300";
        line.clear();
        for (const std::string& x : w) line += " " + x;
      }
      edited << line << "\n";
    }
    const NcclTestsLog l = parse_nccl_tests_log("all_reduce_perf_tiny.log", edited);
    const auto row = std::find_if(l.rows.begin(), l.rows.end(), [](const NcclTestsRow& r) { return r.size_bytes == 1048576; });
    REQUIRE(row != l.rows.end());
    CHECK_FALSE(row->out_of_place.usable);
    CHECK_FALSE(row->in_place.usable);
    REQUIRE(l.warnings.size() == 2);
    CHECK(contains(l.warnings[0], "the out-of-place time is 1e-300 us for 1048576 B, below a kernel launch (1 us)"));
  }
  SUBCASE("an empty file: no results, named, for --compare and the import alike") {
    const std::string path = testing::temp_path(".log");
    std::ofstream(path).close();
    const auto [msg, line] = input_error([&] { read_nccl_tests_logs(path); });
    CHECK(contains(msg, "no nccl-tests results in it"));
    const auto [imsg, iline] = input_error([&] { import_nccl_tests({path}, {}); });
    CHECK(contains(imsg, "no nccl-tests results in it"));
  }
}

TEST_CASE("nccl-tests: malformed logs are errors naming the file and the line") {
  struct Case {
    const char* file;
    int line;  // 0: no particular line
    const char* says;
  };
  const Case cases[] = {
      {"bad_columns.log", 19, "expected 13 columns as in the header at line 16"},
      {"bad_number.log", 20, "expected a number >= 0 in the out-of-place time column (column 6), found '17.9x3'"},
      {"huge_time.log", 20, "expected a time in µs of at most an hour (3.6e9) in the out-of-place time column (column 6), found '8307.3e30'"},
      {"row_before_header.log", 11, "before the first result row"},
      {"one_half_header.log", 16, "out-of-place and in-place halves"},
      {"no_rows.log", 0, "found none"},
      {"unknown_collective.log", 0, "found hypercube_perf"},
      {"unnamed.log", 0, "cannot tell which collective"},
      // A size that is not whole bytes, or too large for any buffer, is not a row to skip; two
      // runs in one file are not one curve.
      {"negative_size.log", 21, "expected a size in whole bytes, found '-64'"},
      {"huge_size.log", 21, "expected a size of at most 2^62 bytes, found '18446744073709551616'"},
      {"two_runs.log", 45, "expected one nccl-tests run per file, found a second one starting here"},
      // The profile is one GPU model's.
      {"mixed_gpus.log", 9, "expected one GPU model per log, as rank 0 at line 6 (NVIDIA H100 80GB HBM3), found NVIDIA A100-SXM4-80GB"},
      // A second table pasted after a run's rows would join its curve.
      {"two_tables.log", 52, "expected one results table per nccl-tests run, found a second column header here (the "
                             "first table's rows end at line 48)"},
      // A pasted row or rank line would count twice (regression: both were read silently).
      {"dup_row.log", 39, "expected each size once per type and reduction, as nccl-tests prints them, found 8388608 B "
                          "of float sum again (first at line 38)"},
      {"dup_rank.log", 14, "expected each rank once in the rank lines, as nccl-tests prints them, found rank 0 again"},
  };
  for (const Case& c : cases) {
    SUBCASE(c.file) {
      const std::string path = kLogs + "bad/" + c.file;
      const auto [msg, line] = input_error([&] { read_nccl_tests_log(path); });
      CHECK(contains(msg, path));
      CHECK(line == c.line);
      CHECK(contains(msg, c.says));
      if (c.line) CHECK(contains(msg, path + ":" + std::to_string(c.line) + ":"));
    }
  }
  SUBCASE("a row whose time and algbw disagree is read with a warning naming it") {
    // (Its time, 9.20 us for 16 MiB, made the fit's busbw 2919.9 GB/s with no word.)
    const std::string path = kLogs + "bad/contradicting_row.log";
    const NcclTestsLog log = read_nccl_tests_log(path);
    int warned = 0;
    for (const std::string& w : log.warnings)
      if (contains(w, "disagree")) {
        ++warned;
        CHECK(contains(w, path + ":39: the out-of-place time (9.2 us) and algbw (170.85 GB/s) disagree by 91%"));
      }
    CHECK(warned == 1);
    for (const std::string& w : read_nccl_tests_log(kLogs + "all_reduce_perf_8xh100.log").warnings)
      CHECK(!contains(w, "disagree"));
  }
  SUBCASE("the import refuses that row: a profile is fitted from measurements only") {
    // (Read with its time, it fitted 2919.9 GB/s where the log ran ~360, exit 0.)
    const std::string path = kLogs + "bad/contradicting_row.log";
    const auto [msg, line] = input_error([&] { import_nccl_tests({path}, ImportOptions{}); });
    CHECK(line == 39);
    CHECK(contains(msg, path + ":39: the out-of-place time (9.2 us) and algbw (170.85 GB/s) disagree by 91%"));
    CHECK(contains(msg, "drop or re-measure the row"));
  }
  SUBCASE("a number nccl-tests never prints (hex, which strtod reads) is refused where read") {
    // (A time of 0x10 was read as 16 us.)
    std::ifstream in(kLogs + "all_reduce_perf_8xh100.log");
    std::stringstream text;
    int n = 0, row = 0;
    for (std::string l; std::getline(in, l);) {
      ++n;
      std::istringstream w(l);
      std::vector<std::string> t;
      for (std::string x; w >> x;) t.push_back(x);
      // The first result row: size, count, type, redop, root, then the out-of-place time.
      if (!row && t.size() >= 8 && std::all_of(t[0].begin(), t[0].end(), ::isdigit)) {
        row = n;
        t[5] = "0x10";
        l.clear();
        for (const std::string& x : t) l += "  " + x;
      }
      text << l << "\n";
    }
    REQUIRE(row > 0);
    const auto [msg, line] = input_error([&] { parse_nccl_tests_log("all_reduce_perf_hex.log", text); });
    CHECK(line == row);
    CHECK(contains(msg, "found '0x10'"));
  }
  SUBCASE("a sweep that stops where latency dominates fits no bandwidth at the import") {
    // 8 B - 32 KiB (busbw 3.1 GB/s at most) fitted 180.9 GB/s, which then timed an 8 GiB
    // AllReduce as "measured".
    ImportOptions o;
    o.collective = "all_reduce";
    const auto [msg, line] = input_error([&] { import_nccl_tests({kLogs + "bad/unnamed.log"}, o); });
    CHECK(contains(msg, "all_reduce's largest size measured, 32768 B, spends 2% of its fitted time"));
    CHECK(contains(msg, "too little to measure a bandwidth"));
  }
  SUBCASE("the import takes one data type per log (nccl-tests -d all is refused), and says a sendrecv fit times nothing") {
    // (regression: float and half rows of one log were fitted as one curve, their times averaged
    // size by size)
    std::ifstream in(kLogs + "all_reduce_perf_8xh100.log");
    std::stringstream text;
    int row = 0, half_line = 0, line_no = 0;
    for (std::string l; std::getline(in, l);) {
      ++line_no;
      const size_t at = l.find(" float ");
      if (!l.empty() && l[0] != '#' && at != std::string::npos && ++row == 3) {
        l.replace(at, 7, "  half ");
        half_line = line_no;
      }
      text << l << "\n";
    }
    REQUIRE(half_line > 0);
    const std::string path = temp_path("_all_reduce_perf.log");
    {
      std::ofstream out(path);
      out << text.str();
    }
    const auto [msg, line] = input_error([&] { import_nccl_tests({path}, ImportOptions{}); });
    CHECK(line == half_line);
    CHECK(contains(msg, "found half (a run of nccl-tests -d all: import a run of one type, e.g. -d float)"));
    CHECK(contains(msg, "expected one data type per log, as line "));
    const ImportResult sr = import_nccl_tests({kLogs + "sendrecv_perf_8xh100.log"}, ImportOptions{});
    CHECK(std::any_of(sr.warnings.begin(), sr.warnings.end(), [](const std::string& w) {
      return contains(w, "sendrecv is kept in the profile's measured collectives for reference, but no simulation takes "
                         "Send/Recv times from it");
    }));
  }
  SUBCASE("the import takes one reduction per log, and only the ones nccl-tests has") {
    const std::string mixed = kLogs + "bad/all_reduce_perf_mixed_redop.log";
    const auto [msg, line] = input_error([&] { import_nccl_tests({mixed}, ImportOptions{}); });
    CHECK(line == 49);
    CHECK(contains(msg, "expected one reduction per log, as line 18 ran (sum), found avg"));
    // A reduction nccl-tests does not have.
    std::ifstream in(kLogs + "all_reduce_perf_8xh100.log");
    std::stringstream text;
    for (std::string l; std::getline(in, l);) {
      const size_t at = l.find(" sum ");
      text << (l.empty() || l[0] == '#' || at == std::string::npos ? l : l.replace(at, 5, " xor ")) << "\n";
    }
    const std::string path = temp_path("_all_reduce_perf.log");
    {
      std::ofstream out(path);
      out << text.str();
    }
    const auto [msg2, line2] = input_error([&] { import_nccl_tests({path}, ImportOptions{}); });
    CHECK(contains(msg2, "expected sum, prod, max, min, avg or mulsum, found 'xor'"));
    CHECK(line2 > 0);
  }
  SUBCASE("a curve too flat to fit a bandwidth the profile could hold is refused at the import") {
    // 8 B - 1 KiB, every time 18.01 us: the fit's busbw was 1e23 B/s, written, then refused by
    // the profile loader (1e6 to 1e15).
    const auto [msg, line] = input_error([&] { import_nccl_tests({kLogs + "bad/all_reduce_perf_flat.log"}, ImportOptions{}); });
    CHECK(contains(msg, "do not grow with the message size enough to fit a bandwidth"));
  }
  SUBCASE("a log whose NCCL_ALGO names an algorithm NCCL has not is refused at the import") {
    // (NCCL before 2.24 let it pass; the profile kept it and its loader refused it.)
    const std::string path = kLogs + "bad/all_gather_perf_algo_typo.log";
    const auto [msg, line] = input_error([&] { import_nccl_tests({path}, ImportOptions{}); });
    CHECK(contains(msg, path + ": the log's NCCL_ALGO (Rign) names 'rign', which NCCL has not"));
  }
  SUBCASE("the same log given twice to the import is refused (its points would count twice)") {
    const std::string log = kLogs + "all_reduce_perf_8xh100.log";
    const auto [msg, line] = input_error([&] { import_nccl_tests({log, log}, ImportOptions{}); });
    CHECK(contains(msg, "expected each log once, found it given twice"));
  }
  SUBCASE("a log cut short is read with a warning naming its last row") {
    const std::string path = kLogs + "bad/cut_short.log";
    const NcclTestsLog log = read_nccl_tests_log(path);
    CHECK(log.rows.size() == 23);
    CHECK(std::any_of(log.warnings.begin(), log.warnings.end(), [&](const std::string& w) {
      return contains(w, path + ":40: the log ends without nccl-tests' closing \"# Avg bus bandwidth\" line");
    }));
    // A whole log says nothing of the kind, nor one of older nccl-tests, whose footer lines
    // have no '#' (common.cu of the MPI_SUPPORT era: " Avg bus bandwidth    : %g").
    for (const char* whole : {"all_reduce_perf_8xh100.log", "all_reduce_perf_old_footer.log"}) {
      const NcclTestsLog l = read_nccl_tests_log(kLogs + whole);
      CHECK(l.avg_busbw_GBps == 135.61);
      for (const std::string& w : l.warnings) CHECK(!contains(w, "closing"));
    }
  }
  SUBCASE("a file of several runs reads as one log per run, its rows' lines the file's") {
    const std::vector<NcclTestsLog> runs = read_nccl_tests_logs(kLogs + "sweep_8xh100_xxrjun.log");
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].collective == "all_reduce");
    CHECK(runs[1].collective == "sendrecv");
    CHECK(runs[0].rows.size() == 6);
    CHECK(runs[1].rows.size() == 6);
    CHECK(runs[1].rows.front().line == 51);
    CHECK(runs[1].nccl_version == "2.29.2");
    CHECK(runs[0].ranks == 8);
    CHECK(runs[1].ranks == 8);
    // One run: the same as read_nccl_tests_log.
    const std::vector<NcclTestsLog> one = read_nccl_tests_logs(kLogs + "all_reduce_perf_8xh100.log");
    REQUIRE(one.size() == 1);
    CHECK(one[0].rows.size() == read_nccl_tests_log(kLogs + "all_reduce_perf_8xh100.log").rows.size());
    // A malformed row of the second run names its line in the file.
    const std::string path = temp_path(".log");
    {
      std::ifstream in(kLogs + "sweep_8xh100_xxrjun.log");
      std::ofstream out(path);
      int n = 0;
      for (std::string l; std::getline(in, l);) out << (++n == 52 ? l.substr(0, 40) : l) << "\n";
    }
    const auto [msg, line] = input_error([&] { read_nccl_tests_logs(path); });
    CHECK(line == 52);
  }
  SUBCASE("a log that names no collective reads with --collective") {
    const NcclTestsLog l = read_nccl_tests_log(kLogs + "bad/unnamed.log", "all_reduce");
    CHECK(l.collective == "all_reduce");
    CHECK(l.ranks == 8);
  }
  SUBCASE("--collective contradicting the log") {
    const auto [msg, line] = input_error([] { read_nccl_tests_log(kLogs + "all_reduce_perf_8xh100.log", "all_gather"); });
    CHECK(contains(msg, "the log is from all_reduce_perf but the command line names all_gather"));
  }
  SUBCASE("without rank lines the group size comes from busbw / algbw") {
    std::ifstream f(kLogs + "all_gather_perf_8xh100.log");
    std::stringstream filtered;
    std::string line;
    while (std::getline(f, line))
      if (!contains(line, "Rank ")) filtered << line << "\n";
    const NcclTestsLog l = parse_nccl_tests_log("all_gather_perf_norank.log", filtered);
    CHECK(l.ranks == 8);
    CHECK(l.ranks_from == "busbw/algbw");
    CHECK(l.warnings.size() == 1);
  }
}

TEST_CASE("nccl-tests import: alpha and busbw recovered per collective and group") {
  const std::vector<std::string> logs = {kLogs + "all_reduce_perf_8xh100.log", kLogs + "all_gather_perf_8xh100.log",
                                         kLogs + "reduce_scatter_perf_2x8xh100.log", kLogs + "alltoall_perf_8xh100.log",
                                         kLogs + "sendrecv_perf_8xh100.log", kLogs + "all_reduce_perf_wrong.log"};
  const ImportResult r = import_nccl_tests(logs, {});
  const Profile& p = r.profile;
  CHECK(p.device == "h100-sxm5-80gb");  // from "NVIDIA H100 80GB HBM3"
  CHECK(p.provenance_kind == "imported");
  CHECK(p.provenance_extra.at("base_profile") == "calibrate/profiles/h100-sxm5-80gb.json");
  REQUIRE(p.collectives.size() == 5);
  // make_logs.py's (alpha µs, busbw GB/s); the ±1.5 % ripple and the printed rounding keep the
  // fit within 2 % of them.
  struct Want {
    const char* coll;
    int ranks, nodes;
    double alpha_us, busbw_GBps;
  };
  for (const Want& w : {Want{"all_reduce", 8, 1, 18, 360}, Want{"all_gather", 8, 1, 12, 370},
                        Want{"reduce_scatter", 16, 2, 45, 47}, Want{"alltoall", 8, 1, 25, 330},
                        Want{"sendrecv", 8, 1, 8, 230}}) {
    CAPTURE(w.coll);
    const CollectiveFit* f = p.collective(w.coll, w.ranks, w.nodes);
    REQUIRE(f != nullptr);
    CHECK(near_rel(f->alpha_s, w.alpha_us * 1e-6, 0.02));
    CHECK(near_rel(f->busbw_Bps, w.busbw_GBps * 1e9, 0.02));
    CHECK(f->max_relative_error < 0.05);
    CHECK(near_rel(f->time_s(1 << 30), f->alpha_s + (1 << 30) * bus_factor(w.coll, w.ranks) / f->busbw_Bps, 1e-12));
  }
  CHECK(p.collective("all_gather", 8)->algorithm == "Ring");
  // AllReduce points from two logs: 31 rows · 2 halves, plus 7 · 2 − 3 usable halves.
  CHECK(p.collective("all_reduce", 8)->points.size() == 62 + 11);
  CHECK(r.warnings.size() == 4);  // (the fourth: the sendrecv fit times no simulation)

  SUBCASE("the written profile loads back with the same fits") {
    const std::string out = temp_path(".json");
    write_profile(p, out);
    const Profile q = load_profile(out);
    CHECK(q.version == 2);
    REQUIRE(q.collectives.size() == 5);
    CHECK(q.collectives[0].busbw_Bps == p.collectives[0].busbw_Bps);
    CHECK(q.collectives[0].points.size() == p.collectives[0].points.size());
    CHECK(profile_to_json(q) == profile_to_json(p));
    std::remove(out.c_str());
  }
  SUBCASE("logs from different GPUs") {
    const auto [msg, line] = input_error(
        [] { import_nccl_tests({kLogs + "all_reduce_perf_8xh100.log", kLogs + "all_reduce_perf_8xa100.log"}, {}); });
    CHECK(contains(msg, "all_reduce_perf_8xa100.log"));
    CHECK(contains(msg, "different GPUs"));
  }
  SUBCASE("--device overrides the GPU name; an unknown one is refused") {
    ImportOptions o;
    o.device = "h200-sxm-141gb";
    const ImportResult relabelled = import_nccl_tests({kLogs + "all_reduce_perf_8xh100.log"}, o);
    CHECK(relabelled.profile.device == "h200-sxm-141gb");
    // The relabelling is reported (the log names its GPUs).
    bool warned = false;
    for (const std::string& w : relabelled.warnings) warned = warned || contains(w, "NVIDIA H100 80GB HBM3");
    CHECK(warned);
    o.device = "tpu-v4";
    CHECK(contains(input_error([&] { import_nccl_tests({kLogs + "all_reduce_perf_8xh100.log"}, o); }).first, "--device"));
  }
}

TEST_CASE("collective fit: exact on the model, alpha never negative, errors") {
  std::vector<SizeTime> pts;
  for (double s : {1e3, 1e6, 1e8, 1e9}) pts.push_back(SizeTime{s, 20e-6 + s * 1.75 / 300e9});
  const AlphaBusbw a = fit_alpha_busbw(pts, "all_reduce", 8, "test");
  CHECK(a.alpha_s == testing::approx(20e-6).epsilon(1e-9));
  CHECK(a.busbw_Bps == testing::approx(300e9).epsilon(1e-9));
  CHECK(a.max_relative_error < 1e-9);
  // Times shorter at small sizes than the line through the large ones: alpha clamps at 0.
  const AlphaBusbw z = fit_alpha_busbw({{1e3, 1e-9}, {1e9, 1e9 / 100e9}}, "broadcast", 4, "test");
  CHECK(z.alpha_s == 0);
  CHECK(z.busbw_Bps > 0);
  CHECK(contains(input_error([] { fit_alpha_busbw({}, "all_reduce", 8, "x.log"); }).first, "x.log"));
  CHECK(contains(input_error([] { fit_alpha_busbw({{1e3, 1e-5}, {1e9, 1e-6}}, "all_reduce", 8, "x.log"); }).first,
                 "do not grow"));
  CHECK_THROWS_AS(bus_factor("allreduce", 8), InputError);
  CHECK(bus_factor("all_gather", 4) == 0.75);
}

// ---------------------------------------------------------------- fitting recorded raw measurements

TEST_CASE("fit: recorded raw measurements of a 2-GPU H200 run") {
  const RawMeasurements raw = load_raw_measurements(kRaw + "raw_h200_small.json");
  CHECK(raw.gpu == "NVIDIA H200");
  CHECK(raw.quick);
  CHECK(raw.gemm.size() == 7 + 1 + 8);
  const FitResult fit = fit_profile(raw);
  const Profile& p = fit.profile;
  CHECK(p.device == "h200-sxm-141gb");
  CHECK(p.provenance_kind == "measured");
  CHECK(p.provenance_date == "2026-11-29T10:00:00Z");
  CHECK(p.provenance_extra.at("driver") == "580.95.05");
  CHECK(p.provenance_extra.at("nccl") == "2.28.9");
  CHECK(contains(p.provenance_source, "NVIDIA H200"));

  // GEMM: the fixture's bf16 efficiency is 0.4 + 0.1 per dimension equal to 4096.
  const GemmEfficiencyTable* t = p.gemm_table("bf16");
  REQUIRE(t != nullptr);
  CHECK(t->peak_flops == device_spec("h200-sxm-141gb").peak_fp16_flops);
  CHECK(t->at(0, 0, 0) == testing::approx(0.4));
  CHECK(t->at(1, 1, 1) == testing::approx(0.7));
  CHECK(t->at(1, 0, 1) == testing::approx(0.6));
  CHECK(t->at(0, 0, 1) == testing::approx(0.4));  // not measured: filled from (0,0,0), the nearest
  CHECK(t->efficiency_at(2048, 1024, 1024) == testing::approx(0.45));  // halfway in log2 M
  CHECK(t->efficiency_at(64, 1 << 20, 4096) == testing::approx(0.6));  // clamped to the grid's ends
  CHECK(p.gemm_table("fp16") == t);                                    // bf16 stands in for fp16
  REQUIRE(p.gemm_table("fp8") != nullptr);
  CHECK(p.gemm_table("fp8")->at(1, 0, 1) == testing::approx(0.6));
  CHECK(p.gemm_max_efficiency == testing::approx(0.7));  // median over M, N, K >= 4096: one shape
  REQUIRE(p.gemm_key_shapes.size() == 1);
  CHECK(p.gemm_key_shapes[0].efficiency == testing::approx(0.72));
  CHECK(p.gemm_key_shapes[0].interpolated == testing::approx(0.65));  // M 2048: 0.45; N, K clamped: +0.2
  CHECK(p.gemm_tile_m == 256);                                         // kept from the datasheet
  // Two points carry the SM clock they ended at (NVML): the range is said with the tables.
  CHECK(raw.gemm[0].sm_clock_mhz == 1755);
  CHECK(raw.gemm[2].sm_clock_mhz == 0);
  CHECK(contains(p.gemm_source, "; SM clock after the points 1755-1980 MHz (NVML)"));

  // Memory: bandwidths at the largest size 4.0, 4.2, 3.6, 3.8 TB/s against 4.8 TB/s.
  CHECK(p.memory_efficiency == testing::approx((3.8 / 4.8 + 4.0 / 4.8) / 2));
  CHECK(p.hbm_bandwidth_Bps == testing::approx(4.0e12));
  CHECK(p.memory_points.size() == 8);
  CHECK(p.attention_efficiency == testing::approx(0.45));
  CHECK(p.attention_points.size() == 2);
  CHECK(p.launch_overhead_s == testing::approx(2.5e-6));
  CHECK(p.kernel_fixed_overhead_s == testing::approx(1.2e-6));

  const CollectiveFit* ar = p.collective("all_reduce", 2, 1);
  REQUIRE(ar != nullptr);
  CHECK(ar->alpha_s == testing::approx(1e-5).epsilon(1e-6));
  CHECK(ar->busbw_Bps == testing::approx(1e11).epsilon(1e-6));
  CHECK(p.collective("all_gather", 2)->busbw_Bps == testing::approx(1e11).epsilon(1e-6));

  REQUIRE(p.interference.size() == 2);
  CHECK(p.interference[0].compute_slowdown == testing::approx(1.06));
  CHECK(interference_slowdown(p.interference, "copy", 20) == testing::approx(1.06 + 0.5 * 0.19));
  CHECK(interference_slowdown(p.interference, "copy", 1) == testing::approx(1.06));
  CHECK(interference_slowdown(p.interference, "nccl_all_reduce", 8) == 1.0);
  CHECK(p.interference_gemm == "bf16 8192x8192x8192");
  {
    // The replay's coefficient: x = 8/132, 32/132; y = 1 − 1/1.06, 1 − 1/1.25.
    const double x1 = 8.0 / 132, x2 = 32.0 / 132, y1 = 1 - 1 / 1.06, y2 = 1 - 1 / 1.25;
    CHECK(p.sm_interference == testing::approx((x1 * y1 + x2 * y2) / (x1 * x1 + x2 * x2)));
  }

  bool filled_note = false;
  for (const auto& n : fit.notes) filled_note = filled_note || contains(n, "1 grid point(s) not measured");
  CHECK(filled_note);

  SUBCASE("the fitted profile round-trips through JSON") {
    const std::string out = temp_path(".json");
    write_profile(p, out);
    const Profile q = load_profile(out);
    CHECK(profile_to_json(q) == profile_to_json(p));
    CHECK(q.gemm_table("bf16")->efficiency_at(2048, 1024, 1024) == testing::approx(0.45));
    std::remove(out.c_str());
  }
}

TEST_CASE("fit: a single-GPU run of an unknown GPU") {
  const RawMeasurements raw = load_raw_measurements(kRaw + "raw_1gpu_unknown.json");
  CHECK_FALSE(raw.collectives_skipped.empty());
  CHECK(raw.attention_skipped == "not measured in this run");
  const auto [msg, line] = input_error([&] { fit_profile(raw); });
  CHECK(contains(msg, "raw_1gpu_unknown.json: provenance.gpu: expected a GPU of the device catalog"));
  CHECK(contains(msg, "--device"));
  FitOptions o;
  o.device = "h200-sxm-141gb";
  const FitResult fit = fit_profile(raw, o);
  CHECK(fit.profile.collectives.empty());
  CHECK(fit.profile.attention_efficiency == load_profile(default_profile_path("h200-sxm-141gb")).attention_efficiency);
  CHECK(contains(fit.profile.attention_source, "not measured"));
}

TEST_CASE("fit: --device over a run of another catalog GPU is said in the notes") {
  // (regression: an H200 run written as an A100 profile, silently)
  const RawMeasurements raw = load_raw_measurements(kRaw + "raw_h200_small.json");
  FitOptions o;
  o.device = "a100-sxm4-80gb";
  const FitResult fit = fit_profile(raw, o);
  CHECK(std::any_of(fit.notes.begin(), fit.notes.end(), [](const std::string& n) {
    return contains(n, "(h200-sxm-141gb), fitted and written as a100-sxm4-80gb as --device asks");
  }));
  o.device = "h200-sxm-141gb";  // the run's own model: nothing to say
  const FitResult same = fit_profile(raw, o);
  CHECK(std::none_of(same.notes.begin(), same.notes.end(),
                     [](const std::string& n) { return contains(n, "as --device asks"); }));
}

TEST_CASE("raw measurements: errors name the file and the key") {
  CHECK(contains(input_error([] { load_raw_measurements(kRaw + "raw_bad_time.json"); }).first,
                 "raw_bad_time.json: gemm.points[0].time_s.median: expected a time in seconds > 0, found -1.0"));
  CHECK(contains(input_error([] { load_raw_measurements(kRaw + "raw_wrong_schema.json"); }).first,
                 "schema: expected \"overlapsim-raw-measurements\""));
  CHECK_THROWS_AS(load_raw_measurements(kRaw + "no_such_file.json"), InputError);
  // An empty file (an interrupted copy) or one of blanks: said so, not as a JSON syntax error.
  const std::string empty = testing::temp_path(".json");
  { std::ofstream(empty) << ""; }
  CHECK(contains(input_error([&] { load_raw_measurements(empty); }).first,
                 empty + ": expected raw measurements (JSON), found an empty file"));
  { std::ofstream(empty) << " \n\t\n"; }
  CHECK(contains(input_error([&] { load_profile(empty); }).first,
                 empty + ": expected a calibration profile (JSON), found only blanks"));
  std::remove(empty.c_str());
}

// ---------------------------------------------------------------- profile schema version 2

TEST_CASE("profile v2: the valid fixture loads with its tables") {
  const Profile p = load_profile(kProfiles + "v2_valid.json");
  CHECK(p.version == 2);
  CHECK(p.provenance_extra.at("gpu") == "NVIDIA H200");
  REQUIRE(p.gemm_tables.size() == 1);
  CHECK(p.gemm_tables[0].efficiency.size() == 8);
  CHECK(p.collectives.size() == 2);
  CHECK(p.interference.size() == 2);
  CHECK(p.hbm_bandwidth_Bps == 4.0e12);
}

TEST_CASE("profile v2: errors name the file and the JSON path") {
  struct Case {
    const char* file;
    const char* key;
    const char* says;
  };
  const Case cases[] = {
      {"v2_axis_not_ascending.json", "gemm.tables[0].m[1]", "expected a value above the previous one (4096), found 1024"},
      {"v2_table_size.json", "gemm.tables[0].efficiency[1]", "expected an array of 2 entries (one per value of axis n)"},
      {"v2_efficiency_above_one.json", "gemm.tables[0].efficiency[1][0][1]", "expected a number in (0, 1], found 1.2"},
      {"v2_collective_unknown_key.json", "collectives.fits[1].busbw_GBps", "found an unknown key"},
      {"v2_collective_bad_busbw.json", "collectives.fits[0].busbw_Bps", "expected a bandwidth in bytes/s from 1e6 to 1e15, found 0"},
      // A typo in an exponent: 1e-308 printed inf in calibrate compare.
      {"v2_collective_tiny_busbw.json", "collectives.fits[0].busbw_Bps",
       "expected a bandwidth in bytes/s from 1e6 to 1e15, found 1e-308"},
      // 1e-308 on NVLink printed inf and nan as a run's figures; 1e-306 on the GEMMs never ended.
      {"efficiency_too_low.json", "network.nvlink_efficiency", "expected a number in [0.01, 1], found 1e-308"},
      {"v2_unknown_collective.json", "collectives.fits[0].collective", "found \"allreduce\""},
      // A word NCCL_ALGO has not: the fit would never match a collective.
      {"v2_collective_bad_algorithm.json", "collectives.fits[0].algorithm",
       "expected \"auto\" or NCCL_ALGO as the log set it"},
      {"v2_interference_type.json", "interference.points[1].num_sm", "found \"8\""},
      {"v2_version_3.json", "version", "expected 1 or 2, found 3"},
      {"v1_with_tables.json", "gemm.key_shapes", "found an unknown key"},
      // A top-level typo of one of ours is an error, not another reader's section.
      {"v2_section_typo.json", "colectives", "did you mean \"collectives\"?"},
      {"v2_section_case.json", "Tuning", "did you mean \"tuning\"?"},
      {"required_section_typo.json", "netwrk", "did you mean \"network\"?"},  // not "network: no such key"
      {"v1_with_collectives.json", "collectives", "expected \"version\": 2 for this section, found a version-1 profile"},
  };
  for (const Case& c : cases) {
    SUBCASE(c.file) {
      const std::string path = kProfiles + c.file;
      std::string key, msg;
      try {
        load_profile(path);
      } catch (const InputError& e) {
        key = e.key();
        msg = e.what();
      }
      CHECK(key == c.key);
      CHECK(contains(msg, path + ": " + c.key + ": expected"));
      CHECK(contains(msg, c.says));
    }
  }
}

TEST_CASE("profile: a top-level section far from ours is another reader's, and ignored") {
  // v2_valid.json with "other_tool": {...} added loads as before.
  const std::string path = kProfiles + "v2_valid.json";
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  j["other_tool"] = {{"anything", 1}};
  const std::string copy = temp_path(".json");
  std::ofstream(copy) << j.dump(2);
  const Profile a = load_profile(path), b = load_profile(copy);
  std::remove(copy.c_str());
  CHECK(b.collectives.size() == a.collectives.size());
  CHECK_FALSE(a.collectives.empty());
  CHECK(b.gemm_max_efficiency == a.gemm_max_efficiency);
}

// ---------------------------------------------------------------- comparison

TEST_CASE("compare: GEMM time from a measured table, and the v0 model without one") {
  const Profile sheet = load_profile(default_profile_path("h200-sxm-141gb"));
  const Profile meas = load_profile(kProfiles + "v2_valid.json");
  const DeviceSpec& d = device_spec("h200-sxm-141gb");
  // Without a table: exactly the cost model.
  CHECK(calibrated_gemm_time_s(sheet, d, 4096, 4096, 4096, DType::BF16) ==
        CostModel(d, sheet).gemm_time_s(4096, 4096, 4096, DType::BF16));
  // With one: 2·M·N·K / (peak · 0.7) + the fixed overhead at (4096, 4096, 4096).
  const double flops = 2.0 * 4096 * 4096 * 4096;
  CHECK(calibrated_gemm_time_s(meas, d, 4096, 4096, 4096, DType::BF16) ==
        testing::approx(flops / (d.peak_fp16_flops * 0.7) + meas.kernel_fixed_overhead_s));
  // A batch stacks like M: 2 × (2048, 4096, 4096) reads the table at M = 4096.
  CHECK(calibrated_gemm_time_s(meas, d, 2048, 4096, 4096, DType::BF16, 2) ==
        testing::approx(flops / (d.peak_fp16_flops * 0.7) + meas.kernel_fixed_overhead_s));

  std::ostringstream out;
  print_profile_comparison(out, sheet, meas, standard_gemm_shapes(), "standard shapes");
  const std::string s = out.str();
  CHECK(contains(s, "gemm.max_efficiency                     0.800          0.700    0.875"));
  CHECK(contains(s, "gpt3-175b tp8 fc1"));
  CHECK(contains(s, "all_reduce 2 ranks 1 node(s)"));
  CHECK(contains(s, "copy on 32 SMs"));
  CHECK(contains(s, "GEMM time B/A over 16 shapes"));
}

TEST_CASE("compare: a scenario too large to build is refused from its projection") {
  // (regression: 10^4 layers at 512 micro-batches ended in std::bad_alloc, status 1)
  const std::string path = testing::temp_path(".yaml");
  std::ofstream(path) << "name: cc\nmodel: {layers: 10000, hidden: 1024, heads: 16, seq_len: 1024, vocab: 32768}\n"
                         "topology: " << kSrc << "/topologies/dgx-a100.yaml\n"
                         "parallelism: {tp: 1, pp: 1, dp: 8, global_batch: 4096}\n";
  const auto [msg, line] = input_error([&] { scenario_gemm_shapes(path); });
  CHECK(contains(msg, "its workload would hold about 122884610 ops (122.9 M) on 1 simulated rank(s); calibrate compare "
                      "builds it whole"));
  std::remove(path.c_str());
}

TEST_CASE("compare: the GEMMs a scenario runs") {
  const std::vector<GemmQuery> shapes = scenario_gemm_shapes(kSrc + "/tests/data/scenarios/small.yaml");
  REQUIRE(!shapes.empty());
  long long calls = 0;
  for (const GemmQuery& q : shapes) {
    CHECK(q.m >= 1);
    CHECK(q.count >= 1);
    calls += q.count;
  }
  CHECK(calls > static_cast<long long>(shapes.size()));  // the same shapes recur across layers
}

// ---------------------------------------------------------------- command line

TEST_CASE("cli: calibrate import-nccl-tests and compare") {
  const std::string out = temp_path(".json");
  const Run r = run_cli("calibrate import-nccl-tests " + kLogs + "all_reduce_perf_8xh100.log " + kLogs +
                        "alltoall_perf_8xh100.log --out " + out);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "read 2 nccl-tests log(s) for h100-sxm5-80gb"));
  CHECK(contains(r.output, "wrote " + out));
  CHECK(load_profile(out).collectives.size() == 2);
  const Run c = run_cli("calibrate compare " + kSrc + "/calibrate/profiles/h100-sxm5-80gb.json " + out);
  CHECK(c.status == 0);
  CHECK(contains(c.output, "alltoall 8 ranks 1 node(s)"));
  std::remove(out.c_str());

  const Run bad = run_cli("calibrate import-nccl-tests " + kLogs + "bad/bad_number.log --out " + out);
  CHECK(bad.status == 2);
  CHECK(contains(bad.output, "bad/bad_number.log:20:"));
  const Run missing = run_cli("calibrate import-nccl-tests " + kLogs + "all_reduce_perf_8xh100.log");
  CHECK(missing.status == 2);
  // An empty value is not "not given" (`--device "$MODEL"` with MODEL unset ran as the default).
  for (const char* flag : {"--device", "--collective"}) {
    const Run empty = run_cli("calibrate import-nccl-tests " + kLogs + "all_reduce_perf_8xh100.log --out " +
                              temp_path(".json") + " " + flag + " ''");
    CHECK(empty.status == 2);
    CHECK(contains(empty.output, std::string(flag) + ": expected a value, found an empty one"));
  }
  // A shipped profile is the import's base and the simulator's default: never written over.
  const std::string shipped = kSrc + "/calibrate/profiles/h100-sxm5-80gb.json";
  const std::string before = slurp(shipped);
  const Run over = run_cli("calibrate import-nccl-tests " + kLogs + "all_reduce_perf_8xh100.log --out " + shipped);
  CHECK(over.status == 2);
  CHECK(contains(over.output, "--out: is a shipped profile ("));
  CHECK(slurp(shipped) == before);
  // Another device's shipped profile is refused as one too (it read "is also an input").
  const Run other = run_cli("calibrate import-nccl-tests " + kLogs + "all_reduce_perf_8xh100.log --out " + kSrc +
                            "/calibrate/profiles/rtx-a6000.json");
  CHECK(other.status == 2);
  CHECK(contains(other.output, "--out: is a shipped profile ("));
}

TEST_CASE("cli: calibrate fits what the harness wrote, and fails cleanly without a GPU") {
  const std::string out = temp_path(".json");
  SUBCASE("a harness that measured (here: copies the recorded raw file)") {
    const std::string fake_harness = write_script("out=\"\"; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\n"
                                          "cp '" + kRaw + "raw_h200_small.json' \"$out\"");
    const Run r = run_cli("calibrate --quick --out " + out + " --harness " + fake_harness);
    CHECK(r.status == 0);
    CHECK(contains(r.output, "--quick"));
    CHECK(contains(r.output, "wrote " + out + " (measured, h200-sxm-141gb"));
    CHECK(load_profile(out).gemm_max_efficiency == testing::approx(0.7));
    std::remove(fake_harness.c_str());
    std::remove((out + ".raw.json").c_str());
  }
  SUBCASE("--out over the raw file it fits, or over a shipped profile: refused before the harness runs") {
    const std::string raw = temp_path(".raw.json");
    { std::ofstream(raw) << slurp(kRaw + "raw_h200_small.json"); }
    const std::string before = slurp(raw);
    const Run same = run_cli("calibrate --from-raw " + raw + " --out " + raw);
    CHECK(same.status == 2);
    CHECK(contains(same.output, "--out"));
    CHECK(slurp(raw) == before);
    std::remove(raw.c_str());
    // The harness would have run (a script that records it did): it must not.
    const std::string ran = temp_path(".ran");
    const std::string fake_harness = write_script("touch '" + ran + "'");
    const Run shipped = run_cli("calibrate --out " + kSrc + "/calibrate/profiles/h100-sxm5-80gb.json --harness " + fake_harness);
    CHECK(shipped.status == 2);
    CHECK(contains(shipped.output, "--out: is a shipped profile ("));
    CHECK_FALSE(std::ifstream(ran).good());
    std::remove(fake_harness.c_str());
    std::remove(ran.c_str());
  }
  SUBCASE("no GPU: the harness exits 3, overlapsim exits 1 and writes nothing") {
    const std::string fake_harness = write_script("echo 'overlapsim-calibrate-harness: no CUDA GPU on this machine' >&2; exit 3");
    const Run r = run_cli("calibrate --out " + out + " --harness " + fake_harness);
    CHECK(r.status == 1);
    CHECK(contains(r.output, "no GPU"));
    std::ifstream f(out);
    CHECK_FALSE(f.good());
    std::remove(fake_harness.c_str());
  }
  SUBCASE("--from-raw fits without running anything") {
    const Run r = run_cli("calibrate --from-raw " + kRaw + "raw_h200_small.json --out " + out);
    CHECK(r.status == 0);
    CHECK(contains(r.output, "interference copy"));
  }
  SUBCASE("input errors exit 2") {
    CHECK(run_cli("calibrate --quick").status == 2);  // no --out
    CHECK(run_cli("calibrate --out " + out + " --harness /no/such/harness").status == 2);
    CHECK(run_cli("calibrate --from-raw " + kRaw + "raw_bad_time.json --out " + out).status == 2);
  }
  std::remove(out.c_str());
}

TEST_CASE("cli: the CUDA harness, when built, plans without a GPU and rejects bad flags") {
  const std::string harness = std::string(OVERLAPSIM_BINARY).substr(0, std::string(OVERLAPSIM_BINARY).rfind('/')) +
                              "/overlapsim-calibrate-harness";
  if (::access(harness.c_str(), X_OK) != 0) return;  // built only where nvcc and NCCL are found
  const auto run = [&](const std::string& args) {
    const std::string out = temp_path(".out");
    const int rc = std::system((harness + " " + args + " > " + out + " 2>&1").c_str());
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    std::remove(out.c_str());
    return Run{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
  };
  const Run plan = run("--plan --quick");
  CHECK(plan.status == 0);
  CHECK(contains(plan.output, "gemm: 64 grid shapes"));
  CHECK(run("--only gemm,bogus --out x.json").status == 2);
  CHECK(run("--quick").status == 2);  // no --out
}

TEST_CASE("cli: tools/gpu-check.sh parses and rejects a bad argument before looking for a GPU") {
  CHECK(std::system(("bash -n " + kSrc + "/tools/gpu-check.sh").c_str()) == 0);
  const int rc = std::system((kSrc + "/tools/gpu-check.sh --bogus > /dev/null 2>&1").c_str());
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 2);
  // A flag without its value: bad usage, 2 (regression: bash's "unbound variable", status 1).
  for (const char* flag : {" --out", " --build-dir", " --out ''"}) {
    CAPTURE(flag);
    const std::string err = testing::temp_path(".err");
    const int r = std::system((kSrc + "/tools/gpu-check.sh" + flag + " > /dev/null 2> " + err).c_str());
    CHECK(WEXITSTATUS(r) == 2);
    CHECK(contains(slurp(err), "needs a path (see --help)"));
    std::remove(err.c_str());
  }
}
