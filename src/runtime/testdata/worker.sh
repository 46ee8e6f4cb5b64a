#!/bin/sh
# Stand-in GPU worker for the runtime tests (worker protocol v1, see worker_process.h).
# Usage: worker.sh MODE [ARG] -- OUTPUT...   (cwd = task directory)
#   ok                     write each output and a valid manifest
#   abort                  crash with SIGABRT
#   hang                   never finish (the runtime must kill it)
#   garbage                write a manifest that is not JSON
#   exclusive LOCKROOT     fail if another exclusive worker holds this device's lock
#   rendezvous DIR:N       wait (up to 5 s) until N workers have arrived in DIR
mode=$1; shift
arg=
if [ "$1" != "--" ]; then arg=$1; shift; fi
shift  # --
echo "worker $mode device=${CUDA_VISIBLE_DEVICES:-none} dir=$ARGUS_TASK_DIR"
case $mode in
  abort) echo "about to abort" >&2; kill -ABRT $$ ;;
  hang) echo "hanging"; sleep 30; exit 0 ;;
  garbage) echo "this is not json" > manifest.json; exit 0 ;;
  exclusive)
    lock="$arg/dev${CUDA_VISIBLE_DEVICES}"
    mkdir "$lock" 2>/dev/null || { echo "overlap on device $CUDA_VISIBLE_DEVICES"; exit 3; }
    sleep 0.05
    rmdir "$lock" ;;
  rendezvous)
    dir=${arg%:*}; n=${arg#*:}
    touch "$dir/$(basename "$ARGUS_TASK_DIR").here"
    i=0
    while [ "$(ls "$dir" | grep -c '\.here$')" -lt "$n" ]; do
      i=$((i + 1)); [ $i -gt 500 ] && { echo "nobody else arrived"; exit 4; }
      sleep 0.01
    done ;;
esac
outputs=""
for name in "$@"; do
  echo "$mode output $name of $(basename "$ARGUS_TASK_DIR")" > "out_$name"
  outputs="$outputs${outputs:+,}\"$name\": \"out_$name\""
done
printf '{"argus_manifest": 1, "status": "ok", "outputs": {%s}}\n' "$outputs" > manifest.json
