/* Every field of a result line, declared once.  record.c writes them in
 * this order, `cs-core --list --json` lists them ("fields"), and Python
 * builds from that list its Result, the store's columns, the raw export's
 * columns and the keys a point's runs combine (src/commscope/store/records.py
 * reads src/commscope/core_facts.json, a copy of the list).  A new field is
 * one line here, and the copy rewritten (python -m tests.core_facts_copy).
 *
 * X(name, key, kind, how, when, value):
 *   name   the field's name in Python, and its column's in the store
 *   key    its key in the line; "a.b" is key b of an object a (the fields of
 *          one object stand together, and the object is written when one of
 *          them is)
 *   kind   how it is written and read: str (a string, "" where absent),
 *          text, opt_str (a string or nothing), primary (a figure's name),
 *          int, opt_int (a whole number, or nothing), num (a number, null
 *          where not finite), bool, and raw, json (each written by a function
 *          of its own, its value)
 *   how    what the store makes of it, in words Python reads: "required" (a
 *          line without it is bad), "time" or "rate" (a point's runs combine
 *          it by their median, as a time or a rate), "column=C" (its store
 *          column is C; "column=-": kept in the record file only)
 *   when   whether this line carries it
 *   value  its value, from r (the cs_result), s (its stats), raw (whether
 *          the samples were asked for) */
#ifndef CS_FIELDS_H
#define CS_FIELDS_H

