// How a collective runs on the machine: NCCL's ring (or, for Broadcast and Reduce, its
// pipelined chain) and, for AllReduce, NCCL's double binary tree, over several channels, with a
// protocol, lowered to flows.
//
// Ring (AllReduce 2(n−1) steps, AllGather and ReduceScatter n−1 steps): every channel is a ring
// over the group's members carrying 1/C of the buffer; in each step every member sends
// S/(n·C) bytes to its successor. Channel c visits the members of each node in a rotated order
// chosen so that the hop leaving a node and the hop entering the next one use the same NIC
// (rail-aligned) and so that the C channels leave each node through different NICs — NCCL's
// rings on DGX-class machines. Chain (Broadcast from, Reduce to group member 0): the buffer
// is cut into slices of NCCL's step size (512 KiB: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8) and
// pipelined along the channel's ring: Broadcast from the root (member 0) to its ring
// predecessor, Reduce from the root's ring successor to the root (NCCL's ring patterns).
//
// Tree (AllReduce only, as in NCCL ≥ 2.4; NCCL src/graph/trees.cc, src/graph/connect.cc,
// src/device/all_reduce.h runTreeSplit): channel c carries 1/C of the buffer over a tree of
// the group's members. Between nodes it is binary tree c mod 2 of a double binary tree over the
// N nodes (in order of first appearance): tree 0 is the btree of node indices (root 0; a node
// whose lowest set bit is b has parent (i xor b) or 2b, or i xor b when that is out of range),
// tree 1 the same tree mirrored (node i ↦ N−1−i) when N is even, shifted by one (i ↦ i+1 mod
// N) when N is odd, so that a node that is a leaf in one tree is interior in the other. Inside a
// node the tree is a chain through the node's members, rotated by c (intra[0] = member c mod m):
// intra[0] is the node's head and talks to the parent node; a child node's head sends to the
// parent node's intra[1] when it is the parent's first child (smaller index in the tree's own
// numbering), to its intra[0] otherwise (NCCL's balanced tree pattern, so that a node's network
// traffic leaves through two NICs). Each channel's buffer is cut into K slices of NCCL's chunk
// (src/enqueue.cc, from one step of the protocol's buffer, src/init.cc DEFAULT_*BUFFSIZE /
// NCCL_STEPS: Simple 512 KiB, halved down to 128, 64 and 32 KiB while a channel's bytes are less
// than 8, 4 and 1 chunks per level of the tree's depth, m − 1 + log2(N) for m GPUs a node on N
// nodes; LL128 614,400 B of lines, 15/16 of them payload, halved down to 128 and 32 KiB while
// less than 64 s / m and 16 s / m chunks, s = 1 + log2(N) + 0.1 m; LL half of its 64 KiB step;
// NCCL's call's channels count, the plan's sm_blocks; a textbook tree keeps the step). Reduce and broadcast run at once (runTreeSplit): a member sends slice k
// up when it has sent slice k−1 and received slice k from all its children; the root sends slice
// k down once every child's slice k has arrived; a member forwards slice k down to each child
// once it has received it and has sent that child slice k−1. As in the ring, a send keeps its
// sender busy only for the copy (NCCL_STEPS = 8 buffers per connection let it post the next
// slice before the last has been acknowledged): the protocol's step latency delays a slice's
// arrival and overlaps the next send (regression: it was serial with every slice, so a 2-node
// H100 tree of Simple's 512 KiB slices paced at 14 us network latency + 11 us copy per slice,
// 308 GB/s busbw at 4 GiB, now 388; and over 16 A100 nodes the published coreweave curve was
// 23-35% above the model's tree at 4-64 MiB, now within 10%, tests/nccl_validation_test.cpp).
//
// NVLS (NVLink SHARP; NCCL ≥ 2.17 on Hopper NVSwitch systems, src/device/
// all_reduce.h runNvls): an AllReduce inside one node whose GPUs meet at an NVSwitch of compute capability
// ≥ 9.0, the switch reduces. Each GPU's reduce-scatter reads its shard of every member's
// buffer reduced in the switch (multimem.ld_reduce) and its all-gather writes the result to every
// member (multimem.st) — the issuer's own memory too, through the switch — so S bytes cross
// each GPU's NVSwitch port in each direction. It is lowered as a one-step ring (member i sends
// to i+1) of S / η wire bytes, which loads every port by exactly that, with η = NCCL's
// nvlsEfficiency (0.85 Hopper, 0.74 Blackwell) · (C − 1)/C over its C channels (16 on Hopper,
// 24 on Blackwell: src/transport/nvls.cc), as NCCL's tuning model (src/graph/tuning.cc) scales
// NVLS bandwidth, and a step latency of NCCL's NVLS hwLat on NVLink (25 µs, no base latency)
// plus the fill of NCCL's three-stage pipeline: its kernel's scatter, reduce-and-broadcast
// (through the switch) and gather warps (v2.18.5 src/collectives/device/all_reduce.h, NVLS
// AllReduce) each work on one loop of C · n · c bytes at a time (C channels, n heads = the
// node's members, c NCCL's chunk: 128 KiB, cut to 64 KiB below 64 loops of it, 32 KiB below 8,
// 16 KiB below 2: src/enqueue.cc), so the last loop leaves the gather two loops after the
// scatter has finished: ceil(S / L) + 2 loops of L = C · n · c bytes pass at the port's rate,
//   T = 25 µs + ((ceil(S / L) + 2) · L / η) / B_port
// where S fills its loops. A channel moves units of u = n · c bytes at a C-th of that rate, so
// a partial last loop costs its busiest channel's share: channel 0 has ceil(S / L) − 1 whole
// units and a last of min(u, rest), and E = C · (its units + 2 · its largest) bytes pass (for
// S ≤ u: 3 · C · S, so 8 B cost 25 µs, not three loops). Each loop after the first also costs
// CollectiveOptions::nvls_loop_s (a profile's network.nvls_loop_s; H100: 4.0 µs, fitted to a
// published curve: the kernel's per-loop synchronisation of its stages, which NCCL's tuning
// model does not have): T += (ceil(S / L) − 1) · nvls_loop_s.
// One flow per GPU carries S / η; the fill, the other loops' worth and their loop costs, is in
// its step latency at the uncontended share.
// AllGather and ReduceScatter run on NVLS too inside one node (NCCL ≥ 2.19, src/device/
// all_gather.h and reduce_scatter.h, NVLS without registered buffers; at most 32 local ranks;
// across nodes with CollNet's AllGather and ReduceScatter: NVLS across nodes below): an AllGather's kernel broadcasts each
// member's shard through the switch (multimem.st: S / n leaves each GPU, S arrives, its own shard
// included) and gathers it from the switch's copies; a ReduceScatter's scatters its buffer and
// reads each reduced shard through the switch (multimem.ld_reduce: S leaves each GPU, S / n
// arrives). The loaded direction carries S, so they are lowered as the AllReduce (the one-step
// ring of S / η, the same loops, chunks and loop cost), with two pipeline stages instead of
// three: ceil(S / L) + 1 loops pass. The flows load the light direction of each port (S / n on
// hardware) with S / η too: traffic the other way through the port meets more contention than on
// hardware. Not checked against a measurement (no published NVLS AllGather or ReduceScatter
// curve found). NCCL's tuner never ranks them first on a DGX H100 (nccl_tuning.hpp), so they
// run where NCCL_ALGO asks for them (`--algo nvls`, `nccl: {algo: nvls}`, "allgather:nvls").
//
// NVLS_TREE (AllReduce across 2 or more nodes, NCCL ≥ 2.18, src/device/all_reduce.h
// runNvlsTree): every node runs NVLS (the same number, 3 or more, of its GPUs on a Hopper-or-later
// NVSwitch) and reaches the others through its NICs. Inside a node its GPUs scatter into and
// gather from the switch as NVLS does; each of its h heads (one GPU per NIC rail: h = min(GPUs,
// NICs) of a node) reduces its shard S / h across the nodes over NCCL's double binary tree of the
// nodes (dtree_parent; channel c on tree c mod 2, so half of each shard on each tree), reduce up
// and broadcast down at once. The three stages are pipelined; the collective takes
//   T = 25 µs + 2 · ⌊log2 N⌋ · 20.9 µs + max(T_nvls, T_tree, T_kernel)
// (NCCL's tuning model's NVLS_TREE latency: hwLat NVLink 25 µs, network 20.9 µs; no base), with
//   T_nvls   the node's NVLS port time with its pipeline's fill, as above, latency aside;
//   T_tree   the busiest tree hop's S / (2h) over its share of its links while every rail's hops
//            send at once (two nodes: S / h over each NIC each way; more: up to 2 S / h) plus the
//            fill: one chunk of each of the C channels up and down the deepest tree, 2 · D · C · c
//            over the slowest rail (c NCCL's NVLS_TREE chunk: 128 KiB, 64 KiB from 4 nodes on, 64
//            KiB below 4 loops of C · h chunks, 32 KiB below one; src/enqueue.cc,
//            src/transport/nvls.cc);
//   T_kernel S over NCCL's ceiling of the NVLS_TREE kernel as algbw, h · perChMaxNVLSTreeBw
//            (Hopper 57.7 GB/s on 2 nodes, 45.5 on more; Blackwell 96, 80) · n / (2(n − 1)):
//            NCCL's tuner's per-channel busBw limit on its NVLS graph's h channels, which the
//            published 2-node H100 curves meet (462 against 467-481 GB/s at 8 GiB,
//            tests/nccl_validation_test.cpp).
// In flow fidelity NVLS_TREE starts, once every member has reached it, all its stages' flows
// at once (CollectivePlan::bulk): inside each node the NVLS one-step ring of S / η per GPU (as
// NVLS), between the nodes S / (2h) per tree hop of every rail, up and down; the members end
// when the last flow has, or at the closed form, whichever is later — so alone it takes exactly
// the closed form (its flows' own time, without latency, fill or the kernel's ceiling, is less),
// and traffic that slows its flows past that (a DP reduction's NICs shared with pipeline sends)
// delays it. Above kMaxTreeFlows flows it is its closed form, meeting no other traffic. It runs
// on NCCL's 16 (Hopper) or 24 (Blackwell) NVLS channels.
//
// PAT (AllGather and ReduceScatter, NCCL ≥ 2.23: Parallel Aggregated Trees, src/device/
// all_gather.h and reduce_scatter.h runPat, src/include/collectives.h PatAGAlgorithm): where every
// member is on a node of its own (NCCL's ncclPatEnable: "PAT only supports 1 GPU per node"; a DP
// group beside TP 8 on 8-GPU nodes), Simple only, and not for a ReduceScatter that averages
// (CollectiveOptions::reduce_op Avg: NCCL scales it as PreMulSum or SumPostDiv, which its PAT
// kernel does not support; Megatron-LM's average_in_collective, PyTorch's ReduceOp.AVG: the
// ring runs it). Each member's part travels a binomial tree to
// the others, all n trees at once and aggregated, so the exchange has log2 n levels instead of
// the ring's n − 1 steps. Its time is NCCL's tuning model's (src/graph/tuning.cc), for want of
// a published measurement to fit:
//   T = 8 µs + log2i(n) · 14 µs / 3.5 + n · 2.8 µs + max(T_links, S / (0.75 · B))
// (baseLat 8 µs, the tree's network hwLat 14 µs over 3.5 per level, "still a linear part" of
// 2.8 µs per rank; B the busBw of NCCL's graph, tuner_inputs: the rings' summed bottleneck
// shares, so S / (0.75 B) is NCCL's ceiling of the PAT kernel as algbw), with T_links the
// busiest directed link's bytes over its bandwidth while its flows all move at once: at distance
// d = 1, 2, 4, … < n every member sends min(d, n − d) parts of S / n to the member d positions on
// (AllGather; ReduceScatter d positions back), n − 1 parts in all, as in a Bruck exchange.
// Alone on one NIC per GPU with routes that spread evenly (n a power of two on the fat tree),
// T_links = (n − 1)/n · S / B_NIC and the kernel's ceiling binds; where the routes of a level
// pile onto one uplink (65 one-GPU H100 nodes: 44.1 ms at 1 GiB against 30.7 ms over 64) T_links
// binds, which NCCL's tuner, and so Auto's choice, does not see.
// In flow fidelity those flows start at once when every member has reached it and the members
// end when the last has, or at the closed form if later (CollectivePlan::runs_in_bulk, as
// NVLS_TREE): traffic on its NICs (pipeline sends) delays it. Above kMaxPatFlows flows (past 256
// members) each member's n − 1 parts go as one flow to its neighbour instead, which loads every
// NIC as the exchange does and the fabric as a ring; T_links stays the exchange's. It runs on all the
// communicator's channels (NCCL sets no thread count for PAT before its launch loop).
// Auto takes it where NCCL's tuner ranks it before the ring (nccl_model_allgather_algorithm):
// on H100 nodes of one GPU and one 400 Gb/s NIC each, AllGather up to 16 MiB over 16 nodes and up
// to 128 MiB over 128 (`overlapsim collective --op allgather -t topologies/dgx-h100-superpod.yaml
// --override node.gpus.count=1 --override node.count=N`), the ring's LL128 or Simple above.
//
// CollNet (AllReduce across nodes, NCCL's CollNetChain and CollNetDirect: the network's switches
// reduce, InfiniBand SHARP through NCCL's CollNet plugin). It runs where NCCL_COLLNET_ENABLE=1
// (CollectiveOptions::collnet_enable; NCCL's default is off), the fabric's switches reduce
// (Topology::sharp_version, a topology's fabric.sharp: 2 for Quantum HDR, 3 for Quantum-2 NDR),
// over 2 or more nodes of the same number of GPUs, at most 8 (NCCL_MAX_DIRECT_ARITY + 1), with
// Simple, for what SHARP reduces (sharp_reduces: sum, max, min, an average as a sum, of half,
// float, double and 32/64-bit integers; v3 also bfloat16 and 8-bit integers; never fp8);
// CollNetDirect on NVSwitch nodes only (src/enqueue.cc updateCollCostTable, src/graph/tuning.cc).
//   Chain (src/device/all_reduce.h runCollNetChain): on each of the ring graph's C channels a
//     chain through a node's m GPUs starts at the channel's head, the GPU of NIC rail c mod h
//     (h = min(m, NICs)); the reduction goes up the chain, the head's NIC sends the channel's part
//     S / C to the switch and receives the reduced part, and the result goes down the chain. A
//     GPU is the head of some channels, the tail of others, in the middle of the rest, so its
//     NVSwitch port moves 2 (m − 1)/m · S each way; each NIC S / h each way.
//   Direct (runCollNetDirect): every GPU scatters shard i of S / h to head i, which reduces it,
//     sends it through its NIC to the switch, and broadcasts the result to the node's other GPUs:
//     2 (m − 1)/m · S through each port too, S / h through each NIC.
// The switch's reduction is lowered as a flow from each head to the same rail's head of the next
// node (S / C, resp. S / h): each NIC carries what it carries on hardware; the spine links carry
// a ring's traffic, not SHARP's aggregation tree's (not measured). Both run in bulk, as NVLS_TREE:
//   T = NCCL's latency + T_links · (1 + hops · c / P)
// with T_links the busiest directed link's bytes over its bandwidth while every flow moves at
// once; NCCL's latency (its tuning model, no base latency): chain 2 (ppn − 1) · 2.8 µs + 30 µs,
// direct 2 (min(1, ppn − 1) · 3.7 µs + (ppn − 1) · 0.4 µs) + 31 µs, 14 µs on the network for
// one GPU a node; the fill of one chunk c of NCCL's (src/enqueue.cc: the chain's 256 KiB, the
// direct's 512 KiB, halved for small parts) through the pipeline's hops (the chain's 2m, the
// direct's 4) at the pace of a part P (S / C, resp. S / C / h) on that link. Checked against
// coreweave's 8-node H100 CollNetChain curve (tests/nccl_validation_test.cpp: +6.6 to +8.6% from
// 1 GiB, +10.2% at 512 MiB). Auto takes CollNet where NCCL's tuner ranks it first
// (nccl_model_allreduce_algorithm). Not built: SHARP's own aggregation limits.
//
// CollNet AllGather and ReduceScatter (CollNetDirect only, across nodes; NCCL ≥ 2.20, src/device/
// all_gather.h and reduce_scatter.h runCollNetDirect): where CollNet can run (above) for the
// collective (a ReduceScatter's reduction one SHARP has), on SHARP 3 switches (the SHARP
// plugin's ncclCollNet v8 iallgather and ireducescatter, sharp_coll_do_allgather and
// sharp_coll_do_reduce_scatter, Quantum-2), with a NIC for each GPU of a node (src/graph/
// tuning.cc: off where localRanks > the heads). Every GPU is the head of its NIC's rail. An
// AllGather's GPU sends its part S / n through its NIC; the switches return each GPU its rail's
// whole gathered buffer, the N nodes' parts (S / m, its own node's too: phase 2 receives nNodes ·
// countPerRank from the network), which it hands over NVLink to the node's m − 1 others: each
// port carries (m − 1)/m · S each way, each NIC S / m in (and S / n out). A ReduceScatter runs it
// backwards: each GPU hands the part of its input for rail j to GPU j (S / m), which reduces the
// node's and sends its S / m through its NIC; the switches reduce across the nodes and return
// each GPU its part (S / n). Flows: inside a node one per pair of GPUs (S / m), between the nodes
// one from each GPU to the same rail's GPU of the next node carrying S / m, so each NIC's loaded
// direction carries what it carries on hardware (the light one more: traffic the other way meets
// more contention than on hardware). Forced channels C fewer than m run rail j through GPU j mod
// C's NIC. In bulk:
//   T = NCCL's direct latency (2 (min(1, m − 1) · 3.7 µs + (m − 1) · 0.4 µs) + 31 µs)
//       + T_links · (1 + 3 · c / P)
// (c NCCL's direct chunk as for an AllReduce, P = S / (C · m), three stages). NCCL's tuner
// (nccl_model_allgather_s) ranks it with the ring and PAT; over 8 DGX H100 nodes it comes first
// up to 512 MiB and the ring from 1 GiB. Not checked against a measurement (no published curve).
//
// NVLS across nodes (AllReduce, NCCL ≥ 2.18: the NVLS algorithm on a communicator with CollNet,
// "NVLS + SHARP"; src/device/all_reduce.h runNvls with nNodes > 1, src/enqueue.cc skips NVLS
// across nodes without collNetSupport): it runs where CollNet's communicator can (CollNet's
// conditions above but the 8-GPU limit and the NVSwitch-direct one: collnet_unsupported with
// Nvls) and every node can run NVLS. Inside each node the GPUs scatter into and gather from the
// switch as NVLS does; each of the h heads (h = min(m, NICs)) sends its shard S / h through its
// NIC to the network's switches, which reduce across nodes, and receives the reduced shard. On C
// NVLS channels (16 Hopper, 24 Blackwell; fewer where the communicator has fewer, as forced channels
// make it: NCCL_MIN/MAX_NCHANNELS, which NVLS inside one node and NVLS_TREE do not heed) it takes
//   T = 25 µs + 18 µs + max(T_nvls, T_net)
// (NCCL's tuning model's latency for it: hwLat on NVLink plus the network's NVLS hwLat; no base
// latency), with T_nvls the node's NVLS port time with its pipeline's fill, as NVLS alone above
// (loop costs included, latency aside), and T_net the busiest link's bytes while every head's
// shard moves at once, S / h over each NIC each way alone, times 1 + 2 min(C · c, S / h) / (S / h):
// one chunk c of each channel to the switch and back (NCCL's NVLS chunk, nvls_chunk_bytes over C ·
// h chunks a loop, capped at 32 KiB where NCCL's tuner's NVLS algbw is under 150 GB/s: src/
// enqueue.cc). The switch's reduction is lowered as CollNet's, a flow from each head to the next
// node's head on its rail; with each node's NVLS one-step ring of S / η it runs in bulk (as
// NVLS_TREE): alone it takes the closed form, traffic on its NICs or ports delays it. NCCL's tuner
// (nccl_model_allreduce_s, Nvls) ranks it with the other algorithms where CollNet is enabled; over
// 8 DGX H100 nodes it comes first at every size (43 µs at 8 B, the tree 50).
// AllGather and ReduceScatter run on it too (NCCL ≥ 2.20, src/device/all_gather.h and
// reduce_scatter.h runNvls, "NVLS + IB SHARP"), with CollNet's AllGather and ReduceScatter: SHARP 3
// and a NIC for each GPU of a node, as CollNetDirect's (tuning.cc: NVLS's busBw is 0 for them
// without iallgather / ireducescatter or where localRanks > the heads), each node's NVLS of the
// collective (an AllGather's head multicasts its rail's gathered S / m through the switch, S
// arriving at each GPU; a ReduceScatter's reads its rail's part reduced from every GPU), every GPU
// the head of its rail (h = m): the same T with T_nvls the node's NVLS of that collective (its two
// pipeline stages) and S / m over each NIC. NCCL's tuner (nccl_model_allgather_s, Nvls: busBw h ·
// min(intra · η · (h − 1)/h · (ppn − 1)/ppn, inter), not converted, 43 µs) ranks it after
// CollNetDirect: over 8 DGX H100 nodes it comes first below 1 MiB (43 against 44 µs), CollNetDirect
// to 512 MiB, the ring after. Not checked against a measurement (no published multi-node NVLS + SHARP
// curve found).
//
// Protocols (NCCL src/graph/tuning.cc and src/include/device.h): LL moves 8 bytes of data per
// 16 on the wire, LL128 120 per 128, Simple all of them; each has a base latency per collective
// and a latency per step that depends on the algorithm and the hop's hardware (NVLink, PCIe,
// network), checked against NCCL master (tuning.cc ncclTunerConstantsDefaults, 2025):
//   baseLat ring   LL 6.6 µs, LL128 14.0 µs, Simple 8.4 µs
//   baseLat tree   LL 6.8 µs, LL128 14.0 µs, Simple 8.4 µs
//   hwLat NVLink   ring LL 0.6 µs, LL128 1.9 µs,  Simple 3.4 µs;  tree LL 0.6, LL128 1.25, Simple 4.0
//   hwLat PCIe     ring LL 1.0 µs, LL128 2.5 µs,  Simple 5.7 µs;  tree LL 1.0, LL128 1.9,  Simple 4.0
//   hwLat network  ring LL 2.7 µs, LL128 4.0 µs,  Simple 14.0 µs; tree LL 5.0, LL128 8.5,  Simple 14
// A step over a hop takes max(route latency, hwLat) plus its wire bytes over the hop's
// bandwidth. Auto protocol: NCCL's tuner's first (below, "Protocol"), else the least modelled time; LL128
// is not a candidate where a ring hop joins GPUs over PCIe (NCCL enables it by default only up
// to PATH_NVB inside a node), forced it runs anyway.
// Ring protocol limits (NCCL src/graph/tuning.cc llMaxBws, perChMaxRingLL128Bws): LL busBw
// ≤ llMaxBw (one node: Volta 39, Ampere 87.7, Hopper 141, Blackwell 282 GB/s; 2 nodes 39, more
// 20.4 GB/s; on AMD CPUs, Topology::cpu_vendor, 22.5 and 19.0), LL128 busBw ≤ C_nccl · (20, 20,
// 36.7, 40 GB/s), C_nccl NCCL's channels for the call. A ring's busBw is each hop's payload rate
// summed over channels, so every hop's share is capped at llMaxBw / C / ½ (LL) or perCh ·
// C_nccl / C / (120/128) (LL128) wire bytes/s over the plan's C channels, in
// the closed form and, by the step floor, in flow; a chain's hops too.
// Tree protocol limits (the same file: the tree's busBw ≤ C_nccl · perChMaxTreeBw (Simple;
// 26.5, 24.0, 38.7, 70.0 GB/s in one node, less across nodes), ≤ llMaxBw (LL), ≤ C_nccl ·
// perChMaxTreeLL128Bw (LL128; 20, 20, 36.7, 55.6 GB/s in one node), and on NVLink hops ≤ the
// profile's measured LL128 ceiling, ll128_busbw_nvlink_Bps, below): NCCL times a tree
// AllReduce of S bytes as S / (busBw · ½), each member sending S up and S down, so the tree's
// busBw bounds a member's send rate over its two hops of a channel. Each tree hop's rate_cap_Bps
// is busBw / (2 C) over the protocol's wire fraction (the plan's C channels): a bound on the
// pipeline's rate (the sender's occupancy per slice), not on a slice's arrival — LL and LL128
// forward line by line, so the limit does not add up along the leaf-root-leaf path — in the
// closed form and, by the sender's slot, in flow. NCCL's tuner-only efficiency factors (0.92,
// 1/3.8 for LL, 7/9 for LL128 in one node, the tree correction by size) are its ranking's, not
// the plan's. Forced inside one DGX A100 node, the LL128 tree's plateau is then 7/8 of the
// measured 131 GB/s (it was 212 GB/s busbw, above the ring's).
//
// Simple's slices (CollectiveOptions::simple_slice_nvlink_s, a profile's
// network.simple_slice_nvlink_s): a Simple slice ends with a memory fence and a flag the
// receiver polls, which LL and LL128 avoid by carrying their flags in the data (S. Jeaugey,
// NVIDIA/nccl#281); on NVLink, where the SMs move the data themselves, that cost is serial with
// the transfer. NCCL cuts a ring AllReduce, AllGather or ReduceScatter into loops of
// channels · ranks · 2 MiB (the communicator's channels, Topology::nccl_channels, else the
// plan's own), each step of a loop sending its chunk in 2 slices (1 when the chunk is at most
// 32 KiB): simple_slices_per_step. Every NVLink hop of a Simple ring adds slices · cost to its
// step latency, so below one loop (384 MiB over 8 GPUs of a DGX A100) the collective pays a
// constant 2 · steps · cost — the slow approach to the plateau that measured NCCL curves show
// (tests/nccl_validation_test.cpp) — and above it a cost per byte that shrinks with the channel
// count. A chain's NVLink hop adds the cost once to its step latency: NCCL's FIFO of NCCL_STEPS
// slices lets a slice's fence and flag overlap the sender's next slice, so a Broadcast pays it
// n − 1 times along the chain and its plateau is the links' (8x A100, SuperBench's broadcast log,
// where NCCL's tuner runs Simple from ~550 MB: 232.8 GB/s at 8 GiB, the ring AllReduce's plateau;
// with the fence serial per 512 KiB slice the model gave 212.6, −8.7%, and never chose Simple).
// PCIe and network hops keep NCCL's hwLat alone (the proxy, not the SM, drives a network
// send). A tree's NVLink hop adds the cost times NCCL's chunks per channel (its chunk for the
// size, below, over NCCL's channels) over the plan's slices, as serial work of the sender.
// NVLS and point-to-point messages do not pay it (not measured).
//
// Point-to-point (Send/Recv, an AllToAll's pieces): a message pays p2p_extra_latency_s, then
// moves at its route's rate; inside a node over NVLink, where NCCL's thread blocks copy it
// themselves, no faster than its largest chunk (nccl_p2p_split: NCCL's p2p chunking) at what
// one channel copies (CollectiveOptions::p2p_channel_nvlink_Bps, a profile's
// network.p2p_channel_nvlink_Bps): p2p_rate_cap_Bps. The replay holds a capped message's end to
// its start + route latency + bytes / cap in both fidelities (its flow still loads the links at
// their own rate: SimGrid 3.32 cannot bound a host-to-host Comm's rate).
//
// AllToAll as measured (CollectiveOptions::p2p_round_s, a profile's network.p2p_round_s): NCCL
// runs an AllToAll over n ranks as n rounds of its p2p schedule (src/enqueue.cc
// scheduleP2pTasksToPlan: round r sends to rank + r and receives from rank − r, each a work item
// of its own on its channels, up to NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 rounds per work batch).
// Published curves sit a constant time above the pieces' flows: H100, 10 nodes x 8 (80 rounds),
// 305-354 us from 32 to 512 MiB with the flows' rate matching the log's to 3%; one node (8
// rounds), 33 us at 32 MiB. Each member's kernel pays n · p2p_round_s before its pieces leave
// (H100: 4.0 us, the least-squares fit to the 10-node curve; not for a copy-engine AllToAll, nor
// textbook).
//
// LL128 on NVLink as measured (CollectiveOptions::ll128_step_nvlink_s, ll128_busbw_nvlink_Bps; a
// profile's network keys of those names): NCCL's tuning model gives a ring's LL128 step hwLat
// 1.9 us on NVLink and a busbw of min(0.92 · ring bandwidth, channels · perChMaxRingLL128Bw)
// (src/graph/tuning.cc; 221 GB/s in a DGX A100), but published A100 curves at 4-16 MiB, where
// NCCL's tuner runs LL128, climb at ~130-140 GB/s busbw after a ~50 us intercept (40.6 us in the
// model). No NCCL constant gives that rate; the profile carries it as measured: every LL128 step
// of a ring on an NVLink hop adds ll128_step_nvlink_s (seconds) to its step latency, and its
// NVLink hops' shares are capped so that the channels' payload rates sum to at most
// ll128_busbw_nvlink_Bps (bytes/s of busbw: busbw / C / (120/128) wire bytes/s a hop), beside
// NCCL's own caps. Both fidelities read the plan's step latencies and shares, so flow and analytic
// agree. Network and PCIe hops, LL and Simple, chains (Broadcast/Reduce) and the tree keep NCCL's
// figures (not measured). The A100 values are fitted to one log (calibrate/profiles/).
//
// Contention-free closed form (what `analytic` fidelity uses and `flow` must match):
//   ring:  T = baseLat + max over channels of the longest path of the channel's step DAG. On a
//          uniform ring (every hop alike) that is steps · (step latency + wire/bw) exactly. Else
//          member i may send step k at S(i,k) = max(S(i,k−1) + d_i, S(i−1,k−1) + e_{i−1}),
//          S(·,0) = 0, with d_i = wire/bw_i (its hop's occupancy: its next send waits for it)
//          and e_i = step latency_i + wire/bw_i (when the step has arrived at the successor:
//          latency overlaps the sender's next send, as NCCL's NCCL_STEPS-deep FIFO lets it).
//          T − baseLat is the longest path of `steps` edges, each staying at a hop (d) or moving
//          on (e), the last one a move. Long rings pace at max(max d_i, mean e_i): the slowest
//          hop's bandwidth, or NCCL's tuning model's sum of per-step latencies (intra- and
//          inter-node steps each at their own hwLat), whichever is larger.
//   chain: in wave w (0 … n − 1 + K − 2, K slices) every position p with p ≤ w < p + K sends
//          slice w − p; a hop's time in a wave is e = its step latency + wire / (its share of
//          its links among the hops of that wave, all channels), and it keeps its sender busy
//          d = wire / share (a chain's hops have no serial part, Simple's fence included). Per channel, position p sends slice k once slice k has
//          arrived (S(p − 1, k) + e) and its slice k − 1 has left (S(p, k − 1) + d): the step
//          latency overlaps the next send, as for the ring. T = baseLat + the slowest channel's
//          arrival of its last slice at its tail. On hops that share no link:
//          T = baseLat + Σ_p e_p + (K − 1) · max_p d_p; latency-bound (K = 1), the sum of the
//          hops' times along the chain. In flow each slice's flow ends no sooner than at that
//          share (ChainWaves::hop_s) and arrives its step latency later, so flow equals it
//          without other traffic.
//   tree:  T = baseLat + max over channels, over hops h of the channel's tree
//                  [ L(h) + (K − 1) · d_h ],   e_h = lat_h + wire/bw_h,  d_h = serial_h + wire/bw_h,
//          L(h) the longest leaf → root → leaf path through h (sum of its hops' e), d_h the time
//          the hop's sender is busy with a slice (serial_h: Simple's NVLink fence, Hop2::serial_s;
//          else 0): the pipeline recurrence above is a max-plus product whose longest path
//          crosses every hop of one leaf-root-leaf path once and waits K − 1 more slices at one
//          hop, its busiest. With every e_h = e, d_h = d: T = baseLat + 2·D·e + (K − 1)·d, D the
//          depth of the deepest leaf.
// where bw_i is the hop's share of its links when all channels' hops (ring: of a step; tree: all
// of them, up and down, as in the pipeline's steady state) send at once (a GPU's NVLink port
// carries all C channels of a ring inside a node). The tree's flows share a link only in the
// steady state, so where two of its hops share one, `flow` is faster than the closed form while
// the pipeline fills and drains; where none does, both agree exactly.
//
// Channels per size (nccl_tuning.hpp): an op that does not set its channel count runs, for each
// algorithm and protocol considered, on the channels NCCL would use for its size (NCCL
// src/enqueue.cc topoGetAlgoInfo: fewer channels while nBytes < channels · threads · threshold),
// out of CollectiveOptions::channels; the closed form and the flows both use that count. With
// channels sharing a link (a GPU's NVLink port), fewer channels carry more bytes each at a
// larger share: the time is the same; where channels use different links (one NIC each), fewer
// channels use fewer of them. A textbook model keeps the options' count.
//
// Tuning table (CollectiveOptions::tuning, a profile's measured rules): where a rule covers the
// collective, its algorithm replaces Auto and its protocol the automatic protocol (when the op
// runs the rule's algorithm); collectives no rule covers are chosen as below.
//
// NCCL_ALGO and NCCL_PROTO lists (CollectiveOptions::allowed, sim/nccl_selection.hpp; NCCL
// src/graph/tuning.cc ncclTopoTuneModel zeroes the bandwidth of every pair a list disables, so
// src/enqueue.cc topoGetAlgoInfo ranks only the rest): the automatic choice below takes only what
// the lists enable for the collective's kind — across nodes the one NCCL's tuner ranks first among
// them, inside a node the ring or NVLS of least closed form among them, else (no ring) NVLS or
// NCCL's tree (a chain), whichever of those the list leaves has the lesser closed form; PAT and
// a rule's choice only where allowed; the
// protocol (below) among the enabled ones (LL128 everywhere where NCCL_PROTO's row enables it, as
// NCCL's protoEnable 1). Where nothing enabled can run, the ring runs and
// CollectivePlan::fallback says so (NCCL 2.24 and later fail the call; sim/nccl_algorithm_check.hpp
// refuses such a scenario).
//
// Algorithm (CollectiveAlgorithm::Auto; forced CollNet where it cannot run: the ring): AllGather and ReduceScatter inside one node where NVLS
// can run take the one NCCL's tuner ranks first of the ring and NVLS (the ring on every DGX H100
// size; forced channels: the lesser closed form). AllReduce over more than one node runs the algorithm
// NCCL's own tuner ranks first (nccl_model_allreduce_algorithm, nccl_tuning.hpp: its latency and
// bandwidth model with its per-algorithm caps), fed with what NCCL's graph search would find here:
// the communicator's graph channels (Topology::nccl_channels / 2, one per NIC rail; else the
// options' channels) as rings at their bottleneck's share of the links. Inside one node, the ring or, where it can run,
// NVLS, whichever has the lesser closed form (NCCL's tree there is a chain; forcing Tree still
// gives it). Forcing Nvls where it cannot run gives the ring. A textbook model, or forced
// channels, takes the ring or tree of least closed form. Why NCCL's ranking and not the model's
// own across nodes: the model's tree over 2 nodes halves each NIC's traffic and beat the ring by
// 15-20% at 1-4 GiB on DGX A100, but NCCL's tuner has the ring ahead there (its tree ratio 1/2
// against the ring's n / (2(n − 1))) and NCCL runs the ring: the published 2-node ND A100 v4
// curve sits on the ring's NIC bound (tests/nccl_validation_test.cpp; regression: the model's
// tree was 19-22% above it). AllGather and ReduceScatter across nodes take PAT, CollNetDirect or
// NVLS where they can run and NCCL's tuner ranks them first (nccl_model_allgather_algorithm; with
// forced channels: the least closed form), else the ring;
// Broadcast and Reduce always take the ring (NCCL's NCCL_ALGO=tree applies to AllReduce only).
//
// Protocol (CollectiveOptions::protocol_auto, no rule's): an AllReduce, AllGather or
// ReduceScatter runs its ring or tree with the protocol NCCL's tuner ranks first for that
// algorithm (nccl_model_protocol: NCCL picks algorithm and protocol together, as the least of one
// table), inside a node as across nodes; Broadcast and Reduce, forced channels and the textbook
// model take the protocol of least closed form. Across nodes the least closed form had run LL128
// rings where NCCL runs Simple: over 10 DGX H100 nodes an AllGather of 256-512 MiB was 1.6-2.1x
// the published curve's busbw (xxrjun/nccl-tests-cluster), 12% and 10% with the tuner's Simple;
// over 16 DGX A100 nodes an AllReduce of 128 MiB 42% above coreweave's curve, 11% with the
// tuner's LL128 (tests/nccl_validation_test.cpp). Inside a node it had run LL where NCCL's tuner
// ranks LL128 (a 4 MiB AllReduce on one DGX A100, where the A100 profile's LL128 constants were
// fitted as NCCL's tuner runs it) and LL128 where it ranks Simple (one DGX H100's AllGather and
// ReduceScatter at 32-128 MiB); the H100 profile's Simple per-slice cost, fitted at 4.0 us while
// the model ran LL128 below 256 MiB, is refitted to those curves as the tuner runs them (0.625
// us: every size of both within 7.7%).
#pragma once

