# After the seeds: two experiments left open by the first lease (docs/gpu.md).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src COMMSCOPE_CACHE=$PWD/.carry/cache COMMSCOPE_WERROR=0
LD=$(python3 -c "import sys; sys.path.insert(0,'bench'); import gpu; print(gpu.library_path())")
export LD_LIBRARY_PATH=$LD
DB=${DB:-$OUT/extra.db}
W="--no-advise --no-probe --quiet --mpi openmpi-cuda --window 64 --timeout 60 --time-cap 0.5"
run() { timeout 100 python3 -m commscope.cli run --db $DB $W "$@"; echo "rc $?"; }
printf 'OMPI_MCA_btl=self,vader\nOMPI_MCA_btl_vader_single_copy_mechanism=cma\n' > /tmp/cma.env
printf 'OMPI_MCA_btl=self,vader\nOMPI_MCA_btl_vader_single_copy_mechanism=none\n' > /tmp/vader.env
echo "== A: host path, smcuda (the image's default) against vader with CMA and vader without, alternating, 3 rounds"
for r in 1 2 3; do
  echo "round $r"; date -u +%T
  run --path host --bench latency,bw --sizes ${SZ:-64K:4M} --factor 4
  run --path host --bench latency,bw --sizes ${SZ:-64K:4M} --factor 4 --settings /tmp/cma.env
  run --path host --bench latency,bw --sizes ${SZ:-64K:4M} --factor 4 --settings /tmp/vader.env
done
if [ -z "$NOMPS" ] && which nvidia-cuda-mps-control >/dev/null; then
echo "== B: MPS on and off alternating, MPS first (the first lease went off first)"
for r in 1 2; do
  nvidia-cuda-mps-control -d && echo "MPS started" && sleep 1; date -u +%T
  run --path staged,cuda-aware --bench latency --sizes 1:1K --factor 1024
  echo quit | nvidia-cuda-mps-control; echo "MPS stopped"; sleep 1; date -u +%T
  run --path staged,cuda-aware --bench latency --sizes 1:1K --factor 1024
done
fi
python3 -m commscope.cli show --db $DB 2>&1 | tail -60
