// NCCL_ALGO and NCCL_PROTO as NCCL reads them: lists of names, an exclusion, and (NCCL 2.24 and
// later) a list per collective function.
//
// Syntax (NCCL src/graph/tuning.cc parseList; docs/userguide/source/env.rst, NCCL_ALGO and
// NCCL_PROTO): entries separated by ';', each `FUNCTION:LIST` where FUNCTION is one of NCCL's
// functions (src/init.cc ncclFuncStr: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce),
// except the first entry, which may omit it and then applies to every function; LIST is names
// separated by ',' (NCCL_ALGO: src/init.cc ncclAlgoStr: Tree, Ring, CollNetDirect, CollNetChain,
// NVLS, NVLSTree, PAT; NCCL_PROTO: ncclProtoStr: LL, LL128, Simple), all matched case-insensitively.
// A LIST that starts with '^' enables every name but those listed; otherwise only those listed.
// An entry replaces its function's whole row (a later entry for the same function wins); a
// function no entry names keeps NCCL's default (everything enabled). Examples:
//   ring,tree                          Ring and Tree for every function
//   ^nvls                              every algorithm but NVLS
//   allreduce:tree,ring;allgather:ring AllReduce Tree or Ring, AllGather the ring, the rest default
//   ^LL128;allreduce:LL128             (NCCL_PROTO) every protocol but LL128, AllReduce LL128 only
// Stricter than NCCL, which skips them silently: an empty name ("ring,,tree"), an empty entry
// ("ring;"), a '^' with no names, and an entry that leaves nothing its function(s) can run are
// refused here. As in NCCL, a name with spaces around it is an unknown name.
//
// What the lists mean (tuning.cc ncclTopoTuneModel, src/enqueue.cc topoGetAlgoInfo): NCCL's tuner
// ranks, for each collective call, only the enabled (algorithm, protocol) pairs that can run, and
// takes the one of least modelled time; where none is left, NCCL 2.24 and later fail the call
// ("No algorithm/protocol available for function ..."; before 2.24 NCCL ran the ring where no
// algorithm was enabled for a function). LL128 is enabled by default only on the platforms NCCL
// trusts (NVLink inside a node); a NCCL_PROTO row that enables it (LL128 listed, or not excluded
// by a '^' list) enables it everywhere, as NCCL's protoEnable 1 does.
//
// CollNetDirect and CollNetChain run where the fabric reduces in its switches (a topology's
// fabric.sharp) and NCCL_COLLNET_ENABLE is set (collective_plan.hpp, CollNet).
#pragma once

#include "sim/nccl_tuning.hpp"
#include "sim/schedule.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace overlapsim {

/// The bit of algorithm `a` (not Auto) in NcclAllowed::algorithms.
constexpr unsigned algorithm_bit(CollectiveAlgorithm a) { return 1u << static_cast<unsigned>(a); }
/// Every algorithm NCCL has: Ring, Tree, NVLS, NVLSTree, PAT, CollNetDirect, CollNetChain.
inline constexpr unsigned kEveryAlgorithm = 0xFEu;
/// Every protocol: bit (1 << Protocol) for LL, LL128, Simple.
inline constexpr unsigned kEveryProtocol = 0x7u;

/// What NCCL_ALGO and NCCL_PROTO leave one collective function.
struct NcclAllowed {
  unsigned algorithms = kEveryAlgorithm;  ///< algorithm_bit of each enabled algorithm
  unsigned protocols = kEveryProtocol;    ///< bit (1 << Protocol) of each enabled protocol
  /// NCCL_PROTO set this function's row (NCCL's protoEnable 0 or 1): an enabled LL128 is then
  /// ranked everywhere, not only where NCCL enables it by default (header).
  bool protocols_set = false;
  bool has(CollectiveAlgorithm a) const { return (algorithms & algorithm_bit(a)) != 0; }
  bool has(Protocol p) const { return (protocols & (1u << static_cast<unsigned>(p))) != 0; }
  /// Everything enabled, as without NCCL_ALGO and NCCL_PROTO.
  bool is_default() const { return algorithms == kEveryAlgorithm && protocols == kEveryProtocol && !protocols_set; }
};

