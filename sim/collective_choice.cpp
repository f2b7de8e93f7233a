// The algorithm a collective runs (collective_plan.hpp, "Algorithm", "Protocol" and "Tuning
// table"): a forced one where it can run, a measured tuning rule's, or the automatic choice —
// NCCL's tuner's ranking (of the algorithm across nodes, of the ring's and the tree's protocol
// everywhere), the algorithm of least closed form inside a node — among what NCCL_ALGO's and
// NCCL_PROTO's lists leave (sim/nccl_selection.hpp), and the ring, marked, where nothing asked can run.
#include "sim/collective_plan.hpp"
#include "sim/collective_plan_detail.hpp"

#include "models/device_catalog.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

namespace overlapsim {

using namespace plan_detail;

bool nccl_has_kernel(CollectiveKind kind, DataType t, int compute_capability) {
  return !(reduces(kind) && is_fp8(t) && compute_capability < 90);
}

std::string algorithm_unavailable_reason(const Topology& topo, const std::vector<int>& ranks, CollectiveKind kind,
                                         int channels_forced, const CollectiveOptions& opt, CollectiveAlgorithm alg) {
  const bool gather = kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter;
  const std::string name = nccl_algo_name(alg);
  switch (alg) {
    case CollectiveAlgorithm::Auto:
    case CollectiveAlgorithm::Ring: return "";
    case CollectiveAlgorithm::Tree:
      if (kind != CollectiveKind::AllReduce) return "NCCL runs Tree for AllReduce only";
      return ranks.size() < 2 ? "Tree needs 2 or more ranks" : "";
    case CollectiveAlgorithm::Nvls: return nvls_unsupported(topo, ranks, opt, std::max(0, channels_forced), kind);
    case CollectiveAlgorithm::NvlsTree:
      if (kind != CollectiveKind::AllReduce) return "NCCL runs NVLSTree for AllReduce only";
      return nvls_tree_unsupported(topo, ranks, opt, std::max(0, channels_forced));
    case CollectiveAlgorithm::Pat:
      if (!gather) return "NCCL runs PAT for AllGather and ReduceScatter only";
      if (kind == CollectiveKind::ReduceScatter && scales(opt.reduce_op))
        return std::string("NCCL's PAT cannot scale a ReduceScatter (") + to_string(opt.reduce_op) + ")";
      if (opt.protocol_auto && !opt.textbook && !opt.allowed.of(kind).has(Protocol::Simple))
        return "PAT runs Simple only, which NCCL_PROTO's list leaves out";
      return pat_unsupported(topo, ranks, opt);
    case CollectiveAlgorithm::CollnetDirect:
    case CollectiveAlgorithm::CollnetChain: return collnet_unsupported(topo, ranks, opt, alg, kind);
  }
  return "";
}

CollectivePlan plan_collective(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                               CollectiveKind kind, double bytes, int channels_wanted, const CollectiveOptions& opt) {
  OVERLAPSIM_CHECK(kind != CollectiveKind::AllToAll, "AllToAll is point-to-point, not planned as a ring");
  OVERLAPSIM_CHECK(!ranks.empty(), "empty group");
  OVERLAPSIM_CHECK(nccl_has_kernel(kind, opt.datatype, device_spec(topo.gpu_model()).compute_capability),
                   std::string("NCCL has no ") + to_string(opt.datatype) + " reduction kernels for " + topo.gpu_model() +
                       " (callers refuse it first)");
  const int forced = std::max(0, channels_wanted);
  const int nodes = node_count(topo, ranks);
  // AllGather and ReduceScatter have the ring and PAT; Broadcast and Reduce the ring (its chain).
  const bool gather = kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter;
  const auto nccl_has = [&](CollectiveAlgorithm a) {
    return kind == CollectiveKind::AllReduce ? a != CollectiveAlgorithm::Pat
                                             : a == CollectiveAlgorithm::Ring ||
                                                   (gather && (a == CollectiveAlgorithm::Auto || a == CollectiveAlgorithm::Pat ||
                                                               a == CollectiveAlgorithm::Nvls ||
                                                               a == CollectiveAlgorithm::CollnetDirect));
  };
  // What NCCL_ALGO's and NCCL_PROTO's lists leave the automatic choice (nccl_selection.hpp); a
  // forced algorithm (the op's, or one NCCL_ALGO name) is not restricted by them.
  const bool automatic = opt.algorithm == CollectiveAlgorithm::Auto;
  const NcclAllowed& allowed = opt.allowed.of(kind);
  const auto may = [&](CollectiveAlgorithm a) { return !automatic || allowed.has(a); };
  const bool simple_ok = !opt.protocol_auto || opt.textbook || allowed.has(Protocol::Simple);
  CollectiveAlgorithm alg = nccl_has(opt.algorithm) ? opt.algorithm : CollectiveAlgorithm::Ring;
  // Forced where NCCL does not run it (Tree for an AllGather): the ring.
  bool fell_back = !automatic && !nccl_has(opt.algorithm);
  // A measured tuning rule decides what the op leaves automatic (nccl_tuning.hpp), where the lists allow its choice.
  const TuningRule* rule =
      opt.textbook ? nullptr : find_tuning_rule(opt.tuning, kind, static_cast<int>(ranks.size()), nodes, bytes);
  if (rule && automatic && !(allowed.has(rule->algorithm) && (!opt.protocol_auto || allowed.has(rule->protocol))))
    rule = nullptr;
  const bool from_rule = rule && alg == CollectiveAlgorithm::Auto;
  if (from_rule) alg = rule->algorithm;
  if (!nccl_has(alg)) alg = CollectiveAlgorithm::Ring;
  // Its protocol, when the op runs the rule's algorithm and does not force a protocol.
  const Protocol* proto = rule && opt.protocol_auto && alg == rule->algorithm && allowed.has(rule->protocol)
                              ? &rule->protocol
                              : nullptr;
  // NCCL skips PAT for a ReduceScatter it scales (ncclAvg as PreMulSum or SumPostDiv, enqueue.cc).
  const bool pat = gather && simple_ok && pat_supported(topo, ranks, opt) &&
                   !(kind == CollectiveKind::ReduceScatter && scales(opt.reduce_op));
  if (alg == CollectiveAlgorithm::Pat) {
    if (pat) return plan_pat(topo, eff, ranks, kind, bytes, forced, tuner_inputs(topo, eff, ranks, nodes, kind, opt));
    // Forced where PAT cannot run (a node holding two members): the ring; a rule's: the automatic choice.
    alg = from_rule ? CollectiveAlgorithm::Auto : CollectiveAlgorithm::Ring;
    fell_back |= !from_rule;
    proto = nullptr;
  }
  const bool nvls = (kind == CollectiveKind::AllReduce || gather) && nvls_supported(topo, ranks, opt, forced, kind);
  // NCCL's tuner relegates an fp8 ring over more than 8 ranks behind any other algorithm that can
  // run (schedule.hpp, DataType): the tuner's rankings take it from tuner_inputs; where closed
  // forms decide (forced channels), the ring's counts 1024 times.
  const bool relegated = fp8_ring_relegated(opt, kind, static_cast<int>(ranks.size()));
  const double ring_weight = relegated ? nccl::kFp8RingRelegation : 1.0;
  // The group's tuner inputs (computed once, where asked for).
  std::optional<NcclTunerInputs> tuner;
  const auto group_inputs = [&]() -> const NcclTunerInputs& {
    if (!tuner) tuner = tuner_inputs(topo, eff, ranks, nodes, kind, opt);
    return *tuner;
  };
  // NVLS: inside one node, or across nodes with CollNet.
  const auto in_switch = [&]() {
    return nodes > 1 ? plan_nvls_collnet(topo, eff, ranks, kind, bytes, opt.nvls_loop_s, group_inputs(), forced)
                     : plan_nvls(topo, eff, ranks, bytes, opt.nvls_loop_s, kind);
  };
  if (alg == CollectiveAlgorithm::Nvls && nvls) return in_switch();
  const bool nvls_tree = kind == CollectiveKind::AllReduce && nodes > 1 && nvls_tree_supported(topo, ranks, opt, forced);
  if (alg == CollectiveAlgorithm::NvlsTree && nvls_tree) return plan_nvls_tree(topo, eff, ranks, bytes, opt.nvls_loop_s);
  // CollNet (the network's in-switch reduction), forced where it can run.
  const bool collnet_direct = (kind == CollectiveKind::AllReduce || gather) &&
                              collnet_supported(topo, ranks, opt, CollectiveAlgorithm::CollnetDirect, kind);
  const bool collnet_chain =
      kind == CollectiveKind::AllReduce && collnet_supported(topo, ranks, opt, CollectiveAlgorithm::CollnetChain);
  const auto collnet = [&](CollectiveAlgorithm a) {
    return gather ? plan_collnet_gather(topo, eff, ranks, kind, bytes, forced)
                  : plan_collnet(topo, eff, ranks, bytes, a, forced, group_inputs());
  };
  if (alg == CollectiveAlgorithm::CollnetDirect && collnet_direct) return collnet(alg);
  if (alg == CollectiveAlgorithm::CollnetChain && collnet_chain) return collnet(alg);
  if (alg == CollectiveAlgorithm::Nvls || alg == CollectiveAlgorithm::NvlsTree ||
      alg == CollectiveAlgorithm::CollnetDirect || alg == CollectiveAlgorithm::CollnetChain) {
    // Forced where NVLS (NVLS_TREE, CollNet) cannot run: the ring, as NCCL; a rule's choice that
    // cannot run here: the automatic choice. Either way its protocol is chosen as usual (not the rule's).
    alg = from_rule ? CollectiveAlgorithm::Auto : CollectiveAlgorithm::Ring;
    fell_back |= !from_rule;
    proto = nullptr;
  }
  if (ranks.size() <= 1) alg = CollectiveAlgorithm::Ring;
  // The group's tuner inputs as NCCL's ranking takes them: the protocols NCCL_PROTO's list enables
  // (LL128 among them where it names it), the forced protocol alone.
  std::optional<NcclTunerInputs> ranked;
  const auto ranked_inputs = [&]() -> const NcclTunerInputs& {
    if (!ranked) {
      ranked = group_inputs();
      if (!opt.protocol_auto) ranked->only_protocol = &opt.protocol;
      else ranked->protocols = allowed.protocols;
      if (allowed.protocols_set && allowed.has(Protocol::LL128)) ranked->ll128 = true;
    }
    return *ranked;
  };
  // NCCL's tuner ranks the protocols as it ranks the algorithms (header), inside a node too: where
  // the op leaves the protocol automatic, the ring and the tree run the one it ranks first for them.
  std::optional<Protocol> ring_ranked, tree_ranked;
  if (ranks.size() > 1 && opt.protocol_auto && !opt.textbook && forced == 0 && proto == nullptr &&
      (kind == CollectiveKind::AllReduce || gather)) {
    ring_ranked = nccl_model_protocol(kind, CollectiveAlgorithm::Ring, bytes, ranked_inputs());
    if (kind == CollectiveKind::AllReduce)
      tree_ranked = nccl_model_protocol(kind, CollectiveAlgorithm::Tree, bytes, ranked_inputs());
  }
  const Protocol* ring_proto = proto ? proto : ring_ranked ? &*ring_ranked : nullptr;
  const Protocol* tree_proto = proto ? proto : tree_ranked ? &*tree_ranked : nullptr;
  if (alg == CollectiveAlgorithm::Tree) return plan_tree(topo, eff, ranks, bytes, forced, opt, tree_proto);
  CollectivePlan ring = plan_ring(topo, eff, ranks, kind, bytes, forced, opt, ring_proto);
  // The candidates the lists leave (all of them without lists): where none can run, the ring
  // runs, marked (NCCL 2.24 and later fail there; callers refuse or note it).
  const bool ring_ok = may(CollectiveAlgorithm::Ring) || ranks.size() <= 1;
  const bool nvls_ok = nvls && may(CollectiveAlgorithm::Nvls);
  const bool nvls_tree_ok = nvls_tree && may(CollectiveAlgorithm::NvlsTree);
  const bool tree_ok = kind == CollectiveKind::AllReduce && ranks.size() > 1 && may(CollectiveAlgorithm::Tree);
  const bool direct_ok = collnet_direct && may(CollectiveAlgorithm::CollnetDirect);
  const bool chain_ok = collnet_chain && may(CollectiveAlgorithm::CollnetChain);
  const bool pat_ok = pat && may(CollectiveAlgorithm::Pat);
  const auto none_left = [&]() {
    ring.fallback = true;
    return ring;
  };
  ring.fallback = fell_back;
  if (alg == CollectiveAlgorithm::Ring) return ring_ok || !automatic ? ring : none_left();
  if (alg == CollectiveAlgorithm::Auto && nodes <= 1) {
    if (nvls_ok && ring_ok) {
      // AllGather and ReduceScatter: the one NCCL's tuner ranks first (on Hopper nodes the ring
      // at every size: nccl_tuning.hpp); an AllReduce, or forced channels: the lesser closed form.
      if (gather && forced == 0) {
        NcclTunerInputs in = ranked_inputs();
        nvls_tuner_inputs(topo, eff, ranks, &in);
        in.algorithms = algorithm_bit(CollectiveAlgorithm::Ring) | algorithm_bit(CollectiveAlgorithm::Nvls);
        return nccl_model_allgather_algorithm(bytes, in) == CollectiveAlgorithm::Nvls ? in_switch() : ring;
      }
      CollectivePlan q = in_switch();
      return q.closed_form_s() < ring_weight * ring.closed_form_s() ? q : ring;
    }
    // An fp8 AllReduce of more than 8 GPUs in a node: the tree NCCL ranks before the relegated ring.
    if (relegated && tree_ok) return plan_tree(topo, eff, ranks, bytes, forced, opt, tree_proto);
    if (ring_ok) return ring;
    // NCCL's tree inside one node (a chain), where the lists leave it without the ring: beside
    // NVLS, the lesser closed form of the two.
    if (nvls_ok && tree_ok) {
      CollectivePlan q = in_switch();
      CollectivePlan chain = plan_tree(topo, eff, ranks, bytes, forced, opt, tree_proto);
      return chain.closed_form_s() < q.closed_form_s() ? chain : q;
    }
    if (nvls_ok) return in_switch();
    if (tree_ok) return plan_tree(topo, eff, ranks, bytes, forced, opt, tree_proto);
    return none_left();
  }
  if (gather) {
    // Across nodes: the ring, or PAT, CollNetDirect or NVLS (with CollNet's) where they can run
    // and NCCL's tuner ranks them first (header); forced channels or the textbook model: the
    // least closed form.
    if (!pat_ok && !direct_ok && !nvls_ok) return ring_ok ? ring : none_left();
    const NcclTunerInputs& in = group_inputs();
    if (forced == 0 && !opt.textbook) {
      NcclTunerInputs r = ranked_inputs();
      if (direct_ok || nvls_ok) collnet_tuner_inputs(topo, eff, ranks, &r);
      if (nvls_ok) {
        nvls_tree_tuner_inputs(topo, eff, ranks, &r);
        r.nvls = true;
      }
      r.algorithms = (ring_ok ? algorithm_bit(CollectiveAlgorithm::Ring) : 0u) |
                     (pat_ok ? algorithm_bit(CollectiveAlgorithm::Pat) : 0u) |
                     (direct_ok ? algorithm_bit(CollectiveAlgorithm::CollnetDirect) : 0u) |
                     (nvls_ok ? algorithm_bit(CollectiveAlgorithm::Nvls) : 0u);
      const CollectiveAlgorithm pick = nccl_model_allgather_algorithm(bytes, r);
      if (pick == CollectiveAlgorithm::Pat && pat_ok) return plan_pat(topo, eff, ranks, kind, bytes, forced, in);
      if (pick == CollectiveAlgorithm::CollnetDirect && direct_ok) return collnet(pick);
      if (pick == CollectiveAlgorithm::Nvls && nvls_ok) return in_switch();
      if (ring_ok) return ring;
      if (pat_ok) return plan_pat(topo, eff, ranks, kind, bytes, forced, in);
      return direct_ok ? collnet(CollectiveAlgorithm::CollnetDirect) : in_switch();
    }
    std::optional<CollectivePlan> best;
    if (ring_ok) best = std::move(ring);
    double least = best ? ring_weight * best->closed_form_s() : std::numeric_limits<double>::infinity();
    const auto consider = [&](CollectivePlan q) {
      if (q.closed_form_s() >= least) return;
      least = q.closed_form_s();
      best = std::move(q);
    };
    if (pat_ok) consider(plan_pat(topo, eff, ranks, kind, bytes, forced, in));
    if (direct_ok) consider(collnet(CollectiveAlgorithm::CollnetDirect));
    if (nvls_ok) consider(in_switch());
    return std::move(*best);
  }
  if (kind != CollectiveKind::AllReduce) return ring_ok ? ring : none_left();
  if (!ring_ok && !tree_ok && !nvls_ok && !nvls_tree_ok && !direct_ok && !chain_ok) return none_left();
  // Across nodes, the algorithm NCCL's tuner ranks first (header) of those the lists leave;
  // forced channels or the textbook model: the least closed form.
  if (alg == CollectiveAlgorithm::Auto && forced == 0 && !opt.textbook) {
    NcclTunerInputs in = ranked_inputs();
    if (nvls_tree_ok || nvls_ok) nvls_tree_tuner_inputs(topo, eff, ranks, &in);
    in.nvls = nvls_ok;
    if (direct_ok || chain_ok) collnet_tuner_inputs(topo, eff, ranks, &in);
    in.algorithms = (ring_ok ? algorithm_bit(CollectiveAlgorithm::Ring) : 0u) |
                    (tree_ok ? algorithm_bit(CollectiveAlgorithm::Tree) : 0u) |
                    (nvls_ok ? algorithm_bit(CollectiveAlgorithm::Nvls) : 0u) |
                    (nvls_tree_ok ? algorithm_bit(CollectiveAlgorithm::NvlsTree) : 0u) |
                    (direct_ok ? algorithm_bit(CollectiveAlgorithm::CollnetDirect) : 0u) |
                    (chain_ok ? algorithm_bit(CollectiveAlgorithm::CollnetChain) : 0u);
    const CollectiveAlgorithm pick = nccl_model_allreduce_algorithm(bytes, in);
    if (pick == CollectiveAlgorithm::NvlsTree) return plan_nvls_tree(topo, eff, ranks, bytes, opt.nvls_loop_s);
    if (pick == CollectiveAlgorithm::Nvls) return in_switch();
    if (pick == CollectiveAlgorithm::CollnetDirect || pick == CollectiveAlgorithm::CollnetChain) return collnet(pick);
    return pick == CollectiveAlgorithm::Tree ? plan_tree(topo, eff, ranks, bytes, forced, opt, tree_proto) : ring;
  }
  std::optional<CollectivePlan> best;
  if (tree_ok) best = plan_tree(topo, eff, ranks, bytes, forced, opt, tree_proto);
  if (ring_ok && (!best || ring_weight * ring.closed_form_s() <= best->closed_form_s())) best = std::move(ring);
  if (nvls_tree_ok && alg == CollectiveAlgorithm::Auto) {
    CollectivePlan q = plan_nvls_tree(topo, eff, ranks, bytes, opt.nvls_loop_s);
    if (!best || q.closed_form_s() < best->closed_form_s()) best = std::move(q);
  }
  if (nvls_ok && alg == CollectiveAlgorithm::Auto) {
    CollectivePlan q = in_switch();
    if (!best || q.closed_form_s() < best->closed_form_s()) best = std::move(q);
  }
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::CollnetDirect, CollectiveAlgorithm::CollnetChain})
    if ((a == CollectiveAlgorithm::CollnetDirect ? direct_ok : chain_ok) && alg == CollectiveAlgorithm::Auto) {
      CollectivePlan q = collnet(a);
      if (!best || q.closed_form_s() < best->closed_form_s()) best = std::move(q);
    }
  return best ? std::move(*best) : none_left();
}


}  // namespace overlapsim
