// overlapsim-calibrate-harness: the shared driver. Parses the command line, describes the
// machine (provenance), runs each benchmark (one file each) and writes the raw measurements as
// JSON (format: calibrate/README.md, "Raw measurements"). `overlapsim calibrate` runs this binary
// and fits its output into a profile; tools/gpu-check.sh builds and runs it standalone.
//
// Exit status: 0 measured (some parts may be skipped: see "notes"), 1 a failure, 2 bad
// arguments, 3 no usable CUDA GPU on this machine.
#include "calibrate/harness/harness.hpp"

#include <cublasLt.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

namespace overlapsim::harness {
namespace {

constexpr const char* kUsage =
    "usage: overlapsim-calibrate-harness --out FILE [--quick] [--device N] [--max-gpus N]\n"
    "                                    [--only gemm,memory,attention,launch,interference,collectives]\n"
    "                                    [--warmup N] [--repeats N]\n"
    "       overlapsim-calibrate-harness --plan [--quick]    # what would be measured; needs no GPU\n"
    "exit status: 0 measured, 1 failure, 2 bad arguments, 3 no CUDA GPU\n";

const char* const kSections[] = {"launch", "gemm", "memory", "attention", "interference", "collectives"};

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int parse_int(const std::string& flag, const char* v, int lo) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > 1000000)
    throw BadArgs(flag + ": expected an integer >= " + std::to_string(lo) + ", found '" + v + "'");
  return static_cast<int>(x);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

/// The kernel driver's version from /proc/driver/nvidia/version ("... Kernel Module  580.95.05 ..."),
/// or "" when that file is absent.
std::string kernel_driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  const auto at = line.find("Kernel Module");
  std::istringstream in(at == std::string::npos ? line : line.substr(at + 13));
  std::string word;
  while (in >> word)
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0]))) return word;
  return "";
}

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

bool wanted(const Options& o, const std::string& section) {
  if (o.only.empty()) return true;
  for (const auto& s : o.only)
    if (s == section) return true;
  return false;
}

void print_plan(bool quick) {
  const GemmAxes axes = gemm_axes(quick);
  std::cout << "plan (" << (quick ? "quick" : "full") << "):\n"
            << "  gemm: " << gemm_grid(axes).size() << " grid shapes (M " << axes.m.front() << ".." << axes.m.back()
            << ", N " << axes.n.front() << ".." << axes.n.back() << ", K " << axes.k.front() << ".." << axes.k.back()
            << ") + " << key_gemm_shapes(quick).size() << " key shapes, per dtype (bf16, fp16, fp8 where supported)\n"
            << "  memory: 4 kernels x " << memory_sizes(quick).size() << " sizes\n"
            << "  attention: " << attention_grid(quick).size() << " shapes\n"
            << "  launch: empty kernel, host launch / GPU per-kernel / sync round trip\n"
            << "  interference: copy kernel on " << interference_sm_counts(132, quick).size()
            << " SM counts (132-SM GPU), NCCL AllReduce beside it with >= 2 GPUs\n"
            << "  collectives: 6 collectives x " << collective_sizes(quick).size()
            << " sizes x group sizes 2, 4, ... (>= 2 GPUs)\n";
  const TimingPlan t = timing_plan(quick);
  std::cout << "  timing: " << t.warmup << " warm-up runs, " << t.repeats << " samples of >= "
            << t.target_sample_s * 1e6 << " us each, median and spread recorded; " << t.heat_up_s
            << " s of large GEMMs before each dtype's grid; SM clock, power and temperature after each GEMM point "
               "(NVML, where the driver has it)\n";
}

Options parse(int argc, char** argv, bool* plan) {
  Options o;
  bool warmup_set = false, repeats_set = false;
  int warmup = 0, repeats = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) throw BadArgs(a + ": expected a value");
      return argv[++i];
    };
    if (a == "--out") o.out = next();
    else if (a == "--quick") o.quick = true;
    else if (a == "--plan") *plan = true;
    else if (a == "--device") o.device = parse_int(a, next(), 0);
    else if (a == "--max-gpus") o.max_gpus = parse_int(a, next(), 1);
    else if (a == "--warmup") { warmup = parse_int(a, next(), 0); warmup_set = true; }
    else if (a == "--repeats") { repeats = parse_int(a, next(), 1); repeats_set = true; }
    else if (a == "--only") {
      std::stringstream ss(next());
      std::string item;
      while (std::getline(ss, item, ',')) {
        bool known = false;
        for (const char* s : kSections) known = known || item == s;
        if (!known)
          throw BadArgs("--only: expected a comma-separated list of gemm, memory, attention, launch, interference, "
                        "collectives, found '" + item + "'");
        o.only.push_back(item);
      }
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      throw BadArgs("unknown argument '" + a + "'");
    }
  }
  o.timing = timing_plan(o.quick);
  if (warmup_set) o.timing.warmup = warmup;
  if (repeats_set) o.timing.repeats = repeats;
  if (!*plan && o.out.empty()) throw BadArgs("--out FILE is required");
  return o;
}

