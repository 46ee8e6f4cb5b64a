#!/usr/bin/env bash
# Runs ON a machine with 2+ GPUs (issue 9; carry .debs): asks argus for the NCCL all-gather's
# communication signals through the system_trace recipe on bench/overlap/nccl_comm.yaml, twice
# (the second must reuse everything). Writes $OUT/comm_query_{1,2}.json; feed the first to
# `argus_overlap --comm-report`. NCCL comes from PyTorch's wheel (CPATH, LIBRARY_PATH).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PATH=/usr/local/cuda/bin:$PATH
N=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])')
export CPATH=$N/include LIBRARY_PATH=$N/lib LD_LIBRARY_PATH=$N/lib:/tmp/argus-deps/usr/lib/x86_64-linux-gnu
t0=$(date +%s)
B=$(ARGUS_BUILD_DIR=/tmp/argus-build-q scripts/gpu/device-build.sh argus argus_system_trace_inject 2>/tmp/b.log) || { tail -20 /tmp/b.log; exit 1; }
echo "build $(($(date +%s)-t0)) s"
for i in 1 2; do
  t0=$(date +%s)
  ARGUS_ALLOW_OUTSIDE_SOURCES=1 timeout 150 $B/argus query --json --program bench/overlap/nccl_comm.yaml --signals comm_chunk_time,launch_overhead,comm_throughput,kernel_timeline --workspace /tmp/ws-q > $OUT/comm_query_$i.json 2> $OUT/comm_query_$i.err
  echo "query $i rc=$? $(($(date +%s)-t0)) s"; tail -3 $OUT/comm_query_$i.err
done
python3 -c "
import json; d=json.load(open('$OUT/comm_query_2.json')); print(d['run']); print({k:(v.get('status'),len((v.get('value') or {}).get('groups',[]))) for k,v in d['signals'].items() if k!='kernel_timeline'})"