#include "sim/nccl_selection.hpp"
#include "sim/nccl_tuning.hpp"
#include "sim/schedule.hpp"
#include "sim/topology.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace overlapsim {

const char* to_string(Protocol p);
enum class HopKind : uint8_t { NvLink, Pcie, Network };

struct Profile;
struct LinkEfficiency;

struct Hop2 {
  int src_pos = -1, dst_pos = -1;  ///< group positions
  double bandwidth_Bps = 0;        ///< bottleneck of the route, after link efficiency
  double share_Bps = 0;            ///< what the hop gets while every channel's hop sends at once
                                   ///< (links shared by c hops give each 1/c); the closed form's
  std::vector<int> links;          ///< directed links of the route (2·id + backward)
  double route_latency_s = 0;      ///< sum of the route's link latencies
  HopKind kind = HopKind::NvLink;
  double step_latency_s = 0;       ///< max(route latency, protocol hwLat of this hop kind)
  /// The part of step_latency_s during which the sender is busy as well (a tree's NVLink hop:
  /// NCCL Simple's per-slice fence, serial with the copy; 0 on ring and chain hops), seconds;
  /// the rest of the step latency only delays the slice's arrival, overlapping the sender's
  /// next slice.
  double serial_s = 0;
  /// The protocol's limit on the sender's copy rate over this hop (a tree's hop: NCCL's busBw
  /// limits, header), wire bytes/s: a slice keeps the sender busy at least wire / rate_cap_Bps,
  /// while its arrival still follows the link's share; +inf where no limit applies.
  double rate_cap_Bps = std::numeric_limits<double>::infinity();
};

