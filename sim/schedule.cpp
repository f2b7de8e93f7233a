#include "sim/schedule.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace overlapsim {

const std::string& OpName::intern(const std::string& text) {
  // Nodes of an unordered_set never move, so the addresses handed out stay valid.
  static std::unordered_set<std::string> names;
  return *names.insert(text).first;
}

const char* to_string(OpType t) {
  switch (t) {
    case OpType::Compute: return "compute";
    case OpType::Collective: return "collective";
    case OpType::Send: return "send";
    case OpType::Recv: return "recv";
  }
  return "?";
}

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return "AllReduce";
    case CollectiveKind::AllGather: return "AllGather";
    case CollectiveKind::ReduceScatter: return "ReduceScatter";
    case CollectiveKind::AllToAll: return "AllToAll";
    case CollectiveKind::Broadcast: return "Broadcast";
    case CollectiveKind::Reduce: return "Reduce";
  }
  return "?";
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Recompute: return "recompute";
    case Phase::GradSync: return "grad-sync";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

const char* to_string(CommPurpose p) {
  switch (p) {
    case CommPurpose::TensorParallel: return "tp";
    case CommPurpose::DataParallel: return "dp";
    case CommPurpose::Pipeline: return "pp";
    case CommPurpose::Embedding: return "embedding";
  }
  return "?";
}

const char* to_string(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::Auto: return "auto";
    case CollectiveAlgorithm::Ring: return "ring";
    case CollectiveAlgorithm::Tree: return "tree";
    case CollectiveAlgorithm::Nvls: return "nvls";
    case CollectiveAlgorithm::NvlsTree: return "nvlstree";
    case CollectiveAlgorithm::Pat: return "pat";
    case CollectiveAlgorithm::CollnetDirect: return "collnetdirect";
    case CollectiveAlgorithm::CollnetChain: return "collnetchain";
  }
  return "?";
}

const char* to_string(ReduceOp r) {
  switch (r) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::PreMulSum: return "mulsum";
  }
  return "?";
}

const char* to_string(DataType t) {
  switch (t) {
    case DataType::Int8: return "int8";
    case DataType::Uint8: return "uint8";
    case DataType::Int32: return "int32";
    case DataType::Uint32: return "uint32";
    case DataType::Int64: return "int64";
    case DataType::Uint64: return "uint64";
    case DataType::Float16: return "half";
    case DataType::Float32: return "float";
    case DataType::Float64: return "double";
    case DataType::Bfloat16: return "bfloat16";
    case DataType::Float8e4m3: return "f8e4m3";
    case DataType::Float8e5m2: return "f8e5m2";
  }
  return "?";
}

int datatype_bytes(DataType t) {
  switch (t) {
    case DataType::Int8:
    case DataType::Uint8:
    case DataType::Float8e4m3:
    case DataType::Float8e5m2: return 1;
    case DataType::Float16:
    case DataType::Bfloat16: return 2;
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32: return 4;
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64: return 8;
  }
  return 0;
}

bool nvls_reduces(ReduceOp r, DataType t) {
  switch (t) {
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float16:
    case DataType::Bfloat16: return r == ReduceOp::Sum || r == ReduceOp::Max || r == ReduceOp::Min;
    case DataType::Float32:
    case DataType::Float64: return r == ReduceOp::Sum;
    default: return false;
  }
}

int Schedule::intern_group(const std::vector<int>& ranks, CommPurpose purpose) {
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].purpose == purpose && groups[i].ranks == ranks) return static_cast<int>(i);
  groups.push_back(Group{ranks, purpose});
  return static_cast<int>(groups.size()) - 1;
}

double Schedule::total_flops() const {
  double f = 0;
  for (const auto& p : programs)
    for (const auto& op : p.ops)
      if (op.type == OpType::Compute) f += op.flops;
  return f;
}

