#!/usr/bin/env python3
"""Writes the nccl-tests logs of this folder (test inputs of tests/calibrate_test.cpp).

The logs are nccl-tests' stdout, printed with nccl-tests' own format strings, copied below from
NVIDIA/nccl-tests (https://github.com/NVIDIA/nccl-tests):
  * "2.19" format: src/util.cu at NCCL_TESTS_VERSION 2.19.6 (writeDeviceReport, writeResultHeader,
    writeBenchmarkLinePreamble, writeBenchmarkLineBody with getFloatStr, writeResultFooter);
  * "2.13" format: src/common.cu at commit d313d20 ("Update NCCL tests", 2022-09-20) and a0a1491
    (AlltoAll in-place #wrong printed as N/A): root column, #wrong column, rank lines with Group;
  * "2.11" format: src/common.cu and src/sendrecv.cu at commit f773748 ("Resync with NCCL 2.11",
    2021-09-13): no root column (and no redop column for SendRecv), an "error" column printed
    with "%5.0le", rank lines without Group.
The numbers are not measurements: times follow t(S) = alpha + S*f(n)/busbw (nccl-tests' bus
bandwidth factor f, doc/PERFORMANCE.md) with a small deterministic ripple, so that the tests
know what the importer must recover. algbw = S/t, busbw = algbw*f and the footer's average are
computed as nccl-tests computes them. NCCL INFO lines follow NCCL's debug format
("host:pid:tid [dev] NCCL INFO ...", src/debug.cc; "NCCL_ALGO set by environment to %s",
src/graph/tuning.cc).

Run from this folder: python3 make_logs.py
"""
import math

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
BUS = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]


def factor(coll, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
            "alltoall": (n - 1) / n, "sendrecv": 1.0, "broadcast": 1.0}[coll]


def model_us(coll, n, size, alpha_us, busbw_gbs, i, inplace):
    ripple = 1 + 0.015 * math.sin(1.7 * i + (0.9 if inplace else 0.0))
    return (alpha_us + size * factor(coll, n) / (busbw_gbs * 1e3)) * ripple


def float_str(v, width):  # getFloatStr, nccl-tests 2.19 src/util.cu
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        s = fmt % (width, v)
        if len(s) <= width:
            return s
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, v)


def time_str_old(us):  # src/common.cu before 2.17
    if us >= 10000.0:
        return "%7.0f" % us
    if us >= 100.0:
        return "%7.1f" % us
    return "%7.2f" % us


def rows(coll, n, sizes, alpha, bw, elt=4):
    out = []
    for i, s in enumerate(sizes):
        count = s // elt
        if coll in ("all_gather", "reduce_scatter", "alltoall"):
            param = count // n
            size = param * n * elt
        else:
            param, size = count, s
        halves = []
        for inplace in (False, True):
            t = model_us(coll, n, size, alpha, bw, i, inplace)
            algbw = size / 1e9 / (t * 1e-6)
            halves.append((t, algbw, algbw * factor(coll, n)))
        out.append((size, param, halves))
    return out


def avg_busbw(rs):
    v = [h[2] for _, _, hs in rs for h in hs]
    return sum(v) / len(v)


