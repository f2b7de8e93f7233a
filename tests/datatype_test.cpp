// The element type of a collective (Op::datatype, nccl-tests -d): NVLS reduces only the types and
// operators NCCL's kernels have (src/include/device.h ncclNvlsSupported), fp8 reductions need
// compute capability 9.0 (src/device/generate.py) and NCCL's tuner weighs the ring ×1024 for
// them beyond 8 ranks (src/enqueue.cc), and `overlapsim collective --datatype` sizes and counts
// whole elements (issue: collective communication as NCCL does it).
#include "sim/collective_plan.hpp"
#include "sim/nccl_constants.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/replay.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024.0;

CollectivePlan plan(const Topology& topo, int ranks, CollectiveKind kind, double bytes, DataType t,
                    ReduceOp r = ReduceOp::Sum, CollectiveOptions o = {}) {
  o.datatype = t;
  o.reduce_op = r;
  return plan_collective(topo, shipped_link_efficiency(topo.gpu_model()), first(ranks), kind, bytes, 0, o);
}

/// An nccl-tests log of all_reduce_perf over 8 ranks with rows of `types` (one row each, 1 MiB
/// apart from the first), as nccl-tests 2.17 prints them.
std::string log_of(const std::vector<std::string>& types) {
  const std::string path = temp_path("all_reduce_perf.log");
  std::ofstream f(path);
  f << "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
       "# Collective test starting: all_reduce_perf\n#\n# Using devices\n";
  for (int r = 0; r < 8; ++r)
    f << "#  Rank  " << r << " Group  0 Pid   1000 on host0 device  " << r
      << " [0000:9d:00] NVIDIA H100 80GB HBM3\n";
  f << "#\n#                                                              out-of-place                       in-place\n"
       "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
       "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n";
  long long size = 1 << 20;
  for (const std::string& t : types) {
    const long long count = size / (t == "half" || t == "bfloat16" ? 2 : 4);
    f << "  " << size << "  " << count << "  " << t << "  sum  -1  30.00  34.95  61.17  0  30.00  34.95  61.17  0\n";
    size *= 2;
  }
  return path;
}

}  // namespace

TEST_CASE("datatype names: nccl-tests' and the frameworks', any case, sizes as ncclTypeSize") {
  const std::pair<const char*, DataType> names[] = {
      {"int8", DataType::Int8},         {"uint8", DataType::Uint8},       {"int32", DataType::Int32},
      {"uint32", DataType::Uint32},     {"int64", DataType::Int64},       {"uint64", DataType::Uint64},
      {"half", DataType::Float16},      {"float", DataType::Float32},     {"double", DataType::Float64},
      {"bfloat16", DataType::Bfloat16}, {"f8e4m3", DataType::Float8e4m3}, {"f8e5m2", DataType::Float8e5m2},
      {"FP16", DataType::Float16},      {"bf16", DataType::Bfloat16},     {"Float32", DataType::Float32},
      {"fp64", DataType::Float64},      {"fp8e4m3", DataType::Float8e4m3}, {"float8e5m2", DataType::Float8e5m2},
      {"char", DataType::Int8},         {"int", DataType::Int32}};
  for (const auto& [name, type] : names) {
    CAPTURE(name);
    DataType t = DataType::Uint64;
    REQUIRE(parse_datatype(name, &t));
    CHECK(t == type);
  }
  for (int i = 0; i <= static_cast<int>(DataType::Float8e5m2); ++i) {  // every name reads back
    DataType t = DataType::Uint64;
    CHECK(parse_datatype(to_string(static_cast<DataType>(i)), &t));
    CHECK(static_cast<int>(t) == i);
  }
  DataType kept = DataType::Float16;
  CHECK_FALSE(parse_datatype("fp4", &kept));
  CHECK_FALSE(parse_datatype("", &kept));
  CHECK(kept == DataType::Float16);
  const int bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int i = 0; i <= static_cast<int>(DataType::Float8e5m2); ++i)
    CHECK(datatype_bytes(static_cast<DataType>(i)) == bytes[i]);
}

