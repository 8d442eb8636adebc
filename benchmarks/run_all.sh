#!/usr/bin/env bash
# Run every ftgui benchmark in turn (about 15 minutes on 2 cores).
#   benchmarks/run_all.sh 2>&1 | tee benchmarks-$(date +%Y%m%d).txt
# Extra arguments are not passed on; run a script by hand to change its options.
set -u
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "missing /usr/bin/time: apt-get install -y time"; exit 1; }
export TF_CPP_MIN_LOG_LEVEL=2
status=0
for script in bench_training_overhead bench_checkpoint bench_gui_start bench_streaming bench_presentation \
              bench_recovery bench_window_recovery bench_window_start proto_checkpoint_write; do
    echo
    echo "######## benchmarks/$script.py"
    started=$(date +%s)
    python "benchmarks/$script.py" 2> >(grep -v -e '^I0000' -e '^WARNING: All log' -e '^E0000' \
        -e 'propagateSizeHints' >&2) || { echo "!! $script failed"; status=1; }
    echo "######## $script took $(( $(date +%s) - started )) s"
done
exit $status
