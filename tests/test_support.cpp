#include "tests/test_support.hpp"

#include "calibrate/profile.hpp"
#include "sim/topology.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace overlapsim::testing {

namespace {

/// The paths temp_path gave this process, removed (files, or folders with what they hold) when it
/// exits: each test case runs in a process of its own under CTest, and thousands of files were
/// left in /tmp by a few runs of the suite.
struct TempPaths {
  std::vector<std::string> paths;
  pid_t owner = ::getpid();  // a forked child that exits normally leaves them to this process
  ~TempPaths() {
    if (::getpid() != owner) return;
    for (const std::string& p : paths) {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);  // gone already, or never created: nothing to do
    }
  }
};

TempPaths& temp_paths() {
  static TempPaths t;
  return t;
}

}  // namespace

std::string temp_path(const char* suffix) {
  char name[] = "/tmp/overlapsim-test-XXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::remove(name);
  const std::string path = std::string(name) + suffix;
  temp_paths().paths.push_back(path);
  return path;
}

std::vector<int> first(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

Op collective_op(int group, int64_t match, double bytes, const char* name, CollectiveAlgorithm algorithm, int stream,
                 CollectiveKind kind) {
  Op op;
  op.type = OpType::Collective;
  op.collective = kind;
  op.group = group;
  op.match = match;
  op.bytes = bytes;
  op.algorithm = algorithm;
  op.stream = static_cast<int16_t>(stream);
  op.name = name;
  return op;
}

std::pair<Op, Op> send_recv_ops(int src, int dst, double bytes, int64_t match) {
  Op send;
  send.type = OpType::Send;
  send.peer = dst;
  send.bytes = bytes;
  send.match = match;
  send.name = "send";
  Op recv = send;
  recv.type = OpType::Recv;
  recv.peer = src;
  recv.name = "recv";
  return {send, recv};
}

double makespan_beside_rail_send(const Topology& topo, CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes,
                                 Fidelity f, bool with_send) {
  Schedule s;
  s.world_size = 16;
  const int g = s.intern_group(first(16), CommPurpose::DataParallel);
  for (int r = 0; r < 16; ++r) s.programs.push_back({r, 2, {collective_op(g, 1, bytes, "coll", algorithm, 0, kind)}});
  if (with_send) {
    auto [send, recv] = send_recv_ops(0, 8, 4 * bytes, 1);
    send.stream = 1;
    recv.stream = 1;
    s.programs[0].ops.push_back(send);
    s.programs[8].ops.push_back(recv);
  }
  ReplayOptions ro;
  ro.fidelity = f;
  ro.collectives.collnet_enable = true;
  return replay(s, topo, ro).makespan_s;
}

RankFlowBytes flow_bytes_per_rank(const Topology& topo, CollectiveKind kind, CollectiveAlgorithm algorithm,
                                  double bytes, bool collnet_enable) {
  Schedule s;
  s.world_size = 16;
  const int g = s.intern_group(first(16), CommPurpose::DataParallel);
  for (int r = 0; r < 16; ++r) s.programs.push_back({r, 1, {collective_op(g, 1, bytes, "coll", algorithm, 0, kind)}});
  ReplayOptions ro;
  ro.record_flows = true;
  ro.collectives.collnet_enable = collnet_enable;
  const ReplayTimes t = replay(s, topo, ro);
  RankFlowBytes b{std::vector<double>(16, 0.0), std::vector<double>(16, 0.0), std::vector<double>(16, 0.0),
                  std::vector<double>(16, 0.0)};
  for (const FlowRecord& f : t.flows) {
    const bool intra = topo.node_of(f.src_rank) == topo.node_of(f.dst_rank);
    (intra ? b.intra_in : b.inter_in)[f.dst_rank] += f.bytes;
    (intra ? b.intra_out : b.inter_out)[f.src_rank] += f.bytes;
  }
  return b;
}

Topology h100_nodes(int nodes, const TopologyOverrides& more) {
  TopologyOverrides ov = more;
  ov["node.count"] = std::to_string(nodes);
  return load_topology(std::string(OVERLAPSIM_SOURCE_DIR) + "/topologies/dgx-h100-superpod.yaml", ov);
}

CollectiveOptions collnet_on(CollectiveAlgorithm alg) {
  CollectiveOptions o;
  o.collnet_enable = true;
  o.algorithm = alg;
  return o;
}

std::string h100_2x8_allreduce_log(const std::string& info) {
  std::string log = "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 64(factor) warmup iters: 5 "
                    "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < 16; ++r)
    log += "#  Rank " + std::to_string(r) + " Group  0 Pid  " + std::to_string(70110 + r) + " on dgx-h100-0" +
           std::to_string(1 + r / 8) + " device  " + std::to_string(r % 8) + " [0x18] NVIDIA H100 80GB HBM3\n";
  return log + info +
         "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
         "busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
         "(GB/s)       \n"
         "     1048576        262144     float     sum      -1   100.00   10.49   19.66      0   100.00   10.49   "
         "19.66      0\n"
         "    67108864      16777216     float     sum      -1   400.00  167.77  314.57      0   400.00  167.77  "
         "314.57      0\n"
         "# Out of bounds values : 0 OK\n"
         "# Avg bus bandwidth    : 167.115\n";
}

NcclTunerInputs dgx_h100_8_nodes_tuner_inputs() {
  NcclTunerInputs in;
  in.ranks = 64;
  in.nodes = 8;
  in.cc_index = 2;
  in.graph_channels = 8;
  in.graph_busbw_Bps = 8 * 48e9;
  in.comm_channels = 16;
  return in;
}

LinkEfficiency shipped_link_efficiency(const std::string& gpu_model) {
  return LinkEfficiency::of_profile(load_profile(default_profile_path(gpu_model)));
}

FlowAnalytic flow_and_analytic(const Topology& topo, BenchOp op, int ranks, double size, BenchOptions b) {
  FlowAnalytic r;
  b.replay.fidelity = Fidelity::Flow;
  r.flow = run_collective_bench(topo, op, ranks, {size}, b).at(0).time_s;
  b.replay.fidelity = Fidelity::Analytic;
  r.analytic = run_collective_bench(topo, op, ranks, {size}, b).at(0).time_s;
  return r;
}

BenchOptions forced_protocol(const ProtocolCase& c) {
  BenchOptions b;
  b.replay.collectives.protocol_auto = false;
  b.replay.collectives.protocol = c.protocol;
  return b;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Run run_cli(const std::string& args) {
  const std::string out = temp_path(".out");
  const std::string cmd = std::string(OVERLAPSIM_BINARY) + " " + args + " > " + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string text = slurp(out);
  std::remove(out.c_str());
  return Run{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text};
}

std::string small_h100_scenario(const std::string& nccl) {
  const std::string path = temp_path(".yaml");
  std::ofstream out(path);
  out << "name: small-h100\n"
         "model: {name: tiny-gpt, layers: 2, hidden: 4096, heads: 32, ffn_hidden: 16384, seq_len: 2048, vocab: "
         "32768, dtype: bf16}\n"
         "topology: " << OVERLAPSIM_SOURCE_DIR << "/topologies/dgx-h100-superpod.yaml\n"
         "topology_overrides: {node.count: 4}\n"
         "parallelism: {tp: 8, pp: 1, dp: 4, sp: false, micro_batch: 1, global_batch: 8, recompute: none, "
         "zero_stage: 1}\n"
         "strategies: [megatron]\n"
         "fidelity: analytic\n"
      << nccl;
  return path;
}

}  // namespace overlapsim::testing