int run(const Options& opt, int argc, char** argv) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cerr << "overlapsim-calibrate-harness: no CUDA GPU on this machine ("
              << (e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                   : std::string("cudaGetDeviceCount found 0 devices"))
              << "); nothing was measured\n";
    return 3;
  }
  if (opt.device >= count) {
    std::cerr << "overlapsim-calibrate-harness: --device " << opt.device << ": this machine has " << count << " GPU(s)\n";
    return 2;
  }
  Context ctx;
  ctx.options = opt;
  ctx.device_count = count;
  HARNESS_CUDA(cudaSetDevice(opt.device));
  HARNESS_CUDA(cudaGetDeviceProperties(&ctx.prop, opt.device));
  HARNESS_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const size_t lt = cublasLtGetVersion();
  char pci[32] = {0};
  cudaDeviceGetPCIBusId(pci, sizeof pci, opt.device);
  ctx.pci_bus_id = pci;

  std::cerr << "overlapsim-calibrate-harness: " << ctx.prop.name << " (device " << opt.device << " of " << count << ", "
            << ctx.prop.multiProcessorCount << " SMs), " << (opt.quick ? "quick" : "full") << " run\n";

  std::ostringstream body;
  JsonWriter w(body);
  w.begin_object();
  w.field("schema", "overlapsim-raw-measurements");
  w.field("version", 1);
  w.key("harness");
  w.begin_object();
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  w.field("command", command);
  w.field("quick", opt.quick);
  w.field("warmup", opt.timing.warmup);
  w.field("repeats", opt.timing.repeats);
  w.field("target_sample_s", opt.timing.target_sample_s);
  w.end_object();
  w.key("provenance");
  w.begin_object();
  w.field("host", hostname());
  w.field("date", utc_now());
  w.field("gpu", ctx.prop.name);
  w.field("gpu_index", opt.device);
  w.field("gpu_count", count);
  w.field("pci_bus_id", pci);
  w.field("sm_count", ctx.prop.multiProcessorCount);
  w.field("compute_capability", std::to_string(ctx.prop.major) + "." + std::to_string(ctx.prop.minor));
  w.field("memory_bytes", static_cast<int64_t>(ctx.prop.totalGlobalMem));
  const std::string kd = kernel_driver_version();
  w.field("driver", kd.empty() ? "CUDA driver API " + cuda_version_string(driver) : kd);
  w.field("cuda_driver", cuda_version_string(driver));
  w.field("cuda_runtime", cuda_version_string(runtime));
  w.field("cublaslt", std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) + "." + std::to_string(lt % 100));
  w.field("nccl", nccl_version());
  w.end_object();

  using Bench = void (*)(Context&, JsonWriter&);
  const std::pair<const char*, Bench> benches[] = {{"launch", bench_launch},       {"gemm", bench_gemm},
                                                   {"memory", bench_memory},       {"attention", bench_attention},
                                                   {"interference", bench_interference}, {"collectives", bench_collectives}};
  for (const auto& [name, fn] : benches) {
    if (!wanted(opt, name)) continue;
    const auto t0 = clock::now();
    std::cerr << "overlapsim-calibrate-harness: " << name << "\n";
    std::ostringstream section;
    JsonWriter sw(section);
    w.key(name);
    try {
      fn(ctx, sw);
      w.raw(section.str());
    } catch (const HarnessError& err) {
      ctx.note(std::string(name) + " skipped: " + err.what());
      cudaGetLastError();  // clear a non-sticky error so the next benchmark can run
      w.begin_object();
      w.field("skipped", err.what());
      w.end_object();
    }
    std::cerr << "overlapsim-calibrate-harness: " << name << " done in "
              << std::chrono::duration<double>(clock::now() - t0).count() << " s\n";
  }
  w.key("notes");
  w.begin_array();
  for (const std::string& n : ctx.notes) w.value(n);
  w.end_array();
  w.field("elapsed_s", std::chrono::duration<double>(clock::now() - start).count());
  w.end_object();

  const std::string tmp = opt.out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) {
      std::cerr << "overlapsim-calibrate-harness: cannot write " << tmp << "\n";
      return 1;
    }
    f << body.str();
    if (!f.flush()) {
      std::cerr << "overlapsim-calibrate-harness: write error on " << tmp << "\n";
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), opt.out.c_str()) != 0) {
    std::cerr << "overlapsim-calibrate-harness: cannot rename " << tmp << " to " << opt.out << "\n";
    return 1;
  }
  std::cerr << "overlapsim-calibrate-harness: wrote " << opt.out << " in "
            << std::chrono::duration<double>(clock::now() - start).count() << " s\n";
  std::cout << "summary (" << ctx.prop.name << ", " << (opt.quick ? "quick" : "full") << " run):\n";
  for (const std::string& line : ctx.summary) std::cout << "  " << line << "\n";
  for (const std::string& n : ctx.notes) std::cout << "  note: " << n << "\n";
  std::cout << std::flush;
  return 0;
}

}  // namespace
}  // namespace overlapsim::harness

int main(int argc, char** argv) {
  using namespace overlapsim::harness;
  bool plan = false;
  Options opt;
  try {
    opt = parse(argc, argv, &plan);
  } catch (const BadArgs& e) {
    std::cerr << "overlapsim-calibrate-harness: " << e.what() << "\n" << kUsage;
    return 2;
  }
  if (plan) {
    print_plan(opt.quick);
    return 0;
  }
  try {
    return run(opt, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "overlapsim-calibrate-harness: error: " << e.what() << "\n";
    return 1;
  }
}
