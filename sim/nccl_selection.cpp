#include "sim/nccl_selection.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace overlapsim {

namespace {

struct Name {
  const char* nccl;  ///< NCCL's spelling (src/init.cc)
  unsigned bit;
};

// src/init.cc ncclAlgoStr, in its order.
const std::vector<Name>& algorithm_names() {
  static const std::vector<Name> v = {
      {"Tree", algorithm_bit(CollectiveAlgorithm::Tree)},   {"Ring", algorithm_bit(CollectiveAlgorithm::Ring)},
      {"CollNetDirect", algorithm_bit(CollectiveAlgorithm::CollnetDirect)},
      {"CollNetChain", algorithm_bit(CollectiveAlgorithm::CollnetChain)},
      {"NVLS", algorithm_bit(CollectiveAlgorithm::Nvls)},   {"NVLSTree", algorithm_bit(CollectiveAlgorithm::NvlsTree)},
      {"PAT", algorithm_bit(CollectiveAlgorithm::Pat)}};
  return v;
}

// src/init.cc ncclProtoStr.
const std::vector<Name>& protocol_names() {
  static const std::vector<Name> v = {{"LL", 1u << static_cast<unsigned>(Protocol::LL)},
                                      {"LL128", 1u << static_cast<unsigned>(Protocol::LL128)},
                                      {"Simple", 1u << static_cast<unsigned>(Protocol::Simple)}};
  return v;
}

// src/init.cc ncclFuncStr, in its order, with the kinds they are here.
const std::vector<std::pair<const char*, CollectiveKind>>& function_names() {
  static const std::vector<std::pair<const char*, CollectiveKind>> v = {
      {"Broadcast", CollectiveKind::Broadcast},
      {"Reduce", CollectiveKind::Reduce},
      {"AllGather", CollectiveKind::AllGather},
      {"ReduceScatter", CollectiveKind::ReduceScatter},
      {"AllReduce", CollectiveKind::AllReduce}};
  return v;
}

/// The algorithms NCCL has for a function (src/graph/tuning.cc ncclTopoTuneModel's loop).
unsigned nccl_algorithms_of(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: return algorithm_bit(CollectiveAlgorithm::Ring);
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      return algorithm_bit(CollectiveAlgorithm::Ring) | algorithm_bit(CollectiveAlgorithm::Pat) |
             algorithm_bit(CollectiveAlgorithm::Nvls) | algorithm_bit(CollectiveAlgorithm::CollnetDirect);
    case CollectiveKind::AllReduce: return kEveryAlgorithm & ~algorithm_bit(CollectiveAlgorithm::Pat);
    case CollectiveKind::AllToAll: return 0;
  }
  return 0;
}

bool same_ignoring_case(const std::string& a, const char* b) { return ascii_lower(a) == ascii_lower(b); }

std::string names_text(const std::vector<Name>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i].nccl);
  return s;
}

std::string functions_text() {
  std::string s;
  const auto& f = function_names();
  for (size_t i = 0; i < f.size(); ++i) s += (i == 0 ? "" : i + 1 == f.size() ? " or " : ", ") + std::string(f[i].first);
  return s;
}

/// The text from `from` up to the next character in `stops` (or the end).
size_t token_end(const std::string& text, size_t from, const char* stops) {
  const size_t e = text.find_first_of(stops, from);
  return e == std::string::npos ? text.size() : e;
}

