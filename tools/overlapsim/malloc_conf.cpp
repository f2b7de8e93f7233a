// jemalloc's options for the overlapsim binary, read by jemalloc before main (its documented
// compile-time configuration: the `malloc_conf` global of the executable; jemalloc(3), "TUNING";
// the MALLOC_CONF environment variable is read after it and overrides it).
//
// thp:always asks the kernel for transparent huge pages for jemalloc's extents (MADV_HUGEPAGE;
// it matters where /sys/kernel/mm/transparent_hugepage/enabled is "madvise", as on Debian's
// default kernels). A replay builds its state of every op afresh (tens of MB over the default
// scenario's three replays), and first touching that memory one 4 KiB page at a time was half of
// an analytic replay: `overlapsim run scenarios/default.yaml --strategy megatron --fidelity
// analytic --timings` spent 19 ms in the replay engine with 4 KiB pages and 9.6 ms with huge
// pages; a flow replay's time did not change (0.64 s either way, best of 5).
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's.
extern const char* malloc_conf;
const char* malloc_conf = "thp:always";
}