#define CS_RESULT_FIELDS(X)                                                                     \
  X(bench, "bench", str, "required", 1, r->bench->name)                                        \
  X(group, "group", str, "column=-", 1, r->bench->group)                                       \
  X(metric, "metric", str, "column=-", 1, r->bench->metric)                                    \
  X(size_bytes, "size_bytes", int, "required", 1, (long)r->size)                               \
  X(np, "np", int, "required", 1, r->np)                                                       \
  X(valid, "valid", bool, "required", 1, r->valid)                                             \
  X(n_samples, "n_samples", int, "required", 1, s->n)                                          \
  X(batch, "batch", int, "required", 1, r->batch)                                              \
  X(ops_per_rep, "ops_per_rep", num, "column=-", 1, r->ops_per_rep)                            \
  X(n_iters, "n_iters", int, "required", 1, s->n * r->batch)                                   \
  X(median_us, "median_us", num, "", 1, s->median)                                             \
  X(mean_us, "mean_us", num, "time", 1, s->mean)                                               \
  X(min_us, "min_us", num, "time", 1, s->min)                                                  \
  X(max_us, "max_us", num, "time", 1, s->max)                                                  \
  X(p5_us, "p5_us", num, "time", 1, s->p5)                                                     \
  X(p95_us, "p95_us", num, "time", 1, s->p95)                                                  \
  X(ci_lo_us, "ci_lo_us", num, "", 1, s->ci_lo)                                                \
  X(ci_hi_us, "ci_hi_us", num, "", 1, s->ci_hi)                                                \
  X(ci_us, "ci_us", num, "", 1, (s->ci_hi - s->ci_lo) / 2.0)                                   \
  X(mb_per_s, "mb_per_s", num, "rate", 1, cs_result_mbps(r))                                   \
  X(rate_per_s, "rate_per_s", num, "rate", 1, cs_result_rate(r))                               \
  X(converged, "converged", bool, "", 1, r->converged)                                         \
  X(stop, "stop", str, "", 1, r->stop)                                                         \
  X(error, "error", text, "", !r->valid, r->why)                                               \
  X(noise_valid, "noise.valid", bool, "column=-", 1, r->noise.valid)                           \
  X(other_cpu_s, "noise.other_cpu_s", num, "", 1, r->noise.other_cpu_s)                        \
  X(steal_s, "noise.steal_s", num, "", 1, r->noise.steal_s)                                    \
  X(wall_s, "noise.wall_s", num, "", 1, r->noise.wall_s)                                       \
  X(load1, "noise.load1", num, "column=-", 1, r->noise.load1)                                  \
  X(elapsed_s, "elapsed_s", num, "column=-", 1, r->elapsed_s)                                  \
  X(busbw_mb_per_s, "busbw_mb_per_s", num, "rate", 1, cs_result_busbw(r))                      \
  X(timing, "timing", str, "column=-", r->bench->timing == CS_TIME_MAX,                        \
    "barrier, max over ranks")                                                                 \
  /* collectives: the mean of per-iteration rank averages (OSU's figure) */                     \
  X(mean_rank_avg_us, "mean_rank_avg_us", num, "time", r->bench->timing == CS_TIME_MAX,       \
    r->mean_rank_avg)                                                                          \
  X(root, "root", opt_int, "", r->bench->rooted, r->root)                                      \
  X(equiv_sends, "equiv_sends", opt_int, "", r->bench->equiv_sends != NULL,                    \
    r->bench->equiv_sends ? r->bench->equiv_sends(r->np) : 0)                                  \
  X(equiv_of, "equiv_of", opt_str, "", r->bench->equiv_of != NULL, r->bench->equiv_of)         \
  /* the cache-line floor just before this record's samples */                                  \
  X(floor_ns, "floor_ns", num, "", 1, r->floor_ns)                                             \
  /* what the clock resolves of one op's time */                                                \
  X(resolution_us, "resolution_us", num, "", 1, r->resolution_us)                              \
  /* untimed validation runs, and the messages checked in them */                               \
  X(validations, "validations", opt_int, "", 1, r->validations)                                \
  X(checked_msgs, "checked_msgs", opt_int, "", 1, r->checked_msgs)                             \
  /* bw, bibw: the window this size ran (narrowed on slow links) */                             \
  X(window, "window", opt_int, "", r->window != 0, r->window)                                  \
  /* cold buffers: each pool's bytes, its slots and those checked, the cache sized against */  \
  X(pool_bytes, "pool.bytes", opt_int, "column=-", r->pool_bytes != 0, r->pool_bytes)          \
  X(pool_slots, "pool.slots", opt_int, "column=-", r->pool_bytes != 0, r->pool_slots)          \
  X(pool_checked, "pool.checked", opt_int, "column=-", r->pool_bytes != 0, r->pool_checked)    \
  X(pool_llc_bytes, "pool.llc_bytes", opt_int, "column=-", r->pool_bytes != 0, r->llc_bytes)   \
  /* evicted: the bytes each rank streamed before each operation */                             \
  X(evicted_bytes, "evicted.bytes", opt_int, "column=-", r->evicted_bytes != 0,                \
    r->evicted_bytes)                                                                          \
  X(evicted_llc_bytes, "evicted.llc_bytes", opt_int, "column=-", r->evicted_bytes != 0,        \
    r->llc_bytes)                                                                              \
  /* the figure a table shows (median_us, mb_per_s, rate_per_s) */                              \
  X(primary, "primary", primary, "column=primary_figure", 1, cs_bench_primary(r->bench))       \
  /* applications: what size_bytes is, and K=V;K=V of every parameter */                       \
  X(size_param, "size_param", opt_str, "", r->bench->size_param != NULL, r->bench->size_param) \
  X(params, "params", opt_str, "", r->params[0] != 0, r->params)                               \
  X(phases, "phases", json, "", r->nphases > 0, cs_write_phases)                               \
  /* applications: one rank's copy bandwidth, all copying, and rank 0 alone (bytes/ns) */     \
  X(copy_gbs, "copy_gbs", num, "rate", r->nphases > 0 && isfinite(r->copy_gbs), r->copy_gbs)  \
  X(copy1_gbs, "copy1_gbs", num, "rate", r->nphases > 0 && isfinite(r->copy1_gbs),            \
    r->copy1_gbs)                                                                              \
  /* the per-op time of each sample, us (--raw) */                                              \
  X(raw_us, "raw_us", raw, "", raw && r->raw, cs_write_raw)

#endif
