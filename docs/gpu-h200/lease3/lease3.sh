# Third lease, after the seeds: the questions the second left open (docs/gpu.md).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src COMMSCOPE_CACHE=$PWD/.carry/cache COMMSCOPE_WERROR=0
LD=$(python3 -c "import sys; sys.path.insert(0,'bench'); import gpu; print(gpu.library_path())")
export LD_LIBRARY_PATH=$LD
DB=$OUT/extra.db
W="--no-advise --no-probe --quiet --mpi openmpi-cuda --window 64 --timeout 40 --time-cap 0.5"
run() { timeout 60 python3 -m commscope.cli run --db $DB $W "$@"; echo "rc $?"; }
printf 'OMPI_MCA_btl=self,vader\nOMPI_MCA_btl_vader_single_copy_mechanism=cma\n' > /tmp/novcuda.env
printf 'OMPI_MCA_btl_vader_single_copy_mechanism=cma\n' > /tmp/keep.env
procs() { ps -eo stat,comm | grep -i mps | tr '\n' ' '; python3 -c "import sys; sys.path.insert(0,'src'); from commscope.measure.plan import mps_running; print('mps_running', mps_running())"; }
echo "== A: the cuda-aware and ipc peaks, 8 alternating rounds, with staged"; date -u +%T
for r in 1 2 3 4 5 6 7 8; do
  run --path cuda-aware --bench bw --sizes 64K:4M --factor 4
  run --path ipc --bench bw --sizes 64K:4M --factor 4
  run --path staged --bench bw --sizes 64K:4M --factor 4
done
echo "== B: smcuda (defaults), self+vader with CMA (no smcuda), smcuda kept with vader given CMA; cuda-aware and host; 3 rounds"; date -u +%T
for r in 1 2 3; do
  for p in cuda-aware host; do
    run --path $p --bench latency,bw --sizes 1:4M --factor 16
    run --path $p --bench latency,bw --sizes 1:4M --factor 16 --settings /tmp/novcuda.env
    run --path $p --bench latency,bw --sizes 1:4M --factor 16 --settings /tmp/keep.env
  done
done
if which nvidia-cuda-mps-control >/dev/null; then
echo "== C: how long the MPS daemon takes to go, and the label one second after the quit"; date -u +%T
for r in 1 2; do
  nvidia-cuda-mps-control -d; sleep 1; echo "started"; procs
  run --path cuda-aware --bench latency --sizes 1 --factor 2
  echo quit | nvidia-cuda-mps-control; T0=$(date +%s.%N)
  for i in $(seq 1 20); do python3 -c "import sys; print('t+%.2f' % (float(sys.argv[2]) - float(sys.argv[1])), end=' ')" $T0 $(date +%s.%N); procs; sleep 0.2; done
done
nvidia-cuda-mps-control -d; sleep 1; echo "started"; procs
echo quit | nvidia-cuda-mps-control; sleep 1; echo "1 s after quit"; procs
run --path cuda-aware --bench latency --sizes 1 --factor 2
fi
date -u +%T
python3 -c "
import sqlite3,json,sys
c=sqlite3.connect(sys.argv[1])
for rid,cfg,bench,size,med in c.execute(\"select r.id,r.config,r.bench,s.size_bytes,s.median_us from runs r join results s on s.run_id=r.id order by r.id, s.size_bytes\"):
    j=json.loads(cfg); print(rid, bench, j['buffer'], j.get('settings'), j.get('extra'), size, round(med,2))
" $DB