struct ChannelPlan {
  std::vector<int> order;  ///< group positions in ring (or chain) order
  std::vector<Hop2> hops;  ///< hops[i]: order[i] → order[i+1] (ring: the last one closes the ring)
  int bottleneck = 0;      ///< index of the hop with the least bandwidth (ties: most latency)
  bool even = true;        ///< every hop has the bottleneck's bandwidth
};

/// Whether every hop of the channel has the same route latency, step latency and share.
bool uniform_ring(const ChannelPlan& ch);
/// Contention-free time of channel `ch` as a ring of `steps` steps of `wire_bytes` each, base
/// latency aside, seconds: the longest path of its step DAG (header; steps · e on a uniform
/// ring). O(p · n) for n hops whose latencies and shares repeat with period p (a node's
/// members). REQUIRES: every hop's share_Bps > 0.
double ring_channel_s(const ChannelPlan& ch, double wire_bytes, int steps);

/// One channel's tree (algorithm Tree). Positions are group positions; every member but the root
/// has an up hop (to its parent: reduce) and a down hop (from its parent: broadcast).
struct TreePlan {
  int root = -1;
  std::vector<int> parent;                 ///< by position; -1 for the root
  std::vector<std::vector<int>> children;  ///< by position, in NCCL's order (chain child first)
  std::vector<Hop2> up;                    ///< up[pos]: pos → parent[pos] (root: unused)
  std::vector<Hop2> down;                  ///< down[pos]: parent[pos] → pos (root: unused)
  int multiplicity = 1;                    ///< channels this tree stands for (identical channels
                                           ///< are merged: bytes and shares times multiplicity)
  /// Hop time of a slice of `wire_bytes`, from its send to its arrival: step latency + wire /
  /// share, seconds (e_h in the header).
  static double hop_s(const Hop2& h, double wire_bytes) { return h.step_latency_s + wire_bytes / h.share_Bps; }
  /// How long a slice of `wire_bytes` keeps the hop's sender busy before it may send the next:
  /// serial_s + wire / min(share, rate cap), seconds (d_h in the header).
  static double occupancy_s(const Hop2& h, double wire_bytes) {
    return h.serial_s + wire_bytes / std::min(h.share_Bps, h.rate_cap_Bps);
  }
  /// Contention-free end of each member's part (it has received its last slice and sent all its
  /// own) for K slices of wire_bytes each, seconds from the start, base latency aside; by position.
  /// The last slice carries `last_wire_bytes` (< 0: as the others; CollectivePlan::last_wire_bytes).
  std::vector<double> end_times(int slices, double wire_bytes, double last_wire_bytes = -1) const;
  /// The latest of end_times: the tree's contention-free time (header formula).
  double pipeline_s(int slices, double wire_bytes, double last_wire_bytes = -1) const;
};

