// Point-to-point messages on NCCL's p2p channels (sim/nccl_tuning.hpp nccl_p2p_channels,
// sim/collective_plan.hpp p2p_rate_cap_Bps): the channel counts NCCL 2.18.5's chunking gives,
// run by hand; the bound only inside a node over NVLink, for SM copies, where the profile has it;
// a SendRecv's closed form exactly; flow = analytic for SendRecv and AllToAll; the shipped values
// survive a write and a read.
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_bench.hpp"
#include "sim/collective_plan.hpp"
#include "sim/error.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include "tests/test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace overlapsim;
using namespace overlapsim::testing;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kA100Channel = 12.85e9;  ///< the shipped A100 profile's p2p_channel_nvlink_Bps

CollectiveOptions a100_options() {
  CollectiveOptions o;
  o.read_profile(load_profile(default_profile_path("a100-sxm4-80gb")));
  return o;
}

/// The replay on A100s as `overlapsim run` sets it: the shipped profile's links and collectives,
/// SM interference on (108 SMs, the factor 1).
ReplayOptions a100_replay_with_sms(Fidelity f) {
  ReplayOptions ro;
  ro.fidelity = f;
  ro.link_efficiency = shipped_link_efficiency("a100-sxm4-80gb");
  ro.collectives = a100_options();
  ro.sm_count = 108;
  return ro;
}

BenchOptions a100_bench(Fidelity f) {
  BenchOptions b;
  b.replay.link_efficiency = shipped_link_efficiency("a100-sxm4-80gb");
  b.replay.collectives = a100_options();
  b.replay.fidelity = f;
  return b;
}

/// The error load_profile gives for the shipped profile of `gpu` with `key`'s entry `good` (its
/// whole "key": value text, REQUIRED present) replaced by "key": bad, and that file's path ("" if
/// it loads).
std::pair<std::string, std::string> profile_error(const std::string& gpu, const std::string& key,
                                                  const std::string& good, const std::string& bad) {
  std::ifstream in(default_profile_path(gpu));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(good);
  REQUIRE(at != std::string::npos);
  text.replace(at, good.size(), "\"" + key + "\": " + bad);
  const std::string path = temp_path(".json");
  std::ofstream(path) << text;
  try {
    load_profile(path);
  } catch (const InputError& e) {
    return {path, e.what()};
  }
  return {path, ""};
}

}  // namespace

TEST_CASE("NCCL's p2p split of a message, run by hand") {
  // One DGX A100, 8 ranks: 24 channels (32 p2p channels), 24 per peer (12 NVLinks, rounded up to
  // 32); nMin 4 (4 · 8 <= 32), nMax 16 (16 · 8 <= 128); chunks of 64 KiB .. 16 MiB.
  auto a100 = [](double bytes) { return nccl_p2p_split(bytes, 8, true, 24, 24, 512 * kKiB); };
  CHECK(a100(0).channels == 1);
  CHECK(a100(64 * kKiB).channels == 1);       // one minimum chunk
  CHECK(a100(64 * kKiB + 4).channels == 2);   // 64 KiB and 4 B: the largest chunk is still 64 KiB
  CHECK(a100(64 * kKiB + 4).chunk_bytes == 64 * kKiB);
  CHECK(a100(1 * kMiB).channels == 4);        // 256 KiB on each of nMin
  CHECK(a100(1 * kMiB).chunk_bytes == 256 * kKiB);
  CHECK(a100(64 * kMiB).channels == 4);       // 16 MiB each: not above the 16 MiB bound
  CHECK(a100(64 * kMiB + 1).channels == 8);   // doubled once
  CHECK(a100(128 * kMiB).channels == 8);
  CHECK(a100(256 * kMiB).channels == 16);
  CHECK(a100(1024 * kMiB).channels == 16);    // nMax: chunks of 64 MiB
  CHECK(a100(1024 * kMiB).chunk_bytes == 64 * kMiB);
  CHECK(a100(1000).chunk_bytes == 1000);      // a message smaller than one chunk
  // Two ranks: nMin 16 (16 · 2 <= 32). 4 B more than 1 MiB rounds each chunk up to 128 KiB,
  // 9 of them: NCCL's alignUp to step / 8.
  CHECK(nccl_p2p_split(1 * kMiB, 2, true, 24, 24, 512 * kKiB).channels == 16);
  CHECK(nccl_p2p_split(1 * kMiB + 4, 2, true, 24, 24, 512 * kKiB).channels == 9);
  CHECK(nccl_p2p_split(1 * kMiB + 4, 2, true, 24, 24, 512 * kKiB).chunk_bytes == 128 * kKiB);
  CHECK(nccl_p2p_split(16 * kKiB, 2, true, 24, 24, 512 * kKiB).channels == 1);
  // Across nodes: 2 channels per network peer, chunks up to 128 KiB, no doubling.
  CHECK(nccl_p2p_split(16 * kKiB, 16, false, 16, 2, 128 * kKiB).channels == 1);
  CHECK(nccl_p2p_split(64 * kMiB, 16, false, 16, 2, 128 * kKiB).channels == 2);
  CHECK(nccl_p2p_split(64 * kMiB, 16, false, 16, 2, 128 * kKiB).chunk_bytes == 32 * kMiB);
  // An H800 (8 NVLinks): 16 channels, 16 per peer (NVIDIA/nccl#892); over 8 ranks nMin 2.
  CHECK(nccl_p2p_split(1 * kMiB, 8, true, 16, 16, 512 * kKiB).channels == 2);
  // One channel (NCCL_MAX_NCHANNELS=1): one chunk per message at any size.
  CHECK(nccl_p2p_split(1024 * kMiB, 8, true, 1, 24, 512 * kKiB).channels == 1);
}