TEST_CASE("NVLS reduces what ncclNvlsSupported lists: sums of 32/64-bit integers and floating types, max and min but of float and double") {
  for (DataType t : {DataType::Int32, DataType::Uint32, DataType::Int64, DataType::Uint64, DataType::Float16,
                     DataType::Bfloat16}) {
    CAPTURE(to_string(t));
    for (ReduceOp r : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) CHECK(nvls_reduces(r, t));
    for (ReduceOp r : {ReduceOp::Prod, ReduceOp::Avg, ReduceOp::PreMulSum}) CHECK_FALSE(nvls_reduces(r, t));
  }
  for (DataType t : {DataType::Float32, DataType::Float64}) {
    CHECK(nvls_reduces(ReduceOp::Sum, t));
    CHECK_FALSE(nvls_reduces(ReduceOp::Max, t));
    CHECK_FALSE(nvls_reduces(ReduceOp::Min, t));
  }
  for (DataType t : {DataType::Int8, DataType::Uint8, DataType::Float8e4m3, DataType::Float8e5m2})
    CHECK_FALSE(nvls_reduces(ReduceOp::Sum, t));

  // On one DGX H100 a 128 MiB AllReduce takes NVLS where it can reduce the type, else the ring.
  const Topology node = h100_nodes(1);
  const double S = 128 * kMiB;
  CHECK(plan(node, 8, CollectiveKind::AllReduce, S, DataType::Float32).algorithm == CollectiveAlgorithm::Nvls);
  CHECK(plan(node, 8, CollectiveKind::AllReduce, S, DataType::Bfloat16, ReduceOp::Max).algorithm ==
        CollectiveAlgorithm::Nvls);
  CHECK(plan(node, 8, CollectiveKind::AllReduce, S, DataType::Float32, ReduceOp::Max).algorithm ==
        CollectiveAlgorithm::Ring);
  CHECK(plan(node, 8, CollectiveKind::AllReduce, S, DataType::Int8).algorithm == CollectiveAlgorithm::Ring);
  CHECK(plan(node, 8, CollectiveKind::AllReduce, S, DataType::Float8e4m3).algorithm == CollectiveAlgorithm::Ring);
  // Forced where it cannot reduce the type: the ring, said as a fallback.
  CollectiveOptions forced;
  forced.algorithm = CollectiveAlgorithm::Nvls;
  const CollectivePlan fb = plan(node, 8, CollectiveKind::AllReduce, S, DataType::Float64, ReduceOp::Min, forced);
  CHECK(fb.algorithm == CollectiveAlgorithm::Ring);
  CHECK(fb.fallback);
  // An AllGather reduces nothing: NVLS may gather any type (as the tuner ranks it; forced here).
  const CollectivePlan ag = plan(node, 8, CollectiveKind::AllGather, S, DataType::Int8, ReduceOp::Sum, forced);
  CHECK(ag.algorithm == CollectiveAlgorithm::Nvls);
  CHECK_FALSE(ag.fallback);
}

