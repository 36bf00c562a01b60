/* Applications' parameters: "K=V;K=V" from --param, each declared by the
 * benchmark with a default and a line of help (--list --json exports them).
 * The swept one (matmul's N) takes a comma-separated list: its values are
 * the sweep's sizes. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"

/* Find K in spec; copies its value into buf.  Returns 1 when found. */
static int lookup(const char *spec, const char *name, char *buf, size_t len) {
  size_t nl = strlen(name);
  for (const char *p = spec; p && *p;) {
    const char *end = strchr(p, ';');
    size_t item = end ? (size_t)(end - p) : strlen(p);
    if (item > nl && !strncmp(p, name, nl) && p[nl] == '=') {
      size_t vl = item - nl - 1;
      if (vl >= len) vl = len - 1;
      memcpy(buf, p + nl + 1, vl);
      buf[vl] = 0;
      return 1;
    }
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static const cs_param_def *declared(const cs_bench *b, const char *name, size_t nl) {
  for (const cs_param_def *d = b->params; d && d->name; d++)
    if (strlen(d->name) == nl && !strncmp(d->name, name, nl)) return d;
  return NULL;
}

/* Parameter `name` of benchmark b: given in spec, else its default. */
static const char *value(const char *spec, const cs_bench *b, const char *name, char *buf,
                         size_t len) {
  if (lookup(spec, name, buf, len)) return buf;
  const cs_param_def *d = declared(b, name, strlen(name));
  snprintf(buf, len, "%s", d ? d->def : "");
  return buf;
}

const char *cs_param(const cs_ctx *c, const char *name, char *buf, size_t len) {
  return value(c->opts->param, c->bench, name, buf, len);
}

long cs_param_long(const cs_ctx *c, const char *name) {
  char buf[64];
  return strtol(cs_param(c, name, buf, sizeof buf), NULL, 10);
}

int cs_params_check(const char *spec, const cs_bench *const *benches, int nb, cs_err *e) {
  for (const char *p = spec; p && *p;) {
    const char *end = strchr(p, ';');
    size_t item = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', item);
    if (!eq || eq == p)
      return CS_FAIL(e, CS_EUSAGE, "bad --param '%.*s' (use NAME=VALUE)", (int)item, p);
    size_t nl = (size_t)(eq - p);
    int ok = 0;
    for (int i = 0; i < nb && !ok; i++) ok = declared(benches[i], p, nl) != NULL;
    if (!ok)
      return CS_FAIL(e, CS_EUSAGE, "unknown parameter '%.*s' for the benchmarks given "
                     "(see --list)", (int)nl, p);
    p = end ? end + 1 : NULL;
  }
  return CS_OK;
}

int cs_param_sizes(const char *spec, const cs_bench *b, size_t *out, int max, int *n,
                   cs_err *e) {
  char buf[256];
  value(spec, b, b->size_param, buf, sizeof buf);
  *n = 0;
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *end;
    errno = 0;
    long v = strtol(t, &end, 10);
    if (errno || end == t || *end || v < 1)
      return CS_FAIL(e, CS_EUSAGE, "%s=%s: %s needs positive integers", b->size_param, t,
                     b->size_param);
    if (*n >= max) return CS_FAIL(e, CS_EUSAGE, "too many values of %s", b->size_param);
    out[(*n)++] = (size_t)v;
  }
  if (*n == 0) return CS_FAIL(e, CS_EUSAGE, "no value of %s", b->size_param);
  return CS_OK;
}
