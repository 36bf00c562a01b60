/* Errors: a code and a message, raised where they happen (CS_FAIL) and
 * handed upward; only main() turns them into an exit status. */
#include <stdarg.h>
#include <stdio.h>

#include "cs.h"

int cs_fail(cs_err *e, int code, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  char tmp[CS_ERRLEN - 64];
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (e) {
    e->code = code;
    /* Usage errors are for users: no source location. */
    if (code == CS_EUSAGE)
      snprintf(e->msg, sizeof e->msg, "%s", tmp);
    else
      snprintf(e->msg, sizeof e->msg, "%s (%s:%d)", tmp, file, line);
  }
  return code;
}