TEST_CASE("the topology's pairs: their stated channels, else NCCL's ring search over the port") {
  const Topology a100 = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  CHECK(p2p_split(a100, 0, 1, 128 * kMiB, {8, 0, 0}).channels == 8);
  CHECK(p2p_split(a100, 0, 1, 256 * kMiB, {8, 0, 0}).channels == 16);
  CHECK(p2p_split(a100, 0, 1, 256 * kMiB, {8, 0, 1}).channels == 1);  // --channels 1
  // The DGX H100 node without its stated 32 channels: 2 · min(16, 18 links) = 32 all the same.
  std::ifstream in(kSrc + "/topologies/dgx-h100-superpod.yaml");
  std::string text, line;
  while (std::getline(in, line))
    if (line.find("nccl_channels") == std::string::npos && line.rfind("                    #", 0) != 0) text += line + "\n";
  const std::string path = temp_path(".yaml");
  std::ofstream(path) << text;
  for (const std::string& file : {kSrc + "/topologies/dgx-h100-superpod.yaml", path}) {
    CAPTURE(file);
    const Topology h100 = load_topology(file, {{"node.count", "1"}});
    CHECK(h100.nccl_channels(1) == (file == path ? 0 : 32));
    CHECK(p2p_split(h100, 0, 1, 32 * kMiB, {8, 0, 0}).channels == 4);
    CHECK(p2p_split(h100, 0, 1, 128 * kMiB, {8, 0, 0}).channels == 8);
    CHECK(p2p_split(h100, 0, 1, 256 * kMiB, {8, 0, 0}).channels == 16);
    CHECK(p2p_split(h100, 0, 7, 1 * kMiB, {}).channels == 16);  // a pair's own communicator
  }
  // A communicator over 16 DGX A100 nodes: 2 channels per peer and 128 KiB network chunks for
  // its members inside a node too.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "16"}});
  const NcclP2pSplit across = p2p_split(pod, 0, 1, 1024 * kMiB, {128, 16, 0});
  CHECK(across.channels == 2);
  CHECK(across.chunk_bytes == 512 * kMiB);
  // NVLink pairs beside PCIe (a6000-8gpu-nvlink-pairs): 2 channels per peer (the PCIe peers'),
  // the 128 KiB PCIe chunk (not every pair is NVLink): nMax 2, so 64 MiB runs as 2 chunks of
  // 32 MiB, past the 4 MiB (32 steps) NCCL would rather not exceed.
  const Topology pairs = load_topology(kSrc + "/topologies/a6000-8gpu-nvlink-pairs.yaml");
  const NcclP2pSplit p = p2p_split(pairs, 0, 1, 64 * kMiB, {8, 0, 0});
  CHECK(p.channels == 2);
  CHECK(p.chunk_bytes == 32 * kMiB);
}