def write_219(path, prog, coll, n, hosts, gpu, sizes, alpha, bw, redop, typ="float", wrong=None, lines_before=()):
    rs = rows(coll, n, sizes, alpha, bw)
    o = []
    o.append("# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n")
    o.append("# Collective test starting: %s\n" % prog)
    o.append("# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d "
             "validation: %d graph: %d unalign: %d\n" % (1, n // len(hosts), sizes[0], sizes[-1], 2, "factor", 1, 20, 1, 1, 0, 0))
    o.append("#\n")
    o.append("# Using devices\n")
    for r in range(n):
        host = hosts[r * len(hosts) // n]
        dev = r % (n // len(hosts))
        o.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n"
                 % (r, 0, 48211 + r * len(hosts) // n, host, dev, 0, BUS[dev], 0, gpu))
    o.extend(lines_before)
    o.append("#\n")
    o.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n" % ("", "", "", "", ""))
    o.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n"
             % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, ""))
    o.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n"
             % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, ""))
    for i, (size, count, halves) in enumerate(rs):
        line = "%12li  %12li  %8s  %6s  %6s" % (size, count, typ, redop, "%6i" % -1)
        for h, (t, a, b) in enumerate(halves):
            w = wrong(i, h) if wrong else 0
            line += "  %7s  %6s  %6s  %6g" % (float_str(t, 7), float_str(a, 6), float_str(b, 6), w)
        o.append(line + "\n")
    o.append("# %-20s : %d %s\n" % ("Out of bounds values", 0, "OK"))
    o.append("# %-20s : %g %s\n" % ("Avg bus bandwidth", avg_busbw(rs), ""))
    o.append("#\n")
    o.append("# Collective test concluded: %s\n" % prog)
    o.append("\n")
    open(path, "w").write("".join(o))


def write_213(path, coll, n, hosts, gpu, sizes, alpha, bw, redop, typ="float", inplace_na=False, info=()):
    rs = rows(coll, n, sizes, alpha, bw)
    per_host = n // len(hosts)
    o = list(info)
    o.append("# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: %d "
             "validation: %d graph: %d\n" % (1, 1 if len(hosts) > 1 else n, sizes[0], sizes[-1], 2, "factor", 5, 20, 1, 1, 0))
    o.append("#\n")
    o.append("# Using devices\n")
    for r in range(n):
        host = hosts[r // per_host]
        dev = r % per_host
        pid = 70110 + r if len(hosts) > 1 else 70110
        o.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n" % (r, 0, pid, host, dev, BUS[dev], gpu))
    o.append("#\n")
    o.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n" % ("", "", "", "", ""))
    o.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n"
             % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"))
    o.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
             % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    for size, count, halves in rs:
        line = "%12li  %12li  %8s  %6s  %6s" % (size, count, typ, redop, "%6i" % -1)
        for h, (t, a, b) in enumerate(halves):
            if h == 1 and inplace_na:
                line += "  %7s  %6.2f  %6.2f  %5s" % (time_str_old(t), a, b, "N/A")
            else:
                line += "  %7s  %6.2f  %6.2f  %5g" % (time_str_old(t), a, b, 0)
        o.append(line + "\n")
    o.append("# Out of bounds values : %d %s\n" % (0, "OK"))
    o.append("# Avg bus bandwidth    : %g %s\n" % (avg_busbw(rs), ""))
    o.append("#\n")
    o.append("\n")
    open(path, "w").write("".join(o))


def write_211_sendrecv(path, n, host, gpu, sizes, alpha, bw):
    rs = rows("sendrecv", n, sizes, alpha, bw)
    o = []
    o.append("# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d validation: %d \n"
             % (1, n, sizes[0], sizes[-1], 2, "factor", 5, 20, 1))
    o.append("#\n")
    o.append("# Using devices\n")
    for r in range(n):
        o.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s\n" % (r, 5121, host, r, BUS[r], gpu))
    o.append("#\n")
    o.append("# %10s  %12s  %8s            out-of-place                       in-place          \n" % ("", "", ""))
    o.append("# %10s  %12s  %8s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
             % ("size", "count", "type", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"))
    o.append("# %10s  %12s  %8s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
             % ("(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    for size, count, halves in rs:
        line = "%12li  %12li  %8s" % (size, count, "float")
        for t, a, b in halves:
            line += "  %7s  %6.2f  %6.2f  %5.0e" % (time_str_old(t), a, b, 0.0)
        o.append(line + "\n")
    o.append("# Out of bounds values : %d %s\n" % (0, "OK"))
    o.append("# Avg bus bandwidth    : %g %s\n" % (avg_busbw(rs), ""))
    o.append("#\n")
    o.append("\n")
    open(path, "w").write("".join(o))


def pow2(lo, hi):
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


if __name__ == "__main__":
    host = "dgx-h100-01"
    # 8 x H100 in one node, nccl-tests 2.19 output: AllReduce (alpha 18 us, busbw 360 GB/s).
    write_219("all_reduce_perf_8xh100.log", "all_reduce_perf", "all_reduce", 8, [host], H100, pow2(8, 8 << 30), 18.0, 360.0, "sum")
    # AllGather, nccl-tests 2.13 output with NCCL_DEBUG=INFO lines and NCCL_ALGO=Ring.
    info = ["%s:70110:70110 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.11<0>\n" % host,
            "%s:70110:70110 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n" % host,
            "%s:70110:70145 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n" % host,
            "%s:70110:70145 [0] NCCL INFO comm 0x55d0c1e0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init COMPLETE\n" % host]
    write_213("all_gather_perf_8xh100.log", "all_gather", 8, [host], H100, pow2(1024, 1 << 30), 12.0, 370.0, "none", info=info)
    # ReduceScatter over 2 nodes x 8 GPUs (mpirun -np 16, -g 1), nccl-tests 2.13 output.
    write_213("reduce_scatter_perf_2x8xh100.log", "reduce_scatter", 16, ["dgx-h100-01", "dgx-h100-02"], H100,
              pow2(4096, 4 << 30), 45.0, 47.0, "sum")
    # AlltoAll, nccl-tests 2.13 output (in-place #wrong printed as N/A).
    write_213("alltoall_perf_8xh100.log", "alltoall", 8, [host], H100, pow2(1024, 1 << 30), 25.0, 330.0, "none", inplace_na=True)
    # SendRecv, nccl-tests 2.11 output (no root or redop column, "error" column).
    write_211_sendrecv("sendrecv_perf_8xh100.log", 8, host, H100, pow2(8, 1 << 30), 8.0, 230.0)
    # An A100 AllReduce (2.13 format): importing it with the H100 logs must fail.
    write_213("all_reduce_perf_8xa100.log", "all_reduce", 8, ["dgx-a100-07"], A100, pow2(8, 1 << 30), 22.0, 230.0, "sum")
    # nccl-tests found wrong results in two rows (#wrong > 0): those halves must be left out.
    write_219("all_reduce_perf_wrong.log", "all_reduce_perf", "all_reduce", 8, [host], H100, pow2(1 << 20, 64 << 20),
              18.0, 360.0, "sum", wrong=lambda i, h: 1024 if (i == 2 and h == 1) or i == 4 else 0)