/// A chain's waves (collective_plan.hpp header): wave w is when position p sends slice w − p;
/// a hop's time in it is its step latency plus wire over its share of its links among the hops
/// active in that wave. Each channel pipelines its slices over those times as NCCL's FIFO lets
/// it: a position sends slice k once slice k has arrived and its own slice k − 1 has left.
struct ChainWaves {
  /// ends[c][p]: when position p of channel c is done, seconds from the start (base latency
  /// aside): a sender when its last slice's flow is done (route latency + wire over its share
  /// after it was sent), the tail when that slice has arrived (its sender's step latency after).
  std::vector<std::vector<double>> ends;
  /// hop_s[wave_id[w]][c·(n − 1) + p]: the time of position p's hop of channel c in wave w (its
  /// step latency + wire over its share among that wave's hops), seconds; empty where the table
  /// would exceed 4 M cells (distinct waves · hops), and the replay then times the chain by its
  /// closed form.
  std::vector<std::vector<double>> hop_s;
  std::vector<int> wave_id;
  /// The wire time (hop time less its step latency: wire over its share) of hop `h`, position p
  /// of channel c of a chain of n members, in wave w, seconds. REQUIRES: the hop table is kept
  /// and w < wave_id.size().
  double wire_s(const Hop2& h, int c, int p, int n, size_t w) const {
    return hop_s[wave_id[w]][static_cast<size_t>(c) * (n - 1) + p] - h.step_latency_s;
  }
  /// The chain's time, seconds: its slowest channel's tail.
  double chain_s() const {
    double t = 0;
    for (const auto& e : ends) t = std::max(t, e.back());
    return t;
  }
};

