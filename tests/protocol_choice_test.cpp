// The protocol a collective runs where the op leaves it automatic (sim/collective_choice.cpp):
// the one NCCL's tuner ranks first for its algorithm (nccl_model_protocol), as NCCL picks an
// algorithm and protocol together, inside a node as across nodes. A forced protocol, an
// NCCL_PROTO list, forced channels and the textbook model as before.
#include "calibrate/profile.hpp"
#include "models/device_catalog.hpp"
#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"
#include "sim/link_efficiency.hpp"
#include "sim/nccl_selection.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/topology.hpp"
#include "tests/test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace overlapsim;
using overlapsim::testing::first;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
constexpr double kMiB = 1024.0 * 1024;

struct Machine {
  Topology topo;
  LinkEfficiency eff;
  CollectiveOptions opt;  ///< the shipped profile's, every choice automatic
};

Machine machine(const std::string& file, int nodes) {
  Machine m{load_topology(kSrc + "/topologies/" + file, {{"node.count", std::to_string(nodes)}}), {}, {}};
  const Profile profile = load_profile(default_profile_path(device_spec(m.topo.gpu_model()).model));
  m.eff = LinkEfficiency::of_profile(profile);
  m.opt.read_profile(profile);
  return m;
}

CollectivePlan plan(const Machine& m, int ranks, CollectiveKind kind, double bytes, const CollectiveOptions& opt) {
  return plan_collective(m.topo, m.eff, first(ranks), kind, bytes, 0, opt);
}

/// The plan's algorithm run with `proto` forced.
CollectivePlan forced(const Machine& m, int ranks, CollectiveKind kind, double bytes, CollectiveAlgorithm alg,
                      Protocol proto) {
  CollectiveOptions o = m.opt;
  o.algorithm = alg;
  o.protocol_auto = false;
  o.protocol = proto;
  return plan(m, ranks, kind, bytes, o);
}

/// The protocol NCCL's tuner ranks first for `alg` over the first `ranks` GPUs.
Protocol ranked(const Machine& m, int ranks, CollectiveKind kind, double bytes, CollectiveAlgorithm alg) {
  const NcclTunerInputs in =
      plan_detail::tuner_inputs(m.topo, m.eff, first(ranks), m.topo.node_of(ranks - 1) + 1, kind, m.opt);
  const auto p = nccl_model_protocol(kind, alg, bytes, in);
  REQUIRE(p.has_value());
  return *p;
}

/// A ring of `kind` over the first `ranks` GPUs runs `want`, the protocol NCCL's tuner ranks
/// first, though `less` (forced) has the lesser closed form.
void check_ring_runs_ranked(const Machine& m, int ranks, CollectiveKind kind, double bytes, Protocol want, Protocol less) {
  CAPTURE(static_cast<int>(kind));
  const CollectivePlan p = plan(m, ranks, kind, bytes, m.opt);
  REQUIRE(p.algorithm == CollectiveAlgorithm::Ring);
  CHECK(p.protocol == want);
  CHECK(p.protocol == ranked(m, ranks, kind, bytes, CollectiveAlgorithm::Ring));
  CHECK(forced(m, ranks, kind, bytes, CollectiveAlgorithm::Ring, less).closed_form_s() < p.closed_form_s());
}

}  // namespace

TEST_CASE("across nodes a ring runs the protocol NCCL's tuner ranks first, not the least closed form") {
  SUBCASE("2 DGX A100 nodes, AllReduce 64 MiB: LL128, where Simple's closed form is less") {
    const Machine m = machine("dgx-a100-superpod.yaml", 2);
    const CollectivePlan p = plan(m, 16, CollectiveKind::AllReduce, 64 * kMiB, m.opt);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Ring);
    CHECK(p.protocol == Protocol::LL128);
    CHECK(p.protocol == ranked(m, 16, CollectiveKind::AllReduce, 64 * kMiB, CollectiveAlgorithm::Ring));
    const double simple = forced(m, 16, CollectiveKind::AllReduce, 64 * kMiB, CollectiveAlgorithm::Ring,
                                 Protocol::Simple).closed_form_s();
    CHECK(simple < p.closed_form_s());
    CHECK(p.closed_form_s() == doctest::Approx(forced(m, 16, CollectiveKind::AllReduce, 64 * kMiB,
                                                      CollectiveAlgorithm::Ring, Protocol::LL128)
                                                   .closed_form_s())
                                   .epsilon(1e-12));
  }
  SUBCASE("10 DGX H100 nodes, AllGather and ReduceScatter 256 MiB: Simple, where LL128's closed form is less") {
    const Machine m = machine("dgx-h100-superpod.yaml", 10);
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter})
      check_ring_runs_ranked(m, 80, kind, 256 * kMiB, Protocol::Simple, Protocol::LL128);
  }
  SUBCASE("16 DGX A100 nodes, AllReduce 128 MiB: the tree NCCL's tuner ranks first, with its LL128") {
    const Machine m = machine("dgx-a100-superpod.yaml", 16);
    const CollectivePlan p = plan(m, 128, CollectiveKind::AllReduce, 128 * kMiB, m.opt);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Tree);
    CHECK(p.protocol == ranked(m, 128, CollectiveKind::AllReduce, 128 * kMiB, CollectiveAlgorithm::Tree));
    CHECK(p.protocol == Protocol::LL128);
  }
}