TEST_CASE("the p2p bound applies inside a node over NVLink, to SM copies, where the profile has it") {
  const double inf = std::numeric_limits<double>::infinity();
  const CollectiveOptions o = a100_options();
  REQUIRE(o.p2p_channel_nvlink_Bps == kA100Channel);
  const Topology one = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const P2pCommunicator eight{8, 0, 0};
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 128 * kMiB, false, eight, o) == testing::approx(8 * kA100Channel).epsilon(1e-12));
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 1 * kMiB, false, {}, o) == testing::approx(16 * kA100Channel).epsilon(1e-12));
  // 64 KiB + 4 B: two chunks, the larger 64 KiB: it takes 64 KiB's time.
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 64 * kKiB + 4, false, eight, o) ==
        testing::approx(kA100Channel * (64 * kKiB + 4) / (64 * kKiB)).epsilon(1e-12));
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 128 * kMiB, true, eight, o) == inf);  // copy engine
  CHECK(p2p_rate_cap_Bps(one, 0, 0, 128 * kMiB, false, eight, o) == inf);
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 0, false, eight, o) == inf);
  CollectiveOptions textbook = o;
  textbook.textbook = true;
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 128 * kMiB, false, eight, textbook) == inf);
  CollectiveOptions none = o;
  none.p2p_channel_nvlink_Bps = 0;
  CHECK(p2p_rate_cap_Bps(one, 0, 1, 128 * kMiB, false, eight, none) == inf);
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(p2p_rate_cap_Bps(pod, 0, 8, 128 * kMiB, false, eight, o) == inf);  // across nodes: the NIC
  CHECK(p2p_rate_cap_Bps(pod, 0, 1, 128 * kMiB, false, eight, o) == testing::approx(8 * kA100Channel).epsilon(1e-12));
}

TEST_CASE("a SendRecv on NCCL's p2p channels: its closed form exactly, flow = analytic") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const std::vector<double> sizes = {1 * kMiB, 64 * kMiB, 128 * kMiB, 256 * kMiB, 1024 * kMiB};
  const std::vector<BenchRow> analytic = run_collective_bench(topo, BenchOp::SendRecv, 8, sizes, a100_bench(Fidelity::Analytic));
  const std::vector<BenchRow> flow = run_collective_bench(topo, BenchOp::SendRecv, 8, sizes, a100_bench(Fidelity::Flow));
  BenchOptions free = a100_bench(Fidelity::Analytic);
  free.replay.collectives.p2p_channel_nvlink_Bps = 0;
  const std::vector<BenchRow> unbound = run_collective_bench(topo, BenchOp::SendRecv, 8, sizes, free);
  const double extra = p2p_extra_latency_s(topo, 0, 1, 1 * kMiB, false, 0);
  double route = 0;
  for (const Hop& h : topo.route(0, 1)) route += topo.link(h.link_id).latency_s;
  for (size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(sizes[i]);
    const NcclP2pSplit split = p2p_split(topo, 0, 1, sizes[i], {8, 0, 0});
    // Every size here is bound by its channels (at most 16 · 12.85 = 206 GB/s < the 240 GB/s
    // port): it takes its largest chunk at one channel's rate.
    CHECK(analytic[i].time_s == testing::approx(extra + route + split.chunk_bytes / kA100Channel).epsilon(1e-9));
    CHECK(flow[i].time_s == testing::approx(analytic[i].time_s).epsilon(1e-9));
    CHECK(unbound[i].time_s < analytic[i].time_s);  // the check can fail
  }
  // 64 and 128 MiB take the same time: twice the bytes on twice the channels.
  CHECK(analytic[1].time_s == testing::approx(analytic[2].time_s).epsilon(1e-6));
}

TEST_CASE("a SendRecv over 16 DGX A100 nodes: the NICs bound it, not the members' channels inside a node") {
  // 128 ranks: NCCL's communicator spans nodes, so a message inside a node runs on 2 channels of
  // 512 MiB chunks at 1 GiB (25.7 GB/s), above the HDR NIC the ring's node-crossing pairs use
  // (regression: the one-node halving over 128 ranks left 1 channel, 12.85 GB/s, below the NIC).
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "16"}});
  BenchOptions with = a100_bench(Fidelity::Analytic), without = with;
  without.replay.collectives.p2p_channel_nvlink_Bps = 0;
  const double gib = 1024 * kMiB;
  const std::vector<BenchRow> a = run_collective_bench(pod, BenchOp::SendRecv, 128, {gib}, with);
  const std::vector<BenchRow> b = run_collective_bench(pod, BenchOp::SendRecv, 128, {gib}, without);
  CHECK(a[0].time_s == testing::approx(b[0].time_s).epsilon(1e-12));
  CHECK(a[0].busbw_Bps < 25e9);  // one HDR NIC
}