/// The waves of a chain of n members sending K slices of `wire` bytes each over the channels
/// `rings` (hops measured; each channel's order is its chain), and each channel's own pipeline
/// over them: slice k leaves position p at S(p, k) = max(S(p, k − 1) + d, S(p − 1, k) + e'), e'
/// the time of p − 1's hop in its wave (step latency + wire / share: when the slice has arrived)
/// and d = serial + wire / share of p's hop in the wave of slice k − 1 (how long that slice kept
/// the sender busy: the latency beyond it overlaps the next send, as NCCL's NCCL_STEPS-deep FIFO
/// lets it). On hops that share no link T = Σ_p e_p + (K − 1) · max_p d_p. O(waves · active
/// hops) time for the pipeline, plus the route length for each hop whose links gain or lose a
/// sender as the window of sending positions slides (only those hops' times are recomputed),
/// O(hops · route length) memory besides the hop table. `share_cap_Bps` caps every hop's share
/// (wire bytes/s: the protocol's bandwidth limit, as for rings). The last slice carries
/// `wire_last` wire bytes (< 0: `wire`; CollectivePlan::last_wire_bytes): its hop and occupancy
/// times are its wave's, their wire part scaled to its bytes. REQUIRES: n >= 2, K >= 1, every
/// ring has at least n − 1 hops, share_cap_Bps > 0, wire_last <= wire.
ChainWaves chain_waves(const Topology& topo, const LinkEfficiency& eff, const std::vector<ChannelPlan>& rings,
                       double wire, int n, int K, double share_cap_Bps = std::numeric_limits<double>::infinity(),
                       double wire_last = -1);

