# Third lease, last call: does adding tcp (its init loads Open MPI's CUDA functions) keep
# device buffers working with btl self,vader and CMA?
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src COMMSCOPE_CACHE=$PWD/.carry/cache COMMSCOPE_WERROR=0
export LD_LIBRARY_PATH=$(python3 -c "import sys; sys.path.insert(0,'bench'); import gpu; print(gpu.library_path())")
DB=$OUT/tcp.db
W="--no-advise --no-probe --quiet --mpi openmpi-cuda --window 64 --timeout 30 --time-cap 0.5"
run() { timeout 45 python3 -m commscope.cli run --db $DB $W "$@"; echo "rc $?"; }
printf 'OMPI_MCA_btl=self,vader,tcp\nOMPI_MCA_btl_tcp_if_include=lo\nOMPI_MCA_btl_vader_single_copy_mechanism=cma\n' > /tmp/tcp.env
for r in 1 2 3; do
  for p in cuda-aware host; do
    run --path $p --bench latency,bw --sizes 1:4M --factor 16 --settings /tmp/tcp.env
    run --path $p --bench latency,bw --sizes 1:4M --factor 16
  done
done
python3 -c "
import sqlite3,json,sys
c=sqlite3.connect(sys.argv[1])
for rid,st,code,err in c.execute('select id,status,exit_code,substr(coalesce(stderr_tail,\'\'),1,600) from runs where status!=\'ok\''): print(rid,st,code,err)
for rid,cfg,bench,size,med,mbs in c.execute('select r.id,r.config,s.bench,s.size_bytes,s.median_us,s.mb_per_s from runs r join results s on s.run_id=r.id order by r.id, s.bench, s.size_bytes'):
    j=json.loads(cfg); print(rid, bench, j['buffer'], j['settings'].get('OMPI_MCA_btl','smcuda'), size, round(med,2), round((mbs or 0)/1000,2))
" $DB
