// The fraction of each link kind's bandwidth that NCCL's flows reach, from a calibration
// profile: what turns a link's datasheet bandwidth into the rate a collective's flow gets on it.
// Used by both fidelities (the collective plans' closed forms and the SimGrid platform's links).
#pragma once

#include "sim/topology.hpp"

namespace overlapsim {

struct Profile;

/// Fraction of each link kind's bandwidth that flows reach (NCCL's achieved busbw over the
/// link's peak; from the calibration profile). 1.0 means the ideal link.
struct LinkEfficiency {
  double nvlink = 1.0;   ///< NvLink and NvSwitch links
  double network = 1.0;  ///< NIC and fabric links
  double pcie = 1.0;     ///< PCIe (and UPI) links
  double of(LinkKind k) const;
  /// A calibration profile's (its nvlink_efficiency, network_efficiency, pcie_efficiency).
  static LinkEfficiency of_profile(const Profile& profile);
};

}  // namespace overlapsim