struct CollectivePlan {
  CollectiveKind kind = CollectiveKind::AllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;  ///< any but Auto
  Protocol protocol = Protocol::Simple;
  bool chain = false;           ///< Broadcast/Reduce: pipelined chain from / to the root
  /// What was asked cannot run here and the ring runs instead: a forced algorithm
  /// (CollectiveOptions::algorithm) NCCL does not run for this collective, or, with the
  /// algorithm Auto, none of those NCCL_ALGO's list allows (CollectiveOptions::allowed; NCCL 2.24
  /// and later fail that call, sim/nccl_selection.hpp). False where a measured tuning rule's
  /// choice cannot run and the automatic one is taken.
  bool fallback = false;
  int channels = 1;             ///< channels it runs on (the op's, or NCCL's count for the size)
  /// Thread blocks NCCL's kernel runs on, one SM each (what the replay holds, replay.hpp): the
  /// op's forced channels, else NCCL's launch loop (nccl_launch) over the communicator's
  /// channels — Topology::nccl_channels where the topology states them (DGX A100: 24 inside a
  /// node, 16 across nodes), else CollectiveOptions::channels. The flows run on `channels` rings
  /// either way: channels sharing their links (a GPU's NVSwitch port) take the same time in
  /// any number, and across nodes 8 rings load 8 NICs as NCCL's 16 do.
  int sm_blocks = 1;
  int steps = 0;                ///< ring steps, or slices of a chain or of each tree channel
  int members = 0;
  double step_bytes = 0;        ///< payload per step (tree: per slice; chain: per full slice) per ring/tree, bytes
  double wire_bytes = 0;        ///< step_bytes after protocol overhead, bytes
  /// A chain's or a tree's last slice, payload and wire bytes: what is left of a channel's part
  /// after its steps − 1 full slices, (0, step_bytes], as NCCL's kernels cut a channel's part
  /// into chunks of the chunk size, the last one shorter (src/device/broadcast.h runRing,
  /// all_reduce.h runTreeUpDown: nelem = min(chunkCount, channelCount − elemOffset)). Equal
  /// slices instead made a size one byte past a whole slice take half the fill of that slice's
  /// size: a Broadcast of 262148 B over one DGX A100 took 23.5 µs against 32.4 µs for 262144 B.
  /// 0 in other plans (their steps are alike).
  double last_step_bytes = 0, last_wire_bytes = 0;
  /// The wire bytes of step (slice) k of `steps`.
  double wire_bytes_of(int k) const { return k == steps - 1 && last_wire_bytes > 0 ? last_wire_bytes : wire_bytes; }
  /// wire_bytes_of(k) as a fraction of wire_bytes (1 where that is 0).
  double wire_fraction_of(int k) const { return wire_bytes > 0 ? wire_bytes_of(k) / wire_bytes : 1.0; }
  /// The payload one ring, chain or tree channel moves over all its steps, bytes.
  double channel_bytes() const {
    return last_step_bytes > 0 ? (steps - 1) * step_bytes + last_step_bytes : steps * step_bytes;
  }
  double base_latency_s = 0;
  std::vector<ChannelPlan> rings;  ///< Ring
  std::vector<TreePlan> trees;     ///< Tree (distinct channels; see TreePlan::multiplicity)
  ChainWaves chain_waves;          ///< chain: its waves
  /// NvlsTree: the slowest of its intra-node NVLS, its inter-node tree and NCCL's per-channel
  /// ceiling (header, NVLS_TREE); Pat: the slower of its flows' busiest link and NCCL's kernel
  /// ceiling (header, PAT); seconds. The closed form is base_latency_s plus this.
  double bulk_s = 0;
  /// NvlsTree and Pat (runs_in_bulk): the flows they move at once in flow fidelity (header,
  /// NVLS_TREE and PAT): group positions and wire bytes. A Tree of more than kMaxTreeSliceFlows
  /// per-slice flows: one flow per hop and tree of all its slices' wire bytes (tree_in_bulk).
  struct BulkFlow {
    int src_pos = -1, dst_pos = -1;
    double bytes = 0;
  };
  std::vector<BulkFlow> bulk;

  /// Whether the plan is timed by its closed form with its flows started at once (NVLS_TREE, PAT):
  /// members end when the last of `bulk` has, or at the closed form, whichever is later.
  bool runs_in_bulk() const {
    return algorithm == CollectiveAlgorithm::NvlsTree || algorithm == CollectiveAlgorithm::Pat ||
           (algorithm == CollectiveAlgorithm::Nvls && rings.empty()) ||
           algorithm == CollectiveAlgorithm::CollnetDirect || algorithm == CollectiveAlgorithm::CollnetChain;
  }
  /// Whether a Tree's flows run in bulk in flow fidelity (kMaxTreeSliceFlows): all its hops'
  /// flows at once when every member has reached it, its members ending when the last flow has,
  /// or at their contention-free ends (member_ends_s), whichever is later.
  bool tree_in_bulk() const { return algorithm == CollectiveAlgorithm::Tree && !bulk.empty(); }
  /// Contention-free time of the collective, seconds (the formulas in the header).
  double closed_form_s() const;
  /// Contention-free end of each member's part, seconds, by position: the closed form for every
  /// member of a ring; for a chain, ChainWaves::ends after the base latency for the member at
  /// position p (the latest over channels); for a tree, when that member has received and sent its last slices (the
  /// root and shallow members end before the deepest leaves).
  std::vector<double> member_ends_s() const;
  /// Flows the tree's replay issues (2 per non-root member per slice per tree), 0 for a ring.
  long long tree_flows() const;
  /// Flows a chain's replay issues with every member simulated (one per hop per slice per
  /// channel), 0 for a ring or a tree.
  long long chain_flows() const;
};

/// Most flows a tree AllReduce, an NVLS_TREE or a Broadcast/Reduce chain may issue in flow
/// fidelity (every member's, mirrors included: a tree has no symmetry for a representative to
/// stand for, and a chain's members are simulated), or an AllToAll's simulated members at once; above, it is
/// timed by its closed form like in analytic fidelity, and meets no other traffic.
inline constexpr long long kMaxTreeFlows = 1LL << 14;

/// Most flows a tree AllReduce issues slice by slice in flow fidelity (tree_flows: 2 per non-root
/// member per slice per tree, mirrors included); above, its hops run in bulk (tree_in_bulk): one
/// flow per hop and tree carrying all its slices, started at once, the members ending at the
/// latest of those flows' ends and their contention-free ends, as NVLS_TREE's. Alone, that is
/// the closed form exactly (a hop's flow at its share of its links takes no longer than the
/// pipeline, whose slices add latency, fill and NCCL's rate caps); beside other traffic on its
/// links it is slowed once its flows lose more than that margin. A tree's slices grow with the
/// size (NCCL's chunks), so slice by slice a 48 MiB TP AllReduce of 8 GPUs on 8 channels is
/// thousands of flows and timers, and a training iteration millions: GPT-3 175B on 1,024 A100s
/// with NCCL_ALGO=Tree took 278 s of flow replay slice by slice (scenarios/default.yaml, `run
/// -s megatron --set nccl.algo=tree`).
inline constexpr long long kMaxTreeSliceFlows = 1LL << 10;