TEST_CASE("--channels bounds a SendRecv's channels as NCCL_MAX_NCHANNELS does") {
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  BenchOptions one = a100_bench(Fidelity::Analytic);
  one.channels = 1;
  const std::vector<BenchRow> r = run_collective_bench(topo, BenchOp::SendRecv, 8, {1024 * kMiB}, one);
  CHECK(r[0].busbw_Bps == testing::approx(kA100Channel).epsilon(0.01));
}

TEST_CASE("an AllToAll whose pieces are bound by their channels: flow = analytic") {
  // 8 A100s, 512 KiB and 1 MiB per rank: pieces of 64 and 128 KiB on 1 and 2 channels (12.85 and
  // 25.7 GB/s), slower than 7 pieces sharing a 240 GB/s port.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const std::vector<double> sizes = {512 * kKiB, 1 * kMiB, 1024 * kMiB};
  BenchOptions af = a100_bench(Fidelity::Analytic), ff = a100_bench(Fidelity::Flow), free = af;
  af.unfold = ff.unfold = true;
  free.replay.collectives.p2p_channel_nvlink_Bps = 0;
  const std::vector<BenchRow> analytic = run_collective_bench(topo, BenchOp::AllToAll, 8, sizes, af);
  const std::vector<BenchRow> flow = run_collective_bench(topo, BenchOp::AllToAll, 8, sizes, ff);
  const std::vector<BenchRow> unbound = run_collective_bench(topo, BenchOp::AllToAll, 8, sizes, free);
  for (size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(sizes[i]);
    CHECK(flow[i].time_s == testing::approx(analytic[i].time_s).epsilon(1e-6));
    const double piece = sizes[i] / 8;
    CHECK(analytic[i].time_s >= p2p_split(topo, 0, 1, piece, {8, 1, 0}).chunk_bytes / kA100Channel);
  }
  CHECK(unbound[0].time_s < analytic[0].time_s);
  CHECK(unbound[1].time_s < analytic[1].time_s);
  CHECK(unbound[2].time_s == testing::approx(analytic[2].time_s).epsilon(1e-9));  // the port binds at 1 GiB
}

TEST_CASE("an AllToAll's pieces share their kernel's channels: with --channels 1 a member's 7 pieces on one channel") {
  // 8 A100s, 1 GiB: pieces of 128 MiB. With NCCL_MAX_NCHANNELS=1 the kernel has one block, which
  // copies all 7 of a member's NVLink pieces at one channel's rate (regression: each piece was
  // capped alone, as if on a channel of its own: 10.46 ms against 73.1 ms). With 2 channels
  // twice that rate; with the default 32 the port binds, as before.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  const double S = 1024 * kMiB, piece = S / 8;
  std::vector<double> times;
  for (int channels : {1, 2}) {
    CAPTURE(channels);
    BenchOptions af = a100_bench(Fidelity::Analytic), ff = a100_bench(Fidelity::Flow);
    af.channels = ff.channels = channels;
    af.unfold = ff.unfold = true;
    const BenchRow a = run_collective_bench(topo, BenchOp::AllToAll, 8, {S}, af).at(0);
    const BenchRow f = run_collective_bench(topo, BenchOp::AllToAll, 8, {S}, ff).at(0);
    CHECK(a.plan == fmt::format("p2p/{}", channels));
    CHECK(f.time_s == testing::approx(a.time_s).epsilon(1e-6));
    // The bound, and no more than the latency (microseconds) above it.
    const double bound = 7 * piece / (channels * kA100Channel);
    CHECK(a.time_s >= bound);
    CHECK(a.time_s <= bound + 100e-6);
    times.push_back(a.time_s);
  }
  CHECK(times[0] == testing::approx(2 * times[1]).epsilon(1e-3));
}

TEST_CASE("an AllToAll across nodes, every rank simulated: flow == analytic, one channel or NCCL's") {
  // Regression: unfolded, the members ended with their last piece, before the closed form where
  // a piece of less latency started early on the busiest link (2 DGX H100 nodes, 1 MiB, one
  // channel: 106.11 us against 107.80 us folded and analytic).
  const Topology topo = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "2"}});
  for (int channels : {1, 0}) {
    for (bool unfold : {true, false}) {
      CAPTURE(channels);
      CAPTURE(unfold);
      BenchOptions f, a;
      f.channels = a.channels = channels;
      f.unfold = a.unfold = unfold;
      a.replay.fidelity = Fidelity::Analytic;
      const std::vector<double> sizes = {1 * kMiB, 1024 * kMiB};
      const std::vector<BenchRow> fr = run_collective_bench(topo, BenchOp::AllToAll, 16, sizes, f);
      const std::vector<BenchRow> ar = run_collective_bench(topo, BenchOp::AllToAll, 16, sizes, a);
      for (size_t i = 0; i < sizes.size(); ++i) CHECK(fr[i].time_s == testing::approx(ar[i].time_s).epsilon(1e-9));
    }
  }
}