/// parseList (header) over `names`; `variable` ("NCCL_ALGO") and `what` ("algorithm") for the
/// messages. Sets the rows of `rows` it names (bits) and `set` for them, and where `named` is
/// given, those rows' names (0 for an entry that excludes, '^'); returns NCCL's spelling.
std::string parse_list(const std::string& text, const std::vector<Name>& names, const char* variable, const char* what,
                       bool algorithms, std::array<unsigned, 6>* rows, std::array<bool, 6>* set,
                       std::array<unsigned, 6>* named = nullptr) {
  if (text.empty()) throw NcclListError(0, fmt::format("expected a {} list such as {}, found an empty value", variable,
                                                       algorithms ? "ring,tree or ^nvls" : "LL,Simple or ^LL128"));
  std::string canonical;
  size_t at = 0;
  bool first = true;
  while (true) {
    const size_t end = token_end(text, at, ";");
    const std::string entry = text.substr(at, end - at);
    if (entry.empty())
      throw NcclListError(at, fmt::format("expected an entry {} ';', found none", first ? "before" : "after"));
    // FUNCTION:LIST, or LIST (the first entry only).
    const size_t colon = entry.find(':');
    bool prefixed = colon != std::string::npos;
    CollectiveKind kind = CollectiveKind::AllReduce;
    std::string out;
    size_t list_at = at;
    if (prefixed) {
      const std::string prefix = entry.substr(0, colon);
      bool known = false;
      for (const auto& [name, k] : function_names())
        if (same_ignoring_case(prefix, name)) {
          known = true;
          kind = k;
          out = std::string(name) + ":";
        }
      if (!known)
        throw NcclListError(at, fmt::format("expected a collective ({}) before ':', found '{}'", functions_text(), prefix));
      list_at = at + colon + 1;
      if (entry.find(':', colon + 1) != std::string::npos)
        throw NcclListError(at + entry.find(':', colon + 1), "expected one ':' in an entry, found another");
    } else if (!first) {
      throw NcclListError(at, fmt::format("expected COLLECTIVE:LIST after the first entry (NCCL: \"All entries except "
                                          "the first must have a prefix\"), found '{}'",
                                          entry));
    }
    const std::string list = text.substr(list_at, end - list_at);
    const bool exclude = !list.empty() && list[0] == '^';
    if (exclude) out += "^";
    size_t item_at = list_at + (exclude ? 1 : 0);
    if (item_at == end)
      throw NcclListError(item_at, fmt::format("expected {} names{}, found none", what,
                                               exclude ? " after '^'" : prefixed ? " after ':'" : ""));
    unsigned listed = 0;
    while (true) {
      const size_t item_end = std::min(end, token_end(text, item_at, ","));
      const std::string item = text.substr(item_at, item_end - item_at);
      if (item.empty())
        throw NcclListError(item_at, fmt::format("expected {} name between ','s, found an empty name", what));
      const Name* hit = nullptr;
      for (const Name& n : names)
        if (same_ignoring_case(item, n.nccl)) hit = &n;
      if (hit == nullptr)
        throw NcclListError(item_at, fmt::format("expected {} names ({}, any case), found '{}'", what, names_text(names), item));
      listed |= hit->bit;
      out += (out.empty() || out.back() == ':' || out.back() == '^' ? "" : ",") + std::string(hit->nccl);
      if (item_end == end) break;
      item_at = item_end + 1;
    }
    unsigned every = 0;
    for (const Name& n : names) every |= n.bit;
    const unsigned bits = exclude ? every & ~listed : listed;
    // What the entry leaves must be something its function(s) have.
    if (prefixed ? (algorithms ? (bits & nccl_algorithms_of(kind)) == 0 : bits == 0) : bits == 0)
      throw NcclListError(list_at, fmt::format("expected an entry that leaves {}{}, found '{}', which leaves none",
                                               algorithms ? "an algorithm" : "a protocol",
                                               prefixed && algorithms ? std::string(" NCCL has for ") + nccl_function_name(kind) : "",
                                               list));
    for (const auto& [name, k] : function_names()) {
      (void)name;
      if (prefixed && k != kind) continue;
      (*rows)[static_cast<size_t>(k)] = bits;
      (*set)[static_cast<size_t>(k)] = true;
      if (named) (*named)[static_cast<size_t>(k)] = exclude ? 0 : listed;
    }
    canonical += (first ? "" : ";") + out;
    first = false;
    if (end == text.size()) break;
    at = end + 1;
    if (at == text.size()) throw NcclListError(at, "expected an entry after ';', found none");
  }
  return canonical;
}

}  // namespace

bool NcclSelection::is_default() const {
  for (const NcclAllowed& a : kinds)
    if (!a.is_default()) return false;
  return true;
}

bool is_single_nccl_name(const std::string& text) { return text.find_first_of(",;:^") == std::string::npos; }