void validate(const Schedule& s) {
  OVERLAPSIM_CHECK(!s.programs.empty(), "schedule has no simulated rank");
  // Per group: whether the program's rank (and, for Send/Recv, a peer) is a member, looked up
  // once per group and rank rather than searched per op.
  std::vector<signed char> member;  // by group index: -1 unknown, 0 no, 1 yes (for the program's rank)
  const auto in_group = [&](int group, int rank) {
    const auto& r = s.groups[group].ranks;
    return std::find(r.begin(), r.end(), rank) != r.end();
  };
  std::vector<int> indegree, last_in_stream, pred_stream, first, succ, fill, ready;
  for (const auto& p : s.programs) {
    const int n = static_cast<int>(p.ops.size());
    OVERLAPSIM_CHECK(p.rank >= 0 && p.rank < s.world_size, "rank out of range");
    member.assign(s.groups.size(), -1);
    // Every edge of the per-rank graph (deps + stream order) from an earlier op to a later one
    // (a stream's previous op always is): then it is acyclic, and Kahn's algorithm below is
    // needed only when some dependency points forward.
    bool forward_only = true;
    for (int i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      OVERLAPSIM_CHECK(op.stream >= 0 && op.stream < p.num_streams, "stream out of range: " + op.name);
      for (int d : op.deps) {
        OVERLAPSIM_CHECK(d >= 0 && d < n && d != i, "dependency out of range: " + op.name);
        forward_only &= d < i;
      }
      if (op.type == OpType::Collective) {
        OVERLAPSIM_CHECK(op.group >= 0 && op.group < static_cast<int>(s.groups.size()), "bad group: " + op.name);
        signed char& m = member[static_cast<size_t>(op.group)];
        if (m < 0) m = in_group(op.group, p.rank) ? 1 : 0;
        OVERLAPSIM_CHECK(m == 1, "rank not in its group: " + op.name);
        OVERLAPSIM_CHECK(op.bytes >= 0, "negative size: " + op.name);
      }
      if (op.type == OpType::Send || op.type == OpType::Recv) {
        OVERLAPSIM_CHECK(op.peer >= 0 && op.peer < s.world_size && op.peer != p.rank, "bad peer: " + op.name);
        if (op.group >= 0) {  // its communicator: a group of both sides
          OVERLAPSIM_CHECK(op.group < static_cast<int>(s.groups.size()), "bad group: " + op.name);
          signed char& m = member[static_cast<size_t>(op.group)];
          if (m < 0) m = in_group(op.group, p.rank) ? 1 : 0;
          OVERLAPSIM_CHECK(m == 1 && in_group(op.group, op.peer), "send/recv outside its communicator's group: " + op.name);
        }
      }
      if (op.type == OpType::Compute) OVERLAPSIM_CHECK(op.duration_s >= 0, "negative duration: " + op.name);
    }
    if (forward_only) continue;
    // Kahn's algorithm over deps + stream order; successors in one flat array (CSR: a vector per
    // op cost a tenth of an analytic run).
    indegree.assign(n, 0);
    last_in_stream.assign(p.num_streams, -1);
    pred_stream.assign(n, -1);
    first.assign(n + 1, 0);
    for (int i = 0; i < n; ++i) {
      int& prev = last_in_stream[p.ops[i].stream];
      if (prev >= 0) { pred_stream[i] = prev; ++first[prev + 1]; ++indegree[i]; }
      prev = i;
      for (int d : p.ops[i].deps) {
        ++first[d + 1];
        ++indegree[i];
      }
    }
    for (int i = 0; i < n; ++i) first[i + 1] += first[i];
    succ.assign(first[n], 0);
    fill.assign(first.begin(), first.end() - 1);
    for (int i = 0; i < n; ++i) {
      if (pred_stream[i] >= 0) succ[fill[pred_stream[i]]++] = i;
      for (int d : p.ops[i].deps) succ[fill[d]++] = i;
    }
    ready.clear();
    for (int i = 0; i < n; ++i)
      if (indegree[i] == 0) ready.push_back(i);
    int seen = 0;
    while (!ready.empty()) {
      int i = ready.back();
      ready.pop_back();
      ++seen;
      for (int k = first[i]; k < first[i + 1]; ++k)
        if (--indegree[succ[k]] == 0) ready.push_back(succ[k]);
    }
    OVERLAPSIM_CHECK(seen == n, "cycle in the schedule of rank " + std::to_string(p.rank));
  }
}

}  // namespace overlapsim
