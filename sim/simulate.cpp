#include "sim/simulate.hpp"

#include "calibrate/profile.hpp"
#include "models/flops.hpp"
#include "models/memory_model.hpp"
#include "sim/error.hpp"
#include "sim/micro_batch_extrapolation.hpp"
#include "sim/nccl_algorithm_check.hpp"
#include "sim/op_estimate.hpp"
#include "sim/pass.hpp"
#include "sim/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <optional>

namespace overlapsim {

namespace {

std::string describe_layout(const Parallelism& p) {
  std::string s = fmt::format("TP {} · PP {} · DP {}, SP {}, micro-batch {}, global batch {}, {}, recompute {}, ZeRO {}",
                              p.tp, p.pp, p.dp, p.sp ? "on" : "off", p.micro_batch, p.global_batch,
                              p.pipeline_schedule == PipelineSchedule::OneFOneB ? "1F1B" : "GPipe",
                              to_string(p.recompute), p.zero_stage);
  if (!p.overlap_grad_reduce) s += ", DP reduce after backward";
  if (!p.async_tp_reduce) s += ", sync TP reduce";
  if (p.average_in_collective) s += ", DP gradients averaged in NCCL";
  s += p.flash_attention ? ", flash attention" : ", unfused attention";
  return s;
}

/// Ranks a schedule simulates: one representative per pipeline stage when folded, else all.
int simulated_ranks(const Parallelism& par, Folding folding) {
  return folding == Folding::Representatives ? par.pp : par.world();
}

/// " (about N ops on R simulated rank(s))" for a progress line: what a long replay will hold.
std::string ops_hint(long long est, int ranks) {
  return fmt::format(" (about {} ops on {} simulated rank(s))", format_ops(est), ranks);
}

/// Whether the steady-state extrapolation (sim/micro_batch_extrapolation.hpp) is tried: no caller
/// that needs every op's times (a trace, recorded flows), and at
/// least twice the micro-batches the three samples replay together (nearer, their three builds
/// cost about what they save: 16 micro-batches against samples of 4 + 5 + 6 ran 0.09 s against
/// 0.06 s for all 16).
bool steady_state_applies(const SimulateOptions& opt, int m, int m0) {
  return !opt.every_micro_batch && !opt.on_replayed && !opt.record_flows && m >= 2 * (3 * m0 + 3);
}

}  // namespace

namespace {

/// The scenario's topology with its overrides; a bad override value (or an unknown override) is
/// named where the scenario gave it, the topology's own place said beside it (regression: the
/// topology file's line 24 was blamed for `node.count: abc` on the scenario's line 4).
Topology scenario_topology(const Scenario& sc) {
  try {
    return load_topology(sc.topology_path, sc.topology_overrides);
  } catch (const InputError& e) {
    const std::string key = "topology_overrides." + e.key();
    const auto at = sc.given_at.find(key);
    if (sc.topology_overrides.count(e.key()) == 0 || at == sc.given_at.end()) throw;
    const SourceLocation& in = e.where();
    std::string place = in.file;
    if (in.line > 0) place += ":" + std::to_string(in.line) + (in.column > 0 ? ":" + std::to_string(in.column) : "");
    throw InputError(at->second, at->second.file == "<command line>" ? "--set " + key : key,
                     e.message() + " (checked against the topology, " + place + ")");
  }
}

}  // namespace

RunResult simulate(const Scenario& sc, const SimulateOptions& opt) {
  const Topology topo = scenario_topology(sc);
  Parallelism par = sc.parallelism;
  const int gpus = topo.num_gpus();
  // Products in 64 bits and doubles: each factor may be up to 2^30 (a product past int wrapped,
  // and a wrapped world size then indexed past the ranks).
  const int64_t tp_pp = static_cast<int64_t>(par.tp) * par.pp;
  if (!sc.dp_given) {
    if (gpus % tp_pp != 0)
      throw InputError(sc.location_of("parallelism"), "parallelism.dp",
                       fmt::format("omitted, and the machine's {} GPUs are not divisible by tp · pp = {}", gpus, tp_pp));
    par.dp = static_cast<int>(gpus / tp_pp);
  }
  const double world = static_cast<double>(tp_pp) * par.dp;
  if (world > gpus)
    throw InputError(sc.location_of("parallelism"), "parallelism",
                     fmt::format("tp · pp · dp = {} · {} · {} = {:.0f} GPUs, but the topology '{}' has {}", par.tp, par.pp,
                                 par.dp, world, topo.name, gpus));
  try {
    check_layout(sc.model, par);
  } catch (const InputError& e) {
    throw InputError(sc.location_of(e.key()), e.key(), e.message());
  }
  // Folding (design §9) needs every node filled alike: a node holding fewer of the layout's ranks
  // has NICs and links to fewer GPUs, so its ranks do not behave like the representatives.
  Folding folding = opt.folding;
  // Every TP group and every DP group must also sit on its nodes alike, and like the others of
  // its kind (TP 6 on 8-GPU nodes: the second group has 2 GPUs on one node and 4 on the next).
  bool groups_alike = true;
  for (int kind = 0; kind < 2 && groups_alike; ++kind) {  // 0: TP groups, 1: DP groups
    std::pair<int, int> first{-1, -1};
    for (int s = 0; s < par.pp && groups_alike; ++s)
      for (int o = 0; o < (kind == 0 ? par.dp : par.tp) && groups_alike; ++o) {
        std::vector<int> g;
        for (int i = 0; i < (kind == 0 ? par.tp : par.dp); ++i)
          g.push_back(kind == 0 ? par.rank_of(i, o, s) : par.rank_of(o, i, s));
        const auto sh = topo.node_shape(g);
        if (first.first < 0) first = sh;
        groups_alike = sh.first > 0 && sh == first;
      }
  }
  // GPUs of a node not all joined alike (NVLink pairs beside PCIe switches): a rank's groups
  // cross links its mirrors' do not, and groups running at once share PCIe switches that one
  // representative does not load, so no rank can stand for the others (regression: folded, the
  // 8-GPU A6000 box's two DP rings were 24% fast, and partitioning ranked ahead of megatron).
  // Nodes are alike (one node description), so the first node's GPUs tell.
  std::vector<int> first_node;
  for (int r = 0; r < par.world() && topo.node_of(r) == 0; ++r) first_node.push_back(r);
  const bool unlike_gpus = !topo.uniform_within_nodes(first_node);
  const bool uneven = !topo.ranks_fill_nodes_alike(par.world()) || !groups_alike || unlike_gpus;
  if (uneven) folding = Folding::None;
  const DeviceSpec& dev = device_spec(topo.gpu_model());
  try {
    (void)dev.peak_flops(sc.model.dtype);
  } catch (const InputError& e) {  // name the scenario and the key, not only the device
    throw InputError(sc.location_of("model.dtype"), "model.dtype", e.message());
  }
  const std::string profile_path =
      sc.calibration_path.empty() ? default_profile_path(topo.gpu_model()) : sc.calibration_path;
  const Profile profile = load_profile(profile_path);
  if (profile.device != dev.model)
    throw InputError(SourceLocation{profile_path, 0, 0}, "device",
                     fmt::format("profile is for '{}' but the topology's GPUs are '{}'", profile.device, dev.model));
  const CostModel cost(dev, profile);

  RunResult rr;
  rr.scenario = sc.name;
  rr.model = sc.model.name;
  rr.topology = topo.name;
  // Shown relative to the source tree when it lies there, so results do not depend on where
  // the checkout is.
  const std::string src = std::string(OVERLAPSIM_SOURCE_DIR) + "/";
  rr.profile = profile_path.rfind(src, 0) == 0 ? profile_path.substr(src.size()) : profile_path;
  rr.profile_source = profile.provenance_kind + ": " + profile.provenance_source;
  rr.layout = describe_layout(par);
  rr.gpus = par.world();
  rr.micro_batches = par.num_micro_batches();
  rr.device_memory_bytes = dev.hbm_bytes;
  rr.peak_flops = dev.peak_flops(sc.model.dtype);
  rr.notes = sc.notes;
  if (uneven && opt.folding == Folding::Representatives)
    rr.notes += unlike_gpus
                    ? fmt::format("{}every rank simulated: the GPUs of a node of {} are not all joined alike (NVLink "
                                  "pairs beside PCIe), so no rank can stand for the others",
                                  rr.notes.empty() ? "" : "; ", topo.name)
                    : fmt::format("{}every rank simulated: the layout's {} GPUs or its TP/DP groups fill the "
                                  "topology's nodes unevenly, so no rank can stand for the others",
                                  rr.notes.empty() ? "" : "; ", par.world());
  // NCCL_COLLNET_ENABLE where the fabric cannot reduce: CollNet never runs (collective_plan.hpp).
  if (sc.nccl.collnet_enable && topo.sharp_version == 0)
    rr.notes += fmt::format("{}nccl.collnet_enable: {}'s fabric does not reduce in its switches (no fabric.sharp), "
                            "so CollNet cannot run",
                            rr.notes.empty() ? "" : "; ", topo.name);
  if (sc.published) {
    rr.published_tflops_per_gpu = sc.published->tflops_per_gpu;
    rr.published_source = sc.published->source;
  }
  const Fidelity fidelity = opt.fidelity.value_or(sc.fidelity);
  rr.fidelity = to_string(fidelity);
  if (fidelity == Fidelity::Flow) rr.flow_settings = sc.flow.describe();
  rr.nccl = describe(sc.nccl);

  double peak_mem = 0;
  int peak_stage = 0;
  MemoryEstimate peak;  // the most loaded stage's
  for (int stage = 0; stage < par.pp; ++stage) {
    const MemoryEstimate e = estimate_memory(sc.model, par, stage);
    if (e.total_bytes() > peak_mem) peak_mem = e.total_bytes(), peak_stage = stage, peak = e;
  }
  const bool oom = peak_mem > dev.hbm_bytes;
  if (oom) {
    // The table's OOM rows say no more: what needs the memory, and where, here.
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    rr.notes += fmt::format(
        "{}out of memory: the layout needs {:.1f} GiB per GPU on pipeline stage {} (weights {:.1f}, gradients {:.1f}, "
        "optimizer state {:.1f}, activations {:.1f}, buffers {:.1f} GiB; models/memory_model.hpp), more than the {}'s "
        "{:.1f} GiB, so no strategy is simulated (more TP or PP, a higher ZeRO stage or recomputation lower it)",
        rr.notes.empty() ? "" : "; ", peak_mem / kGiB, peak_stage, peak.weights_bytes / kGiB, peak.gradients_bytes / kGiB,
        peak.optimizer_bytes / kGiB, peak.activations_bytes / kGiB, peak.buffers_bytes / kGiB, dev.model, dev.hbm_bytes / kGiB);
  }

  const double flops_recompute = narayanan_flops(sc.model, par.global_batch);
  const double flops_model = model_flops(sc.model, par.global_batch);

  ReplayOptions ro;
  ro.fidelity = fidelity;
  ro.link_efficiency = LinkEfficiency::of_profile(profile);
  ro.launch_overhead_s = profile.launch_overhead_s;
  ro.collectives.read_profile(profile);  // measured algorithm/protocol rules, slice and LL128 costs
  sc.nccl.apply(ro.collectives);           // the job's NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_PAT_ENABLE
  ro.collectives.tree_slice_flows = sc.flow.tree_slice_flows;  // (flow fidelity's lowering only)
  ro.measured = profile.collectives;       // measured collective times (analytic), if any
  // Communication kernels take SMs from computation (design §4): by the profile's measured
  // coefficient, or exactly the SMs taken when it has none.
  ro.sm_count = dev.sm_count;
  if (profile.sm_interference > 0) ro.sm_interference = profile.sm_interference;
  ro.record_flows = opt.record_flows;
  ro.every_kernel = static_cast<bool>(opt.on_replayed);  // a trace shows each kernel as it ran
  ro.plan_cache = make_plan_cache();  // every replay below: one topology, these options
  // Where the job's NCCL_ALGO cannot run for a collective: a note, or (a list) the scenario refused.
  NcclAlgorithmCheck nccl_check(sc.nccl, sc.path);

  const std::vector<std::string> names = opt.strategies.empty() ? sc.strategies : opt.strategies;
  for (const auto& name : names) (void)make_strategy(name);  // an unknown name fails before any work
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  // The last strategy index for which `pred` holds (names.size() if none): that replay may take
  // the workload instead of copying it.
  const auto last_where = [&](const auto& pred) {
    size_t l = names.size();
    for (size_t i = 0; i < names.size(); ++i)
      if (pred(i)) l = i;
    return l;
  };
  const auto any_of = [](const std::vector<bool>& v) { return std::find(v.begin(), v.end(), true) != v.end(); };
  const auto context = [&](const Parallelism& p, std::vector<std::string>* notes, std::vector<OpPlan>* plan) {
    StrategyContext ctx{topo, cost, &sc.model, &p, notes, plan, ro.sm_count, ro.sm_interference};
    ctx.max_ops = opt.max_ops;  // a pass that would grow past it stops early (sim/pass.hpp OpBudget)
    ctx.collectives = &ro.collectives;
    return ctx;
  };
  const int m = par.num_micro_batches();
  const int sim_ranks = simulated_ranks(par, folding);
  const int m0 = std::max(4, par.pp);
  const bool tried = steady_state_applies(opt, m, m0) && !oom;
  if (!oom) rr.simulated_ranks = sim_ranks;

  // --max-ops (sim/op_estimate.hpp): every strategy's ops are estimated from a probe before any
  // schedule is built; a strategy whose next schedule would pass the limit is refused there
  // (StrategyResult::refusal) and the others go on.
  std::vector<int> replays(names.size(), 0);
  std::vector<double> replay_wall(names.size(), 0.0);  // host seconds in replay(), per strategy
  std::vector<std::optional<StrategyResult::Refusal>> refusal(names.size());
  // A strategy's schedules of the probe's workloads (its estimate below), with its notes and
  // plan, kept for the replay of as many micro-batches in a folded run, whose workload the
  // probe's is: that replay takes it instead of applying the strategy again (`default` under
  // every strategy, analytic: 251 → 199 ms CPU; the 16,384-GPU bench scenario 2.83 → 1.60 s).
  // Kept while all of them together hold at most --max-ops ops (the most one schedule may), so
  // that a run keeps at most one schedule's worth more than it did.
  struct Applied {
    int micro_batches = 0;
    Schedule schedule;
    std::vector<std::string> notes;
    std::vector<OpPlan> plan;
  };
  std::vector<std::vector<Applied>> applied(names.size());
  long long kept_ops = 0;
  // (Kept for the micro-batches a replay runs: the steady state's first samples, or all of them.)
  const auto keep_at = [&](int k) {
    return !oom && folding == Folding::Representatives && (tried ? k >= m0 && k <= m0 + 2 : k == m);
  };
  // Strategy i's kept schedule of k micro-batches, or null.
  const auto applied_at = [&](size_t i, int k) -> Applied* {
    for (Applied& a : applied[i])
      if (a.micro_batches == k && !a.schedule.programs.empty()) return &a;
    return nullptr;
  };
  const auto refuse = [&](size_t i, std::string why, long long ops) {
    refusal[i] = StrategyResult::Refusal{std::move(why), ops, opt.max_ops, replays[i]};
    applied[i].clear();
  };
  OpRefusalContext orc;
  orc.micro_batches = m;
  orc.ranks_per_stage = folding == Folding::None ? static_cast<long long>(par.tp) * par.dp : 1;
  orc.unfolded_on_request = opt.folding == Folding::None && folding == Folding::None;
  orc.every_micro_batch = opt.every_micro_batch && m >= 2 * (3 * m0 + 3);
  orc.needs_every_op = (opt.on_replayed || opt.record_flows) && !opt.every_micro_batch && m >= 2 * (3 * m0 + 3);
  std::vector<OpEstimate> est(names.size());
  // The probe's workload, projected before it is built: where it alone passes the limit, every
  // strategy's schedules would (they hold at least the workload of as many micro-batches as the
  // probe), and building the probe could take more memory than the machine has (10^6 layers in
  // 32 stages: 24 GB before the guard could say a word).
  bool probe_refused = false;
  if (!oom) {
    OpLine work = projected_workload(sc.model, par, cost);
    work.fixed *= orc.ranks_per_stage;  // (an unfolded run: every rank of a stage holds its representative's ops)
    work.per_mb *= orc.ranks_per_stage;
    const int a = std::max(1, std::min(m, par.pp));
    if (work.at(a) > opt.max_ops) {
      probe_refused = true;
      for (size_t i = 0; i < names.size(); ++i) {
        est[i].workload = est[i].schedule = work;  // (what the run would hold at least)
        refuse(i,
               op_refusal(names[i],
                          fmt::format("its workload alone, at {} micro-batch(es) (fewer than its replays hold; projected "
                                      "from workloads of one and two layers per stage)",
                                      a),
                          work.at(a), sim_ranks, opt.max_ops, orc, false),
               work.at(a));
      }
    }
  }
  OpProbe probe;  // built once; its workloads are the first samples' where the run is folded (below)
  if (!oom && !probe_refused) probe = build_op_probe(sc.model, par, cost);
  if (!oom && !probe_refused)
    for (size_t i = 0; i < names.size(); ++i) {
      try {
        // A lone strategy takes the probe's workloads where its schedules of them are kept (none
        // is kept past --max-ops: it is refused there): no replay needs them after.
        const bool take = names.size() == 1 && (keep_at(probe.a) || keep_at(probe.b));
        est[i] = estimate_ops(
            probe, par, folding,
            [&](Schedule w, const Parallelism& p) {
              // The probe's passes stop only far past the limit, so that the estimate is made and
              // the refusal says what the run would hold; the probe is never larger than the run's
              // schedules. (A kept schedule is within the limit or refused before its replay: the
              // estimate is exact at the probe's micro-batches, op_estimate.hpp.)
              Applied a;
              a.micro_batches = p.num_micro_batches();
              const bool keep = keep_at(a.micro_batches);
              StrategyContext ctx = context(p, keep ? &a.notes : nullptr, keep ? &a.plan : nullptr);
              ctx.max_ops = opt.max_ops > (1LL << 40) / 8 ? 0 : 8 * opt.max_ops;
              a.schedule = make_strategy(names[i])->apply(std::move(w), ctx);
              const long long n = count_ops(a.schedule);
              if (keep && kept_ops + n <= opt.max_ops) {
                kept_ops += n;
                applied[i].push_back(std::move(a));
              }
              return n;
            },
            take);
      } catch (const OpBudgetExceeded& e) {  // a probe 8x over the limit
        // (Its limit is the probe's, 8 × --max-ops: said as such, and the ops it projected are a
        // floor for the run's, which holds more micro-batches.)
        const long long ops = e.projected_ops();
        refuse(i, fmt::format("'{}': even its probe (one rank per pipeline stage, {} micro-batches at most) was stopped "
                              "past 8 times --max-ops ({}), where the probe's passes stop: {}: raise --max-ops to more "
                              "than {}",
                              names[i], std::min(m, par.pp + 1), opt.max_ops, e.growth(), ops),
               ops);
      }
    }
  // Refuses strategy i where its estimate at k micro-batches passes the limit; `what` names that
  // schedule, `all`: it replays every micro-batch.
  const auto over_limit = [&](size_t i, int k, const std::string& what, bool all) {
    if (refusal[i]) return true;
    const long long ops = est[i].at(k);
    if (ops <= opt.max_ops) return false;
    refuse(i, op_refusal(names[i], what, ops, sim_ranks, opt.max_ops, orc, all), ops);
    return true;
  };

  // Replays strategy i on `workload` (taken when `take`, copied otherwise); the strategy's notes
  // and plan go to the sample. Nullopt where the strategy's schedule passed --max-ops after all
  // (the estimate's backstop: OpBudget in its passes, then the count), the strategy refused.
  // `periodic`, when given, is set to whether the replay ran periodically at its end
  // (runs_periodically, within 1e-7 of the iteration: a filter, the exact check comes after).
  const auto replay_strategy = [&](size_t i, Schedule& workload, bool take, const Parallelism& p, bool* periodic,
                                   int period = 1) -> std::optional<ReplaySample> {
    const std::string& name = names[i];
    ReplaySample out;
    // The last strategy takes the workload itself (copying 10^5–10^6 ops took a seventh of the
    // default scenario's analytic run); a schedule kept from the estimate is taken as it is.
    Schedule sched;
    if (Applied* a = applied_at(i, p.num_micro_batches())) {
      sched = std::move(a->schedule);
      a->schedule = Schedule{};
      out.notes = std::move(a->notes);
      out.plan = std::move(a->plan);
    } else {
      try {
        sched = make_strategy(name)->apply(take ? std::move(workload) : Schedule(workload),
                                           context(p, &out.notes, &out.plan));
      } catch (const OpBudgetExceeded& e) {
        refuse(i, fmt::format("'{}': {}: raise it, or lower global_batch", name, e.what()), 0);
        return std::nullopt;
      }
    }
    for (const auto& prog : sched.programs) out.ops += static_cast<long long>(prog.ops.size());
    if (out.ops > opt.max_ops) {
      refuse(i, fmt::format("'{}': its schedule as built ({} micro-batches) holds {} ops ({}) on {} simulated rank(s), "
                            "more than the estimate of {}; the limit is {} (--max-ops): raise it to at least {}, or "
                            "lower global_batch",
                            name, p.num_micro_batches(), out.ops, format_ops(out.ops), sched.programs.size(),
                            est[i].at(p.num_micro_batches()), opt.max_ops, out.ops),
             out.ops);
      return std::nullopt;
    }
    nccl_check.check(sched, topo, ro);
    // A flow replay of minutes says it is still running (the progress lines' callback).
    if (opt.progress && ro.fidelity == Fidelity::Flow)
      ro.heartbeat = [&](double waited_s) {
        opt.progress(fmt::format("still replaying {} ({} micro-batches, {} ops on {} simulated rank(s), flow fidelity): "
                                 "{:.0f} s",
                                 name, p.num_micro_batches(), format_ops(out.ops), sched.programs.size(), waited_s));
      };
    struct Unset {  // (its captures end with this replay, thrown or not)
      ReplayOptions& o;
      ~Unset() { o.heartbeat = nullptr; }
    } unset{ro};
    const auto began = std::chrono::steady_clock::now();
    const ReplayTimes t = replay(sched, topo, ro);
    replay_wall[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    ++replays[i];
    if (opt.on_replayed) opt.on_replayed(name, sched, t, topo);
    if (periodic != nullptr)
      *periodic = runs_periodically(sched, t, p.rank_of(0, 0, p.pp - 1), 1e-7 * t.makespan_s, period);
    if (opt.communication_report) out.communication = summarize_communication(sched, t, topo, ro);
    out.micro_batches = p.num_micro_batches();
    const Breakdown b = breakdown(sched, t);
    out.iteration_s = t.makespan_s;
    out.activities = t.activities;
    out.compute_s = b.compute_s;
    out.exposed_comm_s = b.exposed_comm_s;
    out.bubble_s = b.idle_s;
    return out;
  };

  // The workload of layout p: the probe's of as many micro-batches where the run is folded as the
  // probe is (taken, once), else built.
  if (folding != Folding::Representatives) probe = OpProbe{};
  const auto workload_of = [&](const Parallelism& p) {
    const int k = p.num_micro_batches();
    Schedule* kept = k == probe.a ? &probe.at_a : k == probe.b ? &probe.at_b : nullptr;
    if (kept != nullptr && !kept->programs.empty()) return Schedule(std::move(*kept));
    return build_iteration(sc.model, p, cost, folding);
  };

  // Replay m0, m0 + 1 and m0 + 2 micro-batches and extend the steady state to
  // all m (sim/micro_batch_extrapolation.hpp); a strategy whose samples are not collinear is
  // replayed in full below.
  std::vector<std::optional<ReplaySample>> extrapolated(names.size());
  using Samples = std::array<std::vector<ReplaySample>, 3>;
  // One round of samples: every strategy i with go[i] replayed at from, from + step and from +
  // 2 step micro-batches, the largest first; a strategy whose last stage did not run
  // periodically there (at `step`), or that was refused, drops out of go and skips the other
  // two. `given(i, j)` names a sample already replayed for the j-th size, taken instead of
  // replaying it.
  const auto sample_round = [&](int from, int step, std::vector<bool>& go,
                                const std::function<const ReplaySample*(size_t, int)>& given) {
    Samples out;
    for (auto& v : out) v.resize(names.size());
    for (int j = 2; j >= 0; --j) {
      const auto needs = [&](size_t i) { return go[i] && (j == 2 || given(i, j) == nullptr); };
      const int k = from + j * step;
      // The workload, for the strategies without a schedule of it kept (the last of them takes it).
      const size_t builds = last_where([&](size_t i) { return needs(i) && applied_at(i, k) == nullptr; });
      if (last_where(needs) < names.size()) {
        Parallelism pj = par;
        pj.global_batch = k * par.dp * par.micro_batch;
        Schedule w = builds < names.size() ? workload_of(pj) : Schedule{};
        for (size_t i = 0; i < names.size(); ++i) {
          if (!needs(i)) continue;
          bool flag = true;
          auto sample = replay_strategy(i, w, i == builds, pj, j == 2 ? &flag : nullptr, step);
          if (sample) out[j][i] = std::move(*sample);
          if (j == 2 || !sample) go[i] = sample && flag;
        }
      }
      for (size_t i = 0; i < names.size(); ++i)
        if (go[i] && j < 2 && given(i, j) != nullptr) out[j][i] = *given(i, j);
    }
    return out;
  };
  const auto none = [](size_t, int) -> const ReplaySample* { return nullptr; };
  // The largest estimate among the strategies in `go` at k micro-batches, for a progress line.
  const auto most_ops = [&](const std::vector<bool>& go, int k) {
    long long most = 0;
    for (size_t i = 0; i < names.size(); ++i)
      if (go[i]) most = std::max(most, est[i].at(k));
    return most;
  };
  const auto names_where = [&](const std::vector<bool>& go) {
    std::vector<std::string> v;
    for (size_t i = 0; i < names.size(); ++i)
      if (go[i]) v.push_back(names[i]);
    return v;
  };
  Samples first;
  std::vector<bool> periodic(names.size(), false);
  if (tried) {
    for (size_t i = 0; i < names.size(); ++i)
      periodic[i] = !over_limit(i, m0 + 2, fmt::format("its steady state's largest sample ({} of the {} micro-batches)",
                                                       m0 + 2, m),
                                false);
    if (any_of(periodic)) {
      if (opt.progress)
        opt.progress(fmt::format("simulating {} ({} fidelity): {}, {} and {} of the {} micro-batches, for the steady "
                                 "state{}",
                                 join(names_where(periodic)), rr.fidelity, m0, m0 + 1, m0 + 2, m,
                                 ops_hint(most_ops(periodic, m0 + 2), sim_ranks)));
      first = sample_round(m0, 1, periodic, none);
    }
    for (size_t i = 0; i < names.size(); ++i)
      if (periodic[i]) extrapolated[i] = extrapolate_micro_batches({first[0][i], first[1][i], first[2][i]}, m0, m);
  }
  // A strategy refused there, whose drift has the pipeline's period (micro_batch_extrapolation.hpp):
  // sampled at m1, m1 + PP and m1 + 2 PP micro-batches (m1 ≡ m mod PP, from m0), reusing the
  // samples above (the largest of them replayed by every strategy, the others by those that
  // passed its filter), and extended where the estimated error is within kPeriodicExtrapolationBound.
  const int period = par.pp;
  const int m1 = m0 + (m - m0) % std::max(1, period);
  const std::string drift = fmt::format("its steady state drifts (its samples of {}, {} and {} micro-batches are not "
                                        "collinear)", m0, m0 + 1, m0 + 2);
  std::vector<bool> by_period(names.size(), false);
  std::vector<bool> again(names.size());
  for (size_t i = 0; i < names.size(); ++i) again[i] = tried && !extrapolated[i] && !refusal[i];
  if (tried && period > 1 && m >= 2 * (3 * m1 + 3 * period) && any_of(again)) {
    for (size_t i = 0; i < names.size(); ++i)
      if (again[i])
        again[i] = !over_limit(i, m1 + 2 * period,
                               fmt::format("{}, and its largest sample a pipeline period apart ({} of the {} "
                                           "micro-batches)", drift, m1 + 2 * period, m),
                               false);
    if (any_of(again)) {
      if (opt.progress)
        opt.progress(fmt::format("simulating the rest ({} fidelity): {}, {} and {} of the {} micro-batches, a pipeline "
                                 "period apart, for the steady state{}",
                                 rr.fidelity, m1, m1 + period, m1 + 2 * period, m,
                                 ops_hint(most_ops(again, m1 + 2 * period), sim_ranks)));
      const auto reuse = [&](size_t i, int j) -> const ReplaySample* {
        const int k = m1 + j * period - m0;
        return k == 2 || (k >= 0 && k < 2 && periodic[i]) ? &first[k][i] : nullptr;
      };
      const Samples ps = sample_round(m1, period, again, reuse);
      for (size_t i = 0; i < names.size(); ++i) {
        if (!again[i]) continue;
        extrapolated[i] = extrapolate_micro_batches({ps[0][i], ps[1][i], ps[2][i]}, m1, m, period);
        by_period[i] = extrapolated[i].has_value();
      }
    }
  }
  // The rest replay every micro-batch, where their estimate allows it.
  std::vector<bool> full(names.size(), false);
  for (size_t i = 0; i < names.size(); ++i) {
    if (oom || extrapolated[i] || refusal[i]) continue;
    std::string what = fmt::format("its replay of all {} micro-batches", m);
    if (tried) what = fmt::format("{}, and {}", drift, what);
    else if (orc.every_micro_batch) what += " (--every-micro-batch)";
    else if (orc.needs_every_op) what += " (a trace records every one)";
    full[i] = !over_limit(i, m, what, true);
  }
  const size_t last_full = last_where([&](size_t i) { return full[i] && applied_at(i, m) == nullptr; });
  Schedule workload;
  if (last_full < names.size()) workload = workload_of(par);
  std::vector<std::string> extended, extended_by_period, drifted;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    StrategyResult r;
    r.strategy = name;
    r.peak_memory_bytes = peak_mem;
    r.estimated_ops = oom ? 0 : est[i].at(m);
    if (oom) {
      r.out_of_memory = true;
      rr.strategies.push_back(r);
      continue;
    }
    ReplaySample s;
    if (extrapolated[i]) {
      s = *extrapolated[i];
      (by_period[i] ? extended_by_period : extended).push_back(name);
    } else if (full[i]) {
      if (opt.progress)
        opt.progress(fmt::format("simulating {} ({} fidelity){}", name, rr.fidelity, ops_hint(est[i].at(m), sim_ranks)));
      auto replayed = replay_strategy(i, workload, i == last_full, par, nullptr);
      if (replayed) {
        s = std::move(*replayed);
        if (tried) drifted.push_back(name);
      }
    }
    r.replays = replays[i];
    r.replay_wall_s = replay_wall[i];
    if (refusal[i]) {
      r.refusal = refusal[i];
      rr.strategies.push_back(r);
      continue;
    }
    r.iteration_s = s.iteration_s;
    r.activities = s.activities;
    r.ops = s.ops;
    r.compute_s = s.compute_s;
    r.exposed_comm_s = s.exposed_comm_s;
    r.bubble_s = s.bubble_s;
    r.notes = std::move(s.notes);
    r.plan = std::move(s.plan);
    r.communication = std::move(s.communication);
    r.communication_micro_batches = s.micro_batches;
    r.tflops_per_gpu = flops_recompute / (r.iteration_s * rr.gpus) / 1e12;
    r.model_tflops_per_gpu = flops_model / (r.iteration_s * rr.gpus) / 1e12;
    r.mfu = flops_model / (r.iteration_s * rr.gpus) / rr.peak_flops;
    rr.strategies.push_back(r);
  }
  if (!extended.empty())
    rr.notes += fmt::format("{}{}: the {} micro-batches' steady state extended from replays of {}, {} and {} "
                            "(collinear in every figure; --every-micro-batch replays all)",
                            rr.notes.empty() ? "" : "; ", join(extended), m, m0, m0 + 1, m0 + 2);
  if (!extended_by_period.empty())
    rr.notes += fmt::format("{}{}: the {} micro-batches' steady state extended from replays of {}, {} and {}, a "
                            "pipeline period apart (those of {}, {} and {} drift; the extension's estimated error "
                            "within {:g} of the iteration; --every-micro-batch replays all)",
                            rr.notes.empty() ? "" : "; ", join(extended_by_period), m, m1, m1 + period,
                            m1 + 2 * period, m0, m0 + 1, m0 + 2, kPeriodicExtrapolationBound / 2);
  if (!drifted.empty())
    rr.notes += fmt::format("{}{}: all {} micro-batches replayed (the replays of {}, {} and {} were not, or by their spacing would not be, collinear: "
                            "overlapping streams that slow each other drift, README \"Steady state\")",
                            rr.notes.empty() ? "" : "; ", join(drifted), m, m0, m0 + 1, m0 + 2);
  if (const std::string n = nccl_check.note(); !n.empty()) rr.notes += (rr.notes.empty() ? "" : "; ") + n;
  const auto meg = std::find_if(rr.strategies.begin(), rr.strategies.end(),
                                [](const StrategyResult& r) { return r.strategy == "megatron" && !r.out_of_memory && !r.refusal; });
  if (meg != rr.strategies.end())
    for (auto& r : rr.strategies)
      if (!r.out_of_memory && !r.refusal && r.iteration_s > 0) r.speedup_vs_megatron = meg->iteration_s / r.iteration_s;
  return rr;
}

}  // namespace overlapsim