TEST_CASE("fp8 reductions: no kernel below compute capability 9.0, and the ring relegated beyond 8 ranks") {
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::Reduce}) {
    CHECK_FALSE(nccl_has_kernel(k, DataType::Float8e4m3, 80));
    CHECK_FALSE(nccl_has_kernel(k, DataType::Float8e5m2, 86));
    CHECK(nccl_has_kernel(k, DataType::Float8e4m3, 90));
    CHECK(nccl_has_kernel(k, DataType::Bfloat16, 80));
  }
  for (CollectiveKind k : {CollectiveKind::AllGather, CollectiveKind::Broadcast})
    CHECK(nccl_has_kernel(k, DataType::Float8e4m3, 80));
  CHECK(nccl::kFp8RingRelegation == 1024.0);
  CHECK(nccl::kFp8RingMaxRanks == 8);

  // 16 ranks on two DGX H100 nodes, 1 GiB: float takes NVLS_TREE, and without NVLS the ring;
  // f8e4m3 cannot take NVLS, and its ring's time weighs 1024 times: the tree, though slower.
  const Topology two = h100_nodes(2);
  const double S = 1024 * kMiB;
  CHECK(plan(two, 16, CollectiveKind::AllReduce, S, DataType::Float32).algorithm == CollectiveAlgorithm::NvlsTree);
  CollectiveOptions no_nvls;
  no_nvls.nvls_enable = false;
  const CollectivePlan ring = plan(two, 16, CollectiveKind::AllReduce, S, DataType::Float32, ReduceOp::Sum, no_nvls);
  CHECK(ring.algorithm == CollectiveAlgorithm::Ring);
  const CollectivePlan fp8 = plan(two, 16, CollectiveKind::AllReduce, S, DataType::Float8e4m3);
  CHECK(fp8.algorithm == CollectiveAlgorithm::Tree);
  CHECK(fp8.closed_form_s() > ring.closed_form_s());  // NCCL's choice, not the fastest
  // Eight ranks or fewer: the ring as for any type NVLS cannot reduce.
  CHECK(plan(h100_nodes(1), 8, CollectiveKind::AllReduce, S, DataType::Float8e4m3).algorithm ==
        CollectiveAlgorithm::Ring);
  // A ReduceScatter has nothing but the ring here (PAT needs a GPU a node): the ring runs.
  CHECK(plan(two, 16, CollectiveKind::ReduceScatter, S, DataType::Float8e4m3).algorithm == CollectiveAlgorithm::Ring);

  // An AllGather reaches NCCL's tuner as bytes (int8): fp8 changes nothing there. Regression:
  // over 16 one-GPU nodes an fp8 AllGather ran PAT, 32.97 GB/s busbw at 1 GiB, where the ring of
  // int8 or float runs at 46.53.
  const Topology rails = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml",
                                       {{"node.count", "16"}, {"node.gpus.count", "1"}});
  for (double bytes : {64 * kMiB, 1024 * kMiB}) {
    const CollectivePlan i8 = plan(rails, 16, CollectiveKind::AllGather, bytes, DataType::Int8);
    const CollectivePlan f8 = plan(rails, 16, CollectiveKind::AllGather, bytes, DataType::Float8e4m3);
    CHECK(i8.algorithm == CollectiveAlgorithm::Ring);
    CHECK(f8.algorithm == i8.algorithm);
    CHECK(f8.closed_form_s() == i8.closed_form_s());
  }
}

TEST_CASE("the plan cache keeps one plan per datatype") {
  const Topology node = h100_nodes(1);
  ReplayOptions opt;
  opt.link_efficiency = shipped_link_efficiency(node.gpu_model());
  opt.plan_cache = make_plan_cache();
  Op op = collective_op(0, 0, 128 * kMiB, "ar");
  op.reduce_op = ReduceOp::Max;
  op.datatype = DataType::Bfloat16;
  CHECK(cached_plan(opt, node, first(8), op).algorithm == CollectiveAlgorithm::Nvls);
  op.datatype = DataType::Float32;
  CHECK(cached_plan(opt, node, first(8), op).algorithm == CollectiveAlgorithm::Ring);
  op.datatype = DataType::Bfloat16;
  CHECK(cached_plan(opt, node, first(8), op).algorithm == CollectiveAlgorithm::Nvls);
}