TEST_CASE("shipped profiles: A100 and H100 (and H200, H100's) have the fitted p2p channel rate, it survives a write and a read") {
  const Profile a100 = load_profile(default_profile_path("a100-sxm4-80gb"));
  CHECK(a100.p2p_channel_nvlink_Bps == kA100Channel);
  CHECK(load_profile(default_profile_path("h100-sxm5-80gb")).p2p_channel_nvlink_Bps == 21.7e9);
  CHECK(load_profile(default_profile_path("h200-sxm-141gb")).p2p_channel_nvlink_Bps == 21.7e9);  // H100's NVLink 4
  const std::string path = temp_path(".json");
  write_profile(a100, path);
  CHECK(load_profile(path).p2p_channel_nvlink_Bps == kA100Channel);
}

TEST_CASE("a bad network.p2p_channel_nvlink_Bps is an error naming the file, the key and the range") {
  // GB/s written for bytes/s, a value that would never end, zero, a string, null.
  for (const char* bad : {"12.85", "1e-300", "0", "-1", "\"abc\"", "null", "1e300"}) {
    CAPTURE(bad);
    const auto [path, msg] =
        profile_error("a100-sxm4-80gb", "p2p_channel_nvlink_Bps", "\"p2p_channel_nvlink_Bps\": 12.85e9", bad);
    CHECK(msg.find(path + ": network.p2p_channel_nvlink_Bps: expected") != std::string::npos);
  }
}

TEST_CASE("an AllToAll pays NCCL's p2p rounds: n times network.p2p_round_s, in both fidelities, not on the copy engine") {
  // H100: 4.0 us per round (calibrate/profiles/h100-sxm5-80gb.json), one round per rank of the
  // communicator (collective_plan.hpp, AllToAll as measured): 8 ranks 32 us, 16 ranks 64 us.
  const Profile h100 = load_profile(default_profile_path("h100-sxm5-80gb"));
  REQUIRE(h100.p2p_round_s == 4.0e-6);
  for (const int nodes : {1, 2}) {
    CAPTURE(nodes);
    const Topology topo =
        load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", std::to_string(nodes)}});
    const int n = 8 * nodes;
    BenchOptions analytic;
    analytic.replay.fidelity = Fidelity::Analytic;
    analytic.replay.link_efficiency = LinkEfficiency::of_profile(h100);
    analytic.replay.collectives.read_profile(h100);
    BenchOptions flow = analytic, without = analytic;
    flow.replay.fidelity = Fidelity::Flow;
    without.replay.collectives.p2p_round_s = 0;
    const std::vector<double> sizes = {8, 1 * kMiB, 64 * kMiB};
    const auto a = run_collective_bench(topo, BenchOp::AllToAll, n, sizes, analytic);
    const auto f = run_collective_bench(topo, BenchOp::AllToAll, n, sizes, flow);
    const auto w = run_collective_bench(topo, BenchOp::AllToAll, n, sizes, without);
    for (size_t i = 0; i < sizes.size(); ++i) {
      CAPTURE(sizes[i]);
      CHECK(a[i].time_s == testing::approx(w[i].time_s + n * 4.0e-6).epsilon(1e-12));
      if (nodes == 1) {
        CHECK(f[i].time_s == testing::approx(a[i].time_s).epsilon(1e-9));
      } else {
        // Across nodes the closed form adds the farthest route's latency (leaf, spine, leaf) to the
        // busiest link's time, where in flow the piece that ends last may take a shorter route:
        // analytic is above flow by at most two switch latencies (2 x 130 ns; 0.26 us at 1 and 64 MiB
        // when written), and below it by no more than rounding (8 B: 64 ps, 8.7e-7 of the time).
        INFO("analytic - flow " << (a[i].time_s - f[i].time_s) << " s");
        CHECK(a[i].time_s >= f[i].time_s * (1 - 1e-6));
        CHECK(a[i].time_s - f[i].time_s <= 2 * 130e-9 + 1e-12);
      }
    }
  }
  // A copy-engine AllToAll is no NCCL kernel: it pays no rounds.
  const Topology node = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}});
  Schedule s;
  s.world_size = 8;
  const int g = s.intern_group(first(8), CommPurpose::TensorParallel);
  for (int r = 0; r < 8; ++r) {
    Op op = collective_op(g, 1, 64 * kMiB, "a2a", CollectiveAlgorithm::Auto, 0, CollectiveKind::AllToAll);
    op.num_sm = 0;
    s.programs.push_back({r, 1, {op}});
  }
  ReplayOptions with, none;
  with.fidelity = none.fidelity = Fidelity::Analytic;
  with.collectives.p2p_round_s = 4.0e-6;
  CHECK(replay(s, node, with).makespan_s == replay(s, node, none).makespan_s);
}

