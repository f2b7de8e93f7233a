#include "sim/link_efficiency.hpp"

#include "calibrate/profile.hpp"

namespace overlapsim {

LinkEfficiency LinkEfficiency::of_profile(const Profile& profile) {
  LinkEfficiency e;
  e.nvlink = profile.nvlink_efficiency;
  e.network = profile.network_efficiency;
  e.pcie = profile.pcie_efficiency;
  return e;
}

double LinkEfficiency::of(LinkKind k) const {
  switch (k) {
    case LinkKind::NvLink:
    case LinkKind::NvSwitch: return nvlink;
    case LinkKind::Network: return network;
    case LinkKind::Pcie:
    case LinkKind::Upi: return pcie;
  }
  return 1.0;
}

}  // namespace overlapsim