TEST_CASE("collective --datatype: whole elements, the type column, fp8 reductions refused below sm_90") {
  const std::string h100 = kSrc + "/topologies/dgx-h100-superpod.yaml --override node.count=1";
  const std::string a100 = kSrc + "/topologies/dgx-a100.yaml";
  SUBCASE("half: 2-byte elements in the count, odd sizes rounded down to whole ones") {
    const Run r = run_cli("collective --op allreduce -t " + h100 + " --sizes 7B:1MiB -f 1024 -d half --fidelity analytic");
    CHECK(r.status == 0);
    CHECK(r.output.find("\n             6            3     half    sum") != std::string::npos);
    CHECK(r.output.find("\n          7168         3584     half    sum") != std::string::npos);
  }
  SUBCASE("a max of bfloat16 runs NVLS, of float the ring") {
    const Run bf = run_cli("collective --op allreduce -t " + h100 + " --sizes 128MiB:128MiB -d bf16 -o max --fidelity analytic");
    CHECK(bf.status == 0);
    CHECK(bf.output.find(" bfloat16    max     -1") != std::string::npos);
    CHECK(bf.output.find("nvls/Simple/16") != std::string::npos);
    const Run fl = run_cli("collective --op allreduce -t " + h100 + " --sizes 128MiB:128MiB -o max --fidelity analytic");
    CHECK(fl.status == 0);
    CHECK(fl.output.find("    float    max     -1") != std::string::npos);
    CHECK(fl.output.find("ring/Simple/8") != std::string::npos);
  }
  SUBCASE("fp8: refused for a reduction on A100, gathered there; noted beyond 8 ranks on H100") {
    const Run no = run_cli("collective --op reducescatter -t " + a100 + " --sizes 1MiB:1MiB -d fp8e4m3");
    CHECK(no.status == 2);
    CHECK(no.output.find("--datatype: expected a type NCCL reduces on a100-sxm4-80gb (compute capability 8.0), "
                         "found f8e4m3") != std::string::npos);
    const Run ag = run_cli("collective --op allgather -t " + a100 + " --sizes 1MiB:1MiB -d fp8e4m3 --fidelity analytic");
    CHECK(ag.status == 0);
    CHECK(ag.output.find("   f8e4m3   none") != std::string::npos);
    const Run two = run_cli("collective --op allreduce -t " + kSrc +
                            "/topologies/dgx-h100-superpod.yaml --override node.count=2 --sizes 1GiB:1GiB -d f8e5m2 "
                            "--fidelity analytic");
    CHECK(two.status == 0);
    CHECK(two.output.find("# note: f8e5m2 reductions over more than 8 ranks: NCCL's tuner weighs the ring's time "
                          "x1024") != std::string::npos);
    CHECK(two.output.find("tree/Simple/8") != std::string::npos);
  }
  SUBCASE("bad names and sizes below one element") {
    const Run bad = run_cli("collective --op allreduce -t " + h100 + " -d fp4");
    CHECK(bad.status == 2);
    CHECK(bad.output.find("--datatype: expected int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                          "bfloat16, f8e4m3 or f8e5m2") != std::string::npos);
    CHECK(bad.output.find("found 'fp4'") != std::string::npos);
    const Run small = run_cli("collective --op allreduce -t " + h100 + " --sizes 4B:4B -d double");
    CHECK(small.status == 2);
    CHECK(small.output.find("--sizes: expected whole numbers of bytes >= 8B (one double, the element counted)") !=
          std::string::npos);
  }
  SUBCASE("--compare: the log's type, one per comparison, a contradicting flag refused") {
    const std::string halves = log_of({"half", "half"});
    const Run r = run_cli("collective -t " + h100 + " --compare " + halves + " --fidelity analytic");
    CHECK(r.status == 0);
    CHECK(r.output.find("# note: half elements, as the log ran them") != std::string::npos);
    CHECK(r.output.find("      1048576       524288     half") != std::string::npos);
    const Run same = run_cli("collective -t " + h100 + " --compare " + halves + " -d fp16 --fidelity analytic");
    CHECK(same.status == 0);
    const Run other = run_cli("collective -t " + h100 + " --compare " + halves + " -d float");
    CHECK(other.status == 2);
    CHECK(other.output.find("--datatype: expected the log's half (" + halves) != std::string::npos);
    // The names nccl-tests prints, as it prints them: "HALF" or "fp16" is none (the reader warns).
    const std::string upper = log_of({"HALF"});
    const Run u = run_cli("collective -t " + h100 + " --compare " + upper);
    CHECK(u.status == 2);
    CHECK(u.output.find("type: expected a type nccl-tests prints (int8, uint8,") != std::string::npos);
    CHECK(u.output.find("found 'HALF'") != std::string::npos);
    const std::string mixed = log_of({"float", "bfloat16"});
    const Run m = run_cli("collective -t " + h100 + " --compare " + mixed);
    CHECK(m.status == 2);
    CHECK(m.output.find(mixed + ":") != std::string::npos);
    CHECK(m.output.find("type: expected one type per comparison, as line ") != std::string::npos);
    CHECK(m.output.find("(float), found bfloat16 (a run of nccl-tests -d all") != std::string::npos);
  }
}
