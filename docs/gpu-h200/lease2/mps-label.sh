# Second call: after the seeds under MPS, is the MPS label right once the daemon quits?
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src COMMSCOPE_CACHE=$PWD/.carry/cache COMMSCOPE_WERROR=0
LD=$(python3 -c "import sys; sys.path.insert(0,'bench'); import gpu; print(gpu.library_path())")
export LD_LIBRARY_PATH=$LD
DB=$OUT/extra2.db
W="--no-advise --no-probe --quiet --mpi openmpi-cuda --window 64 --timeout 60 --time-cap 0.5"
run() { timeout 100 python3 -m commscope.cli run --db $DB $W "$@"; echo "rc $?"; }
procs() { ps -eo pid,ppid,stat,comm | grep -i mps; python3 -c "import sys; sys.path.insert(0,'src'); from commscope.measure.plan import mps_running; print('mps_running', mps_running())"; }
echo "== PID 1:"; ps -o pid,comm -p 1
echo quit | nvidia-cuda-mps-control; sleep 2; echo "== after quit"; procs; date -u +%T
run --path staged,cuda-aware --bench latency --sizes 1:1K --factor 1024
nvidia-cuda-mps-control -d; sleep 1; echo "== started"; procs; date -u +%T
run --path staged,cuda-aware --bench latency --sizes 1:1K --factor 1024
echo quit | nvidia-cuda-mps-control; sleep 2; echo "== after quit"; procs; date -u +%T
run --path staged,cuda-aware --bench latency --sizes 1:1K --factor 1024
python3 -c "
import sqlite3,json,sys
c=sqlite3.connect(sys.argv[1])
for rid,cfg,size,med in c.execute(\"select r.id,r.config,s.size_bytes,s.median_us from runs r join results s on s.run_id=r.id order by r.id, s.size_bytes\"):
    j=json.loads(cfg); print(rid, j['buffer'], j.get('extra'), size, round(med,2))
" $DB