TEST_CASE("inside a node a ring runs the protocol NCCL's tuner ranks first too") {
  SUBCASE("one DGX A100, AllReduce 4 MiB: LL128, where LL's closed form is less") {
    check_ring_runs_ranked(machine("dgx-a100-superpod.yaml", 1), 8, CollectiveKind::AllReduce, 4 * kMiB,
                           Protocol::LL128, Protocol::LL);
  }
  SUBCASE("one DGX H100, AllGather and ReduceScatter 32 MiB: Simple, where LL128's closed form is less") {
    const Machine m = machine("dgx-h100-superpod.yaml", 1);
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter})
      check_ring_runs_ranked(m, 8, kind, 32 * kMiB, Protocol::Simple, Protocol::LL128);
  }
  SUBCASE("one DGX A100, Broadcast 4 MiB: a chain keeps the protocol of least closed form (collective_plan.hpp)") {
    const Machine m = machine("dgx-a100-superpod.yaml", 1);
    const CollectivePlan p = plan(m, 8, CollectiveKind::Broadcast, 4 * kMiB, m.opt);
    for (Protocol other : {Protocol::LL, Protocol::LL128, Protocol::Simple})
      CHECK(p.closed_form_s() <=
            forced(m, 8, CollectiveKind::Broadcast, 4 * kMiB, CollectiveAlgorithm::Ring, other).closed_form_s());
  }
}

TEST_CASE("with the protocol forced, listed or the channels forced, the choice is as before") {
  const Machine m = machine("dgx-a100-superpod.yaml", 2);
  SUBCASE("a forced protocol runs across nodes whatever the tuner ranks") {
    CollectiveOptions o = m.opt;
    o.protocol_auto = false;
    o.protocol = Protocol::Simple;
    CHECK(plan(m, 16, CollectiveKind::AllReduce, 64 * kMiB, o).protocol == Protocol::Simple);
  }
  SUBCASE("NCCL_PROTO=^LL128: the tuner ranks what the list leaves") {
    CollectiveOptions o = m.opt;
    parse_nccl_proto_list("^LL128", o.allowed);
    const CollectivePlan p = plan(m, 16, CollectiveKind::AllReduce, 64 * kMiB, o);
    CHECK(p.protocol != Protocol::LL128);
    NcclTunerInputs in = plan_detail::tuner_inputs(m.topo, m.eff, first(16), 2, CollectiveKind::AllReduce, o);
    in.protocols = o.allowed.of(CollectiveKind::AllReduce).protocols;
    const auto want = nccl_model_protocol(CollectiveKind::AllReduce, p.algorithm, 64 * kMiB, in);
    REQUIRE(want.has_value());
    CHECK(p.protocol == *want);
  }
  SUBCASE("forced channels: the least closed form") {
    const CollectivePlan p = plan_collective(m.topo, m.eff, first(16), CollectiveKind::AllReduce, 64 * kMiB, 8, m.opt);
    REQUIRE(p.algorithm == CollectiveAlgorithm::Ring);
    for (Protocol other : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      CollectiveOptions o = m.opt;
      o.algorithm = CollectiveAlgorithm::Ring;
      o.protocol_auto = false;
      o.protocol = other;
      CHECK(p.closed_form_s() <=
            plan_collective(m.topo, m.eff, first(16), CollectiveKind::AllReduce, 64 * kMiB, 8, o).closed_form_s());
    }
  }
}

TEST_CASE("nccl_model_protocol: NCCL's order breaks ties, the enabled protocols only, none finite is nullopt") {
  NcclTunerInputs in;
  in.ranks = 16;
  in.nodes = 2;
  in.graph_channels = 8;
  in.comm_channels = 8;
  in.graph_busbw_Bps = 8 * 24e9;
  // Only Simple enabled: Simple.
  in.protocols = 1u << static_cast<unsigned>(Protocol::Simple);
  CHECK(nccl_model_protocol(CollectiveKind::AllGather, CollectiveAlgorithm::Ring, 64 * kMiB, in) == Protocol::Simple);
  // LL128 alone but not enabled by default (in.ll128 false): no finite time.
  in.protocols = 1u << static_cast<unsigned>(Protocol::LL128);
  in.ll128 = false;
  CHECK_FALSE(nccl_model_protocol(CollectiveKind::AllGather, CollectiveAlgorithm::Ring, 64 * kMiB, in).has_value());
  // All enabled: the least of the three modelled times.
  in.protocols = 0x7u;
  in.ll128 = true;
  const auto p = nccl_model_protocol(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, 8 * kMiB, in);
  REQUIRE(p.has_value());
  for (Protocol other : {Protocol::LL, Protocol::LL128, Protocol::Simple})
    CHECK(nccl_model_allreduce_s(CollectiveAlgorithm::Ring, *p, 8 * kMiB, in) <=
          nccl_model_allreduce_s(CollectiveAlgorithm::Ring, other, 8 * kMiB, in));
}
