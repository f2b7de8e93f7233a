// overlapsim — command line (design §6). Subcommands live in their own files; this one parses.
#include "tools/overlapsim/commands.hpp"

#include "sim/error.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <new>

namespace {
/// `status`, or 1 (where it was 0) when what was printed did not reach standard output (a full
/// disk, > /dev/full): an error, not a success with nothing printed.
int written(int status) {
  errno = 0;
  std::cout.flush();
  if (!std::cout.fail()) return status;
  std::cerr << "overlapsim: error: could not write the result to standard output"
            << (errno != 0 ? std::string(" (") + std::strerror(errno) + ")" : std::string()) << "\n";
  return status != 0 ? status : 1;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"overlapsim: which way of overlapping communication with computation wins, simulated"};
  app.require_subcommand(1);
  overlapsim::cli::RunArgs run;
  overlapsim::cli::add_run_command(app, run);
  overlapsim::cli::TopoArgs topo;
  overlapsim::cli::add_topo_command(app, topo);
  overlapsim::cli::CollectiveArgs collective;
  overlapsim::cli::add_collective_command(app, collective);
  overlapsim::cli::CalibrateArgs calibrate;
  overlapsim::cli::add_calibrate_command(app, calibrate);
  // Errors of the command line read like the others: "overlapsim: ..." on one line.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("overlapsim: ") + e.what() + " (--help lists the options)\n";
  });
  if (argc > 1 && argv[1][0] != '-') {
    const std::string cmd = argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == cmd;
    if (!known) {
      std::cerr << "overlapsim: unknown command '" << cmd << "'; expected run, topo, collective or calibrate\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e) == 0 ? 0 : 2;  // --help: 0
    return written(status);
  }
  int status = 0;
  try {
    if (app.got_subcommand("run")) status = overlapsim::cli::run_command(run);
    else if (app.got_subcommand("topo")) status = overlapsim::cli::topo_command(topo);
    else if (app.got_subcommand("collective")) status = overlapsim::cli::collective_command(collective);
    else if (app.got_subcommand("calibrate")) status = overlapsim::cli::calibrate_command(calibrate);
  } catch (const overlapsim::InputError& e) {
    std::cerr << "overlapsim: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // (Said as what it is, with the ways past it: a bare "std::bad_alloc" named none.)
    std::cerr << "overlapsim: out of memory: the machine could not hold what was asked (a schedule of as many ops as "
                 "--max-ops allows, about 0.5 KB each, or a scenario, topology or size sweep that large); lower "
                 "--max-ops, the micro-batches or the layers, or run on a machine with more memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "overlapsim: error: " << e.what() << "\n";
    return 1;
  }
  return written(status);
}