/// Most flows a PAT's exchange (n · ceil(log2 n)) is replayed with in flow fidelity; above, its
/// members' parts travel as one flow each to their neighbour (header, PAT). SimGrid re-shares
/// every flow at each end, and the exchange's ends spread where n is not a power of two: one
/// 256 MiB ReduceScatter over 511 one-GPU nodes (5,110 flows) took 2 s of flow replay, over
/// 1,489 (16,379 flows) 155 s at 1 GiB, over 255 (2,040) 0.35 s; 128 (896) less than 0.03 s.
inline constexpr long long kMaxPatFlows = 1LL << 11;

/// Channel `channel`'s tree over the group (header: dtree c mod 2 between nodes, rotated chains
/// inside them); parent and children only, no hops measured. REQUIRES: ranks.size() >= 1.
TreePlan build_tree(const Topology& topo, const std::vector<int>& ranks, int channel);

/// NCCL's double binary tree over `n` nodes (NCCL src/graph/trees.cc, header): parent of node i
/// in tree t (0 or 1), −1 for the root. REQUIRES: n >= 1, 0 <= i < n.
int dtree_parent(int n, int t, int i);
/// Whether node i is tree t's parent's first child (NCCL's child type 0: smaller index in the
/// tree's own numbering). REQUIRES: dtree_parent(n, t, i) >= 0.
bool dtree_first_child(int n, int t, int i);

/// The NCCL communicator a point-to-point message runs on, as NCCL's p2p chunking sees it
/// (nccl_p2p_split).
struct P2pCommunicator {
  int ranks = 2;     ///< nRanks (at least 2)
  int nodes = 0;     ///< nNodes; 0: the nodes of the message's own two GPUs (a pair's communicator)
  int channels = 0;  ///< comm->nChannels (NCCL_MIN/MAX_NCHANNELS); 0: the topology's (p2p_split)
  int local_ranks = 0;  ///< the fewest ranks on one node (local_ranks); 0: the pair's (1 across nodes)
};

/// The communicator of a group of `ranks` (their count, at least 2, and their nodes) with
/// `channels` (0: the topology's).
P2pCommunicator group_communicator(const Topology& topo, const std::vector<int>& ranks, int channels = 0);

/// Channel rings reused across plans (CollectiveOptions::ring_memo): by (group members in order,
/// the chain's kind for a Broadcast or Reduce or −1 for a ring, channels). A 1024-GPU group's
/// 8 rings took 21 M instructions to build (routes measured, shares set; callgrind, `collective
/// --op allreduce` over 128 DGX A100 nodes at 1 GiB), and every size, protocol and tuner input of
/// one group builds the same ones.
struct RingMemo {
  struct Rings {
    std::vector<ChannelPlan> rings;
    bool all_even = true;  ///< every channel's hops have one bandwidth
  };
  std::map<std::tuple<std::vector<int>, int, int>, Rings> by_key;
};

struct CollectiveOptions {
  int channels = 8;  ///< the communicator's channel count (NCCL on DGX A100/H100 opens 8 or more
                     ///< rings for large collectives: one per NIC); an op that does not set its
                     ///< own runs on fewer when NCCL would for its size (nccl_launch)
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// The collective's reduction (Op::reduce_op): a ReduceScatter that NCCL scales (Avg,
  /// PreMulSum) never runs as PAT, as in NCCL (header, PAT).
  ReduceOp reduce_op = ReduceOp::Sum;
  /// The collective's element type (Op::datatype): NVLS reduces only some (nvls_reduces), fp8
  /// reductions need Hopper, and NCCL's tuner relegates an fp8 ring over more than 8 ranks
  /// (schedule.hpp, DataType).
  DataType datatype = DataType::Float32;
  bool protocol_auto = true;
  Protocol protocol = Protocol::Simple;  ///< used when !protocol_auto
  /// NCCL_NVLS_ENABLE: false leaves NVLS and NVLS_TREE out (forced, they run the ring).
  bool nvls_enable = true;
  /// NCCL_PAT_ENABLE: false leaves PAT out (forced, it runs the ring).
  bool pat_enable = true;
  /// NCCL_COLLNET_ENABLE: true lets CollNetDirect and CollNetChain run where the fabric reduces
  /// (Topology::sharp_version); NCCL's default is off (header, CollNet).
  bool collnet_enable = false;
  /// NCCL_ALGO and NCCL_PROTO as lists (sim/nccl_selection.hpp): per collective kind, the
  /// algorithms the automatic choice (algorithm Auto) may take and the protocols it may run
  /// (protocol_auto). Default: every one.
  NcclSelection allowed;
  /// The textbook ring: no base latency, no protocol step latency, Simple's wire bytes — each
  /// step costs exactly its route's latency plus its bytes over the bandwidth.
  bool textbook = false;
  /// Measured algorithm/protocol rules (a profile's tuning table, nccl_tuning.hpp): where one
  /// covers a collective, what the op leaves automatic follows it; empty: the model chooses.
  std::vector<TuningRule> tuning;
  /// Cost of one slice of NCCL's Simple protocol on an NVLink hop, seconds (header; a profile's
  /// network.simple_slice_nvlink_s): 0 leaves NCCL's per-step hwLat alone.
  double simple_slice_nvlink_s = 0;
  /// LL128 on NVLink hops as measured (header; a profile's network.ll128_step_nvlink_s and
  /// network.ll128_busbw_nvlink_Bps): seconds added to each LL128 ring step on an NVLink hop, and
  /// the ring's LL128 busbw ceiling on its NVLink hops, bytes/s. 0: NCCL's hwLat and
  /// perChMaxRingLL128Bw alone.
  double ll128_step_nvlink_s = 0;
  double ll128_busbw_nvlink_Bps = 0;
  /// NVLS as measured (header, NVLS; a profile's network.nvls_loop_s): seconds each loop of the
  /// NVLS kernel after the first adds, 0: none.
  double nvls_loop_s = 0;
  /// What one of NCCL's channels copies of a point-to-point message over NVLink, bytes/s
  /// (p2p_rate_cap_Bps; a profile's network.p2p_channel_nvlink_Bps): 0, no bound.
  double p2p_channel_nvlink_Bps = 0;
  /// An AllToAll as measured (header, AllToAll; a profile's network.p2p_round_s): seconds each
  /// round of NCCL's p2p schedule adds to its kernel, 0: none.
  double p2p_round_s = 0;
  /// The communicator a Send/Recv runs on (p2p_rate_cap_Bps): nccl-tests' sendrecv_perf runs
  /// every rank's pair on one communicator of all of them; a training framework's send and
  /// receive between two ranks on a communicator of those two (PyTorch's ProcessGroupNCCL opens
  /// one per pair for point-to-point), the default.
  P2pCommunicator p2p_comm;
  /// Most per-slice flows a tree AllReduce is replayed with in flow fidelity; above, it runs in
  /// bulk (CollectivePlan::tree_in_bulk). kMaxTreeFlows keeps every tree it can slice by slice.
  long long tree_slice_flows = kMaxTreeSliceFlows;
  /// Where set, the channel rings plan_ring builds (bytes aside: a group's rings at a channel
  /// count) are kept there and reused by later plans; not owned. REQUIRES: every plan made with
  /// it is of one topology and one link efficiency (a PlanCache's, which holds one).
  RingMemo* ring_memo = nullptr;
  /// Takes what a calibration profile says of collectives: its tuning table and its
  /// network.simple_slice_nvlink_s, ll128_step_nvlink_s, ll128_busbw_nvlink_Bps, nvls_loop_s,
  /// p2p_channel_nvlink_Bps and p2p_round_s (the one
  /// place a new such key is read; the link efficiencies are LinkEfficiency::of_profile's).
  void read_profile(const Profile& profile);
  /// Takes what collective `op` says of itself: its algorithm where it forces one, its reduction
  /// and its element type (the one place a new such field of Op is read for planning).
  void take_op(const Op& op) {
    if (op.algorithm != CollectiveAlgorithm::Auto) algorithm = op.algorithm;
    reduce_op = op.reduce_op;
    datatype = op.datatype;
  }
};

