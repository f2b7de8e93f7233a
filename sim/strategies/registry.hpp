// The factory functions of the built-in strategies (one per file in sim/strategies/).
#pragma once

#include "sim/strategy.hpp"

namespace overlapsim {

std::unique_ptr<Strategy> make_serial();
std::unique_ptr<Strategy> make_megatron();
std::unique_ptr<Strategy> make_te_overlap();
std::unique_ptr<Strategy> make_wang_decomp();
std::unique_ptr<Strategy> make_centauri();

}  // namespace overlapsim