TEST_CASE("network.p2p_round_s: H100 and H200 have it, A100 none, it survives a write and a read, bad values name the key") {
  const Profile h100 = load_profile(default_profile_path("h100-sxm5-80gb"));
  CHECK(load_profile(default_profile_path("h200-sxm-141gb")).p2p_round_s == 4.0e-6);  // H100's fit
  CHECK(load_profile(default_profile_path("a100-sxm4-80gb")).p2p_round_s == 0);
  const std::string out = temp_path(".json");
  write_profile(h100, out);
  CHECK(load_profile(out).p2p_round_s == 4.0e-6);
  // Microseconds written for seconds, negative, a string, null.
  for (const char* bad : {"4.0", "-1e-6", "\"4us\"", "null"}) {
    CAPTURE(bad);
    const auto [path, msg] = profile_error("h100-sxm5-80gb", "p2p_round_s", "\"p2p_round_s\": 4.0e-06", bad);
    CHECK(msg.find(path + ": network.p2p_round_s: expected seconds per round of NCCL's p2p schedule, 0 to 1e-3") !=
          std::string::npos);
  }
}

// ---- SMs of NCCL's point-to-point kernels ----------------------------------------------------

TEST_CASE("NCCL's all-to-all kernel: its channels (thread blocks), run by hand") {
  // One node of 8 ranks, P = 32: bases 0..7 mirror to 0, 16, 8, 24, 4, 20, 12, 28.
  CHECK(nccl_alltoall_kernel_channels(8, 1, 32, 1) == 8);
  CHECK(nccl_alltoall_kernel_channels(8, 1, 32, 2) == 16);
  CHECK(nccl_alltoall_kernel_channels(8, 1, 32, 4) == 32);
  CHECK(nccl_alltoall_kernel_channels(8, 1, 32, 8) == 32);  // parts overlap the next base's
  // 4 ranks: bases 0..3 → 0, 16, 8, 24; 2 parts each → 8 channels.
  CHECK(nccl_alltoall_kernel_channels(4, 1, 32, 2) == 8);
  // Across nodes, base = node distance + local step / 8: 2 nodes of 8 → bases 0, 1 → channels
  // {0, 1} and {16, 17}; 16 nodes over P = 16 → every channel.
  CHECK(nccl_alltoall_kernel_channels(8, 2, 32, 2) == 4);
  CHECK(nccl_alltoall_kernel_channels(8, 16, 16, 2) == 16);
  CHECK(nccl_alltoall_kernel_channels(16, 2, 32, 1) == 3);  // bases 0, 1, 2 (step 8..15 → +1)
  CHECK(nccl_alltoall_kernel_channels(1, 1, 1, 1) == 1);
  CHECK(p2p_split(load_topology(kSrc + "/topologies/dgx-a100.yaml"), 0, 1, kMiB, {8, 1, 0}).p2p_channels == 32);
  // A message's base across 2 nodes of 8: node distance + local step / 8.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(nccl_p2p_base(pod, first(16), 0, 8, true) == 1);
  CHECK(nccl_p2p_base(pod, first(16), 0, 9, true) == 1);
  CHECK(nccl_p2p_base(pod, first(16), 0, 1, true) == 0);
  CHECK(nccl_p2p_base(pod, first(16), 9, 0, false) == 1);
}

