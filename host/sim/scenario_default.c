/*
 * scenario_default.c - the built-in scenario of `vnumactl simulate` and `make demo`.
 *
 * A 4-socket host of the kind an admin meets in a rack: 4 nodes x 16 CPUs x 64 GiB, sockets
 * wired as a ring (neighbours 21, the diagonal two hops away at 31).  Ten VMs of mixed sizes
 * and workloads, two arriving and one leaving during the 600-s run: 63 vCPUs on 64 CPUs at the
 * busiest moment and 162 GiB of 256 GiB (63 %) when all are up.  The databases' memory is
 * first-touched on a node of its own choosing (restored from a snapshot, or a previous life
 * on another host), so a balancer has memory to bring home, not only vCPUs to place.
 */
#include "host/sim/scenario.h"

const char scenario_default_json[] =
    "{\n"
    "  \"name\": \"4socket-mixed\",\n"
    "  \"description\": \"A 4-socket host (4 nodes x 16 CPUs x 64 GiB, ring interconnect) "
    "with ten VMs: two databases whose memory starts on a remote node, a 24-vCPU VM with two "
    "guest vNUMA cells, three web servers, a phased analytics VM, an idle jump host, a batch "
    "job arriving at 120 s, a CI runner arriving at 240 s and one web server leaving at "
    "400 s.\",\n"
    "  \"seed\": 42,\n"
    "  \"duration_s\": 600,\n"
    "  \"host\": {\n"
    "    \"nodes\": 4, \"cpus_per_node\": 16, \"memory_per_node_gib\": 64,\n"
    "    \"distances\": [[10, 21, 21, 31], [21, 10, 31, 21], [21, 31, 10, 21], [31, 21, 21, 10]]\n"
    "  },\n"
    "  \"vms\": [\n"
    "    { \"name\": \"db-orders\", \"vcpus\": 8, \"memory_gib\": 32, \"workload\": \"private\",\n"
    "      \"mem_intensity\": 0.7, \"first_touch_node\": 2 },\n"
    "    { \"name\": \"db-billing\", \"vcpus\": 8, \"memory_gib\": 24, \"workload\": \"private\",\n"
    "      \"mem_intensity\": 0.6, \"first_touch_node\": 1 },\n"
    "    { \"name\": \"hpc-wide\", \"vcpus\": 24, \"memory_gib\": 48, \"workload\": \"cells\",\n"
    "      \"mem_intensity\": 0.6,\n"
    "      \"cells\": [ { \"vcpus\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], \"memory_gib\": 24 "
    "},\n"
    "                 { \"vcpus\": [12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23],\n"
    "                   \"memory_gib\": 24 } ],\n"
    "      \"policy\": \"<vnuma:policy xmlns:vnuma='http://vnumad.org/schemas/policy/1.0' "
    "placement='cells'/>\" },\n"
    "    { \"name\": \"web1\", \"vcpus\": 4, \"memory_gib\": 8, \"workload\": \"shared\",\n"
    "      \"mem_intensity\": 0.3, \"util\": 0.5 },\n"
    "    { \"name\": \"web2\", \"vcpus\": 4, \"memory_gib\": 8, \"workload\": \"shared\",\n"
    "      \"mem_intensity\": 0.3, \"util\": 0.5 },\n"
    "    { \"name\": \"web3\", \"vcpus\": 4, \"memory_gib\": 8, \"workload\": \"shared\",\n"
    "      \"mem_intensity\": 0.3, \"util\": 0.5, \"stop_s\": 400 },\n"
    "    { \"name\": \"analytics\", \"vcpus\": 4, \"memory_gib\": 16, \"workload\": \"phased\",\n"
    "      \"mem_intensity\": 0.6, \"phase_s\": 90 },\n"
    "    { \"name\": \"jump-host\", \"vcpus\": 1, \"memory_gib\": 2, \"workload\": \"idle\" },\n"
    "    { \"name\": \"batch-etl\", \"vcpus\": 4, \"memory_gib\": 12, \"workload\": \"private\",\n"
    "      \"mem_intensity\": 0.5, \"start_s\": 120 },\n"
    "    { \"name\": \"ci-runner\", \"vcpus\": 2, \"memory_gib\": 4, \"workload\": \"adverse\",\n"
    "      \"util\": 0.8, \"start_s\": 240 }\n"
    "  ]\n"
    "}\n";
