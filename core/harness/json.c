/* The JSON writer's two pieces: a string, escaped, and a number that may
 * be NaN (JSON has none: null). */
#include <math.h>

#include "cs.h"

void cs_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20)
          fprintf(f, "\\u%04x", *p);
        else
          fputc(*p, f);
    }
  }
  fputc('"', f);
}

void cs_json_number(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.6g", v);
  else
    fputs("null", f);
}

void cs_json_num(FILE *f, const char *key, double v) {
  fprintf(f, ",\"%s\":", key);
  cs_json_number(f, v);
}