namespace {

/// One DGX A100: rank 0 runs a 0.1 ms kernel (stream 0) beside point-to-point ops, its peers the
/// matching ones; SM interference on (108 SMs, the factor 1).
struct P2pSmCase {
  Schedule s;
  int64_t next_match = 1;
  P2pSmCase() {
    s.world_size = 8;
    for (int r = 0; r < 8; ++r) s.programs.push_back(RankProgram{r, 4, {}});
    Op k;
    k.type = OpType::Compute;
    k.duration_s = 1e-4;
    k.name = "gemm";
    s.programs[0].ops.push_back(k);
  }
  /// A message of `bytes` from `src` to `dst` on `stream`, SMs `num_sm` (−1: NCCL's), on group
  /// `group`'s communicator (−1: the pair's).
  void message(int src, int dst, double bytes, int stream, int16_t num_sm = -1, int group = -1) {
    auto [send, recv] = send_recv_ops(src, dst, bytes, next_match++);
    for (Op* op : {&send, &recv}) {
      op->group = group;
      op->stream = static_cast<int16_t>(stream);
      op->num_sm = num_sm;
    }
    s.programs[src].ops.push_back(send);
    s.programs[dst].ops.push_back(recv);
  }
  /// The kernel's end, seconds, in `f`; REQUIRES it to end before every message.
  double kernel_end(Fidelity f) const {
    const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
    const ReplayTimes t = replay(s, topo, a100_replay_with_sms(f));
    for (size_t i = 1; i < s.programs[0].ops.size(); ++i) REQUIRE(t.end_s[0][i] > 1.5e-4);
    return t.end_s[0][0];
  }
};

}  // namespace

TEST_CASE("a Send/Recv's kernel holds one SM per p2p channel of its message, one peer's ops share a kernel") {
  // 64 MiB between two GPUs of a node on a two-rank communicator: 16 channels (nccl_p2p_split),
  // ~330 us at 16 · 12.85 GB/s, long after the 0.1 ms kernel.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  REQUIRE(p2p_split(topo, 0, 1, 64 * kMiB, {}).channels == 16);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Analytic}) {
    CAPTURE(static_cast<int>(f));
    SUBCASE("a send: 16 SMs") {
      P2pSmCase c;
      c.message(0, 1, 64 * kMiB, 1);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 92).epsilon(1e-9));
    }
    SUBCASE("a receive: 16 SMs") {
      P2pSmCase c;
      c.message(1, 0, 64 * kMiB, 1);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 92).epsilon(1e-9));
    }
    SUBCASE("a send and a receive with one peer: one kernel, 16 SMs") {
      P2pSmCase c;
      c.message(0, 1, 64 * kMiB, 1);
      c.message(1, 0, 64 * kMiB, 2);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 92).epsilon(1e-9));
    }
    SUBCASE("sends to two peers: two kernels, 32 SMs") {
      P2pSmCase c;
      c.message(0, 1, 64 * kMiB, 1);
      c.message(0, 2, 64 * kMiB, 2);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 76).epsilon(1e-9));
    }
    SUBCASE("a larger message on more channels: 1 GiB on 32") {
      REQUIRE(p2p_split(topo, 0, 1, 1024 * kMiB, {}).channels == 32);
      P2pSmCase c;
      c.message(0, 1, 1024 * kMiB, 1);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 76).epsilon(1e-9));
    }
    SUBCASE("on the 8-rank group's communicator: 4 channels, and a ring step's send and receive share them") {
      // nccl_p2p_split over 8 ranks: 64 MiB on 4 channels of 16 MiB (p2p/4 in sendrecv_perf).
      REQUIRE(p2p_split(topo, 0, 1, 64 * kMiB, {8, 1, 0}).channels == 4);
      P2pSmCase c;
      const int g = c.s.intern_group(first(8), CommPurpose::TensorParallel);
      c.message(0, 1, 64 * kMiB, 1, -1, g);
      c.message(7, 0, 64 * kMiB, 2, -1, g);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 104).epsilon(1e-9));
      // Both directions (a bidirectional ring step): bases 1 and 7, 8 channels.
      CHECK(nccl_p2p_base(topo, first(8), 0, 1, true) == 1);
      CHECK(nccl_p2p_base(topo, first(8), 0, 7, false) == 1);
      CHECK(nccl_p2p_base(topo, first(8), 0, 7, true) == 7);
      CHECK(nccl_p2p_base(topo, first(8), 0, 1, false) == 7);
      P2pSmCase b;
      const int gb = b.s.intern_group(first(8), CommPurpose::TensorParallel);
      b.message(0, 1, 64 * kMiB, 1, -1, gb);
      b.message(7, 0, 64 * kMiB, 2, -1, gb);
      b.message(0, 7, 64 * kMiB, 3, -1, gb);
      b.message(1, 0, 64 * kMiB, 3, -1, gb);
      CHECK(b.kernel_end(f) == testing::approx(1e-4 * 108 / 100).epsilon(1e-9));
    }
    SUBCASE("the op's own num_sm: 1 SM, or a copy engine's none") {
      P2pSmCase c;
      c.message(0, 1, 64 * kMiB, 1, 1);
      CHECK(c.kernel_end(f) == testing::approx(1e-4 * 108 / 107).epsilon(1e-9));
      P2pSmCase ce;
      ce.message(0, 1, 64 * kMiB, 1, 0);
      CHECK(ce.kernel_end(f) == testing::approx(1e-4).epsilon(1e-12));
    }
  }
}