void parse_nccl_algo_list(const std::string& text, NcclSelection& sel) {
  std::array<unsigned, 6> rows{};
  std::array<bool, 6> set{};
  const std::string canonical = parse_list(text, algorithm_names(), "NCCL_ALGO", "algorithm", true, &rows, &set);
  clear_nccl_algo_list(sel);
  for (size_t k = 0; k < rows.size(); ++k)
    if (set[k]) sel.kinds[k].algorithms = rows[k];
  sel.algo_text = canonical;
}

unsigned nccl_algo_list_named(const std::string& text, CollectiveKind kind) {
  std::array<unsigned, 6> rows{}, named{};
  std::array<bool, 6> set{};
  parse_list(text, algorithm_names(), "NCCL_ALGO", "algorithm", true, &rows, &set, &named);
  return named[static_cast<size_t>(kind)] & nccl_algorithms_of(kind);
}

void parse_nccl_proto_list(const std::string& text, NcclSelection& sel) {
  std::array<unsigned, 6> rows{};
  std::array<bool, 6> set{};
  const std::string canonical = parse_list(text, protocol_names(), "NCCL_PROTO", "protocol", false, &rows, &set);
  clear_nccl_proto_list(sel);
  for (size_t k = 0; k < rows.size(); ++k)
    if (set[k]) {
      sel.kinds[k].protocols = rows[k];
      sel.kinds[k].protocols_set = true;
    }
  sel.proto_text = canonical;
}

void clear_nccl_algo_list(NcclSelection& sel) {
  for (NcclAllowed& a : sel.kinds) a.algorithms = kEveryAlgorithm;
  sel.algo_text.clear();
}

void clear_nccl_proto_list(NcclSelection& sel) {
  for (NcclAllowed& a : sel.kinds) {
    a.protocols = kEveryProtocol;
    a.protocols_set = false;
  }
  sel.proto_text.clear();
}

const char* nccl_algo_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::Auto: return "auto";
    case CollectiveAlgorithm::Ring: return "Ring";
    case CollectiveAlgorithm::Tree: return "Tree";
    case CollectiveAlgorithm::Nvls: return "NVLS";
    case CollectiveAlgorithm::NvlsTree: return "NVLSTree";
    case CollectiveAlgorithm::Pat: return "PAT";
    case CollectiveAlgorithm::CollnetDirect: return "CollNetDirect";
    case CollectiveAlgorithm::CollnetChain: return "CollNetChain";
  }
  return "?";
}

const char* nccl_function_name(CollectiveKind k) {
  for (const auto& [name, kind] : function_names())
    if (kind == k) return name;
  return "AllToAll";
}

std::string forced_algorithm_reason(const std::string& nccl_algo) {
  return "NCCL runs Tree and NVLSTree for AllReduce only, NVLS for AllReduce, AllGather and ReduceScatter; NVLS "
         "inside one node of 3 or more Hopper-or-later GPUs on NVSwitch (AllGather and ReduceScatter: at most 32), or "
         "across such nodes with CollNet (below; AllGather and ReduceScatter on CollNet's), NVLSTree across 2 or more such nodes with NICs and the same "
         "number of GPUs each, both with Simple, 2 or more channels and (but for AllGather) a reduction NVLS has (a sum "
         "of 32/64-bit integers, half, bfloat16, float or double, a max or min of those but float and double); PAT for "
         "AllGather and ReduceScatter over 2 or more ranks each on a node of its own, with Simple, not for a ReduceScatter that averages (avg, mulsum); "
         "CollNetDirect and CollNetChain for AllReduce, CollNetDirect also for AllGather and ReduceScatter on SHARP 3 "
         "with a NIC for each GPU, over 2 or more nodes of at most 8 GPUs each (the same number), "
         "with NCCL_COLLNET_ENABLE=1, a fabric whose switches reduce (the topology's fabric.sharp), Simple, and a "
         "reduction SHARP has (sum, avg, max or min of half, float, double, 32/64-bit integers; SHARP 3 also "
         "bfloat16 and 8-bit integers), CollNetDirect on NVSwitch nodes only; NCCL 2.24 and later, given "
         "NCCL_ALGO=" +
         nccl_algo +
         " where it cannot run, fail the call: \"No algorithm/protocol available for function ...\" (src/enqueue.cc; "
         "earlier versions ran the ring where a function had no algorithm left)";
}

}  // namespace overlapsim