/// A job's NCCL_ALGO and NCCL_PROTO lists: per collective kind, what NCCL's choice may take.
struct NcclSelection {
  std::array<NcclAllowed, 6> kinds;  ///< by CollectiveKind (AllToAll: point-to-point, never restricted)
  std::string algo_text;   ///< NCCL_ALGO as NCCL spells it ("^NVLS"), "" when not a list
  std::string proto_text;  ///< NCCL_PROTO likewise
  const NcclAllowed& of(CollectiveKind k) const { return kinds[static_cast<size_t>(k)]; }
  /// No list restricts anything.
  bool is_default() const;
};

/// A list NCCL would refuse, or this simulator does (header): what was expected and what was
/// found, and where in the value (0-based character offset).
class NcclListError : public std::invalid_argument {
 public:
  NcclListError(size_t offset, const std::string& message) : std::invalid_argument(message), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

/// Whether `text` is one name (no ',', ';', ':' nor '^'): NCCL_ALGO=Ring as this simulator
/// always read it (a forced algorithm, the ring where it cannot run).
bool is_single_nccl_name(const std::string& text);

/// Parses an NCCL_ALGO value (header) into sel's algorithms and algo_text, leaving its protocols.
/// Throws NcclListError for an unknown function or algorithm, an empty name or entry, a '^' with
/// no names, a prefix-less entry after the first, or an entry that enables no algorithm NCCL has
/// for its function (tuning.cc ncclTopoTuneModel: Broadcast and Reduce Ring only; AllGather and
/// ReduceScatter Ring, PAT, NVLS, CollNetDirect; AllReduce all but PAT).
void parse_nccl_algo_list(const std::string& text, NcclSelection& sel);
/// The algorithms NCCL_ALGO's value `text` (header) enables for `kind` by naming them, as
/// algorithm_bit of each that NCCL has for `kind`: the names of the entry that sets kind's row
/// where that entry lists what it enables ("CollNetDirect,Ring": those two; AllGather's row of
/// "collnetchain,ring": the ring alone); 0 where the entry excludes ("^ring" names none of what it
/// enables) or no entry sets the row (NCCL's default). Throws NcclListError as parse_nccl_algo_list.
unsigned nccl_algo_list_named(const std::string& text, CollectiveKind kind);
/// Parses an NCCL_PROTO value (header) into sel's protocols and proto_text, leaving its
/// algorithms. Throws NcclListError as parse_nccl_algo_list (an entry must leave a protocol).
void parse_nccl_proto_list(const std::string& text, NcclSelection& sel);
/// Resets sel's algorithms (every one enabled, algo_text "") or its protocols.
void clear_nccl_algo_list(NcclSelection& sel);
void clear_nccl_proto_list(NcclSelection& sel);

/// NCCL's own name of an algorithm (src/init.cc ncclAlgoStr: "Ring", "Tree", "NVLS",
/// "NVLSTree", "PAT"; "auto" for Auto).
const char* nccl_algo_name(CollectiveAlgorithm a);
/// NCCL's name of a collective kind (src/init.cc ncclFuncStr: "AllReduce", ...; "AllToAll").
const char* nccl_function_name(CollectiveKind k);

/// Why a forced algorithm may not run, and what NCCL does then: the conditions under which NCCL
/// (and the simulator) runs each algorithm, and NCCL's failure given `nccl_algo` (NCCL_ALGO's
/// value, e.g. "nvls") where it cannot run. Shared by the notes of `overlapsim collective --algo`
/// and `overlapsim run` (sim/simulate.cpp).
std::string forced_algorithm_reason(const std::string& nccl_algo);

}  // namespace overlapsim