TEST_CASE("an AllToAll's kernel holds its channels' SMs: 8 for one-channel pieces, 32 from four") {
  // 8 A100s: 256 MiB per rank gives 32 MiB pieces on 4 channels each (nccl_p2p_split over the
  // 8-rank communicator), 32 distinct channels; 512 KiB gives 64 KiB pieces on 1 channel, 8.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-a100.yaml");
  REQUIRE(p2p_split(topo, 0, 1, 32 * kMiB, {8, 1, 0}).channels == 4);
  REQUIRE(p2p_split(topo, 0, 1, 64 * kKiB, {8, 1, 0}).channels == 1);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Analytic})
    for (const auto& [bytes, sms, kernel_s] : {std::tuple{256 * kMiB, 32, 1e-4}, std::tuple{512 * kKiB, 8, 2e-6}}) {
      CAPTURE(static_cast<int>(f));
      CAPTURE(bytes);
      Schedule s;
      s.world_size = 8;
      const int g = s.intern_group(first(8), CommPurpose::TensorParallel);
      for (int r = 0; r < 8; ++r) {
        RankProgram p{r, 2, {}};
        Op k;
        k.type = OpType::Compute;
        k.duration_s = kernel_s;
        k.name = "gemm";
        p.ops = {k, collective_op(g, 1, bytes, "a2a", CollectiveAlgorithm::Auto, 1, CollectiveKind::AllToAll)};
        s.programs.push_back(p);
      }
      const ReplayTimes t = replay(s, topo, a100_replay_with_sms(f));
      REQUIRE(t.end_s[0][1] > t.end_s[0][0]);
      CHECK(t.end_s[0][0] == testing::approx(kernel_s * 108 / (108 - sms)).epsilon(1e-9));
    }
}

TEST_CASE("overlapsim collective names a point-to-point row's kernel channels") {
  // One DGX H100 (NCCL's 32 p2p channels): a SendRecv's message on 4 channels to 64 MiB, 16 at
  // 512 MiB; an AllToAll's kernel on 16 channels at 1 MiB (pieces of 128 KiB on 2 each, 8
  // bases), 32 from 8 MiB.
  const Topology topo = load_topology(kSrc + "/topologies/dgx-h100-superpod.yaml", {{"node.count", "1"}});
  BenchOptions b;
  b.replay.link_efficiency = shipped_link_efficiency("h100-sxm5-80gb");
  b.replay.fidelity = Fidelity::Analytic;
  const std::vector<double> sizes = {1 * kMiB, 8 * kMiB, 512 * kMiB};
  const std::vector<BenchRow> sr = run_collective_bench(topo, BenchOp::SendRecv, 8, sizes, b);
  CHECK(sr[0].plan == "p2p/4");
  CHECK(sr[1].plan == "p2p/4");
  CHECK(sr[2].plan == "p2p/16");
  const std::vector<BenchRow> a2a = run_collective_bench(topo, BenchOp::AllToAll, 8, sizes, b);
  CHECK(a2a[0].plan == "p2p/16");
  CHECK(a2a[1].plan == "p2p/32");
  CHECK(a2a[2].plan == "p2p/32");
  // Over 2 DGX A100 nodes (16 ranks): 2 channels per peer, bases 0 and 1 (node distance) of 16.
  const Topology pod = load_topology(kSrc + "/topologies/dgx-a100-superpod.yaml", {{"node.count", "2"}});
  CHECK(run_collective_bench(pod, BenchOp::AllToAll, 16, {64 * kMiB}, b)[0].plan == "p2p/4");
}