/// What CollectiveOptions::take_op reads of `op` (its algorithm, reduction and element type) as
/// one integer, for the caches of plans and predictions to key on beside the op's group, kind,
/// bytes and channels.
inline int take_op_key(const Op& op) {
  return static_cast<int>(op.algorithm) | static_cast<int>(op.reduce_op) << 8 | static_cast<int>(op.datatype) << 16;
}

/// NCCL's Simple slices per step of a ring AllReduce, AllGather or ReduceScatter of `bytes`
/// (NCCL's nBytes) over `ranks` ranks on a communicator of `nccl_channels` channels, summed over
/// a channel's loops (header): 2 per loop of nccl_channels · ranks · 2 MiB, the last loop's 1 when
/// its chunk is at most 32 KiB. REQUIRES: bytes >= 0, ranks >= 1, nccl_channels >= 1.
double simple_slices_per_step(double bytes, int ranks, int nccl_channels);

/// Number of distinct nodes the ranks are on.
int node_count(const Topology& topo, const std::vector<int>& ranks);
/// NCCL's localRanks of a communicator of `ranks`: the fewest of them on one node (NCCL's
/// channel search runs per node and the communicator keeps the least; src/init.cc). 0 for none.
int local_ranks(const Topology& topo, const std::vector<int>& ranks);

/// Plans a collective of `bytes` (NCCL buffer size per rank, schedule.hpp) over `ranks`, with
/// opt.algorithm (Auto: the header's choice; Tree for a collective other than AllReduce: the
/// ring, as NCCL does). AllToAll is not planned here (it is point-to-point; see replay.hpp).
/// REQUIRES: kind != AllToAll; ranks.size() >= 1; nccl_has_kernel(kind, opt.datatype, the GPUs'
/// compute capability).
CollectivePlan plan_collective(const Topology& topo, const LinkEfficiency& eff, const std::vector<int>& ranks,
                               CollectiveKind kind, double bytes, int channels_wanted,
                               const CollectiveOptions& opt);

/// Why NCCL cannot run algorithm `alg` for a `kind` over `ranks` with `opt` (its reduction, element
/// type, switches such as nvls_enable and collnet_enable, forced protocol, NCCL_PROTO's list) and
/// `channels_forced` channels (0: NCCL's count), in words: the first of the header's conditions
/// that fails ("NVLS needs 3 or more GPUs, found 2", "SHARP 2 (the topology's fabric.sharp) does
/// not reduce bfloat16 (SHARP 3 does)"); "" where it can run (the ring always can). The notes of
/// a forced algorithm that fell back (`overlapsim collective --algo`, `run` with nccl.algo) say this.
std::string algorithm_unavailable_reason(const Topology& topo, const std::vector<int>& ranks, CollectiveKind kind,
                                         int channels_forced, const CollectiveOptions& opt, CollectiveAlgorithm alg);

/// Whether NCCL has a kernel for `kind` of `t` elements on GPUs of compute capability
/// `compute_capability` (e.g. 80, 90): every one but an fp8 reduction (AllReduce,
/// ReduceScatter, Reduce) below 9.0 (src/device/generate.py required_cuda, NCCL 2.24 and later).
bool nccl_has_kernel(CollectiveKind kind, DataType t, int compute_capability);

/// NCCL_P2P_LL_THRESHOLD's default (src/enqueue.cc): point-to-point messages up to this many
/// bytes use LL, larger ones Simple.
inline constexpr double kP2PLLThresholdBytes = 16384;

/// Latency a point-to-point message pays beyond its route's own, seconds. NCCL runs a send/recv
/// (and an AllToAll, one group of them) as one kernel moving data over one hop, so a message
/// pays what NCCL's tuning model (src/graph/tuning.cc) charges a one-step ring of its protocol:
/// baseLat + max(route latency, hwLat of the hop's kind) − route latency, the protocol LL up to
/// NCCL_P2P_LL_THRESHOLD (16 KiB, src/enqueue.cc) and Simple above (the wire bytes are not
/// changed). A copy-engine transfer (an op's num_sm 0: TransformerEngine's userbuffers,
/// cudaMemcpyAsync) pays `copy_engine_s` (the profile's launch overhead) instead. 0 for a
/// textbook model (CollectiveOptions::textbook) or src == dst.
double p2p_extra_latency_s(const Topology& topo, int src, int dst, double bytes, bool copy_engine,
                           double copy_engine_s, bool textbook = false);
/// The same from the route's kind (collective_plan.hpp measure_hop: Network if it crosses a
/// network link, else Pcie if a PCIe/UPI one, else NvLink) and the sum of its link latencies
/// (seconds), for a src ≠ dst.
double p2p_extra_latency_s(HopKind kind, double route_latency_s, double bytes, bool copy_engine,
                           double copy_engine_s, bool textbook);

/// How NCCL splits a point-to-point message of `bytes` from GPU `src` to GPU `dst` of one node
/// over NVLink on communicator `comm` (nccl_p2p_split). With L = the pair's NVLinks (its path's
/// bandwidth over 25 GB/s per link): the communicator's channels are comm.channels, else the
/// topology's (Topology::nccl_channels over comm's nodes), else NCCL's ring search over the
/// port, 2 · min(16, L) (A100 24, H800 16, H100 32); on one node 2 · L channels per peer and the
/// 512 KiB NVLink chunk where every pair of the node is NVLink (128 KiB otherwise), across nodes
/// NCCL_NCHANNELS_PER_NET_PEER's 2 channels per peer and the 128 KiB network chunk for every
/// peer. On one DGX A100 or H100 with 8 ranks: 4 channels up to 64 MiB, 8 at 128 MiB, 16 from
/// 256 MiB; a communicator over 2 or more DGX nodes: 2 channels of 128 KiB chunks.
/// REQUIRES: src and dst in one node; comm.ranks >= 2.
NcclP2pSplit p2p_split(const Topology& topo, int src, int dst, double bytes, const P2pCommunicator& comm);
/// NCCL 2.18.5's channel base of a message between `self` and `peer` on a communicator of
/// `ranks` (src/include/channel.h ncclChannelComputeBase): with s = the peer's local index minus
/// self's (a send; self's minus the peer's for a receive), mod the most ranks on one node, and d
/// the node distance likewise (nodes in their order of first appearance in `ranks`), base = s on
/// one node, d + s / 8 across nodes; its parts run on channels (mirror(base mod P) + c) mod P
/// (nccl_alltoall_kernel_channels). A send to the next rank and a receive from the previous
/// share a base; a send to the previous has another. REQUIRES: self and peer in ranks.
int nccl_p2p_base(const Topology& topo, const std::vector<int>& ranks, int self, int peer, bool send);
/// Channels (thread blocks, one SM each) of one member's NCCL kernel for an AllToAll of `bytes`
/// per rank over `ranks` on communicator `comm` (its ranks and nodes): nccl_alltoall_kernel_channels
/// over the group's most ranks on one node, comm's nodes, and p2p_split of a piece (bytes / n)
/// between the first two ranks. 1 for a group of one. REQUIRES: ranks non-empty; comm as p2p_split.
int alltoall_kernel_channels(const Topology& topo, const std::vector<int>& ranks, double bytes,
                             const P2pCommunicator& comm);
/// The most a point-to-point message of `bytes` from `src` to `dst` moves per second, bytes/s:
/// inside a node over NVLink, where NCCL's thread blocks copy the data themselves, each of its
/// channels copies its chunk at opt.p2p_channel_nvlink_Bps (a profile's
/// network.p2p_channel_nvlink_Bps; fitted to a published sendrecv_perf curve per GPU,
/// calibrate/profiles/), so the message takes its largest chunk's time: the rate is
/// p2p_channel_nvlink_Bps · bytes / p2p_split(...).chunk_bytes (its channels times the rate where
/// the chunks are equal). +inf elsewhere, for a copy-engine transfer, an empty message, a
/// textbook model, src == dst, or where the profile has no such figure.
double p2p_rate_cap_Bps(const Topology& topo, int src, int dst, double bytes, bool copy_engine,
                        const P2pCommunicator& comm, const CollectiveOptions& opt);

/// Payload bytes a member receives in the collective, summed over channels (for conservation
/// tests). Ring and chain: every member alike. Tree: the mean over members — a member receives
/// each slice once from its parent and once from each child, so over the group 2(n−1) channel
/// buffers arrive and the mean is 2(n−1)/n · S, the ring's figure. CollNet: the mean of what
/// its flows deliver, (2m − 1)/m · S for m GPUs a node in both (header, CollNet; the switch's
/// result to a head counted as a flow).
double received_bytes_per_rank(const CollectivePlan& p);
/// Payload bytes group member `pos` receives in a tree AllReduce: (children + 1, root: children)
/// times the channel's bytes, summed over channels. REQUIRES: p.algorithm == Tree.
double tree_received_bytes(const CollectivePlan& p, int pos);

}  // namespace overlapsim
