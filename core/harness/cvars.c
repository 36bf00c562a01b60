/* The implementation's control variables, read through the MPI tool
 * interface: what a setting became.  Open MPI silently ignores a misspelled
 * MCA name and MPICH a misspelled MPIR_CVAR; both expose their variables
 * here (Open MPI's MCA parameters once their component is registered), so a
 * job can say which of the settings it was given took effect, and with
 * which value.  Read before MPI_Init (cs_cvars_capture says why). */
#include <stdlib.h>
#include <string.h>

#include "cs.h"

enum { NAME_MAX_ = 256, VALUE_MAX = 1024 };

/* The value of cvar i as text (an enumeration's item name where it has
 * one); 0 when read, -1 when it cannot be read without an object. */
static int read_value(int i, MPI_Datatype dt, MPI_T_enum et, char *out, size_t n) {
  MPI_T_cvar_handle h;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) return -1;
  int rc = 0;
  if (dt == MPI_CHAR) {
    char *buf = calloc((size_t)count + 1, 1);
    if (buf && MPI_T_cvar_read(h, buf) == MPI_SUCCESS)
      snprintf(out, n, "%s", buf);
    else
      rc = -1;
    free(buf);
  } else if (count == 1) {
    union {
      int i;
      unsigned u;
      unsigned long ul;
      unsigned long long ull;
      long long ll;
      double d;
      MPI_Count c;
    } v;
    memset(&v, 0, sizeof v);
    if (MPI_T_cvar_read(h, &v) != MPI_SUCCESS)
      rc = -1;
    else if (dt == MPI_INT) {
      snprintf(out, n, "%d", v.i);
      if (et != MPI_T_ENUM_NULL) { /* the item whose value it is */
        int items = 0, len = NAME_MAX_;
        char en[NAME_MAX_];
        MPI_T_enum_get_info(et, &items, en, &len);
        for (int k = 0; k < items; k++) {
          int val = 0;
          len = NAME_MAX_;
          if (MPI_T_enum_get_item(et, k, &val, en, &len) == MPI_SUCCESS && val == v.i) {
            snprintf(out, n, "%s", en);
            break;
          }
        }
      }
    } else if (dt == MPI_UNSIGNED)
      snprintf(out, n, "%u", v.u);
    else if (dt == MPI_UNSIGNED_LONG)
      snprintf(out, n, "%lu", v.ul);
    else if (dt == MPI_UNSIGNED_LONG_LONG)
      snprintf(out, n, "%llu", v.ull);
    else if (dt == MPI_LONG_LONG)
      snprintf(out, n, "%lld", v.ll);
    else if (dt == MPI_COUNT)
      snprintf(out, n, "%lld", (long long)v.c);
    else if (dt == MPI_DOUBLE)
      snprintf(out, n, "%g", v.d);
    else if (dt == MPI_C_BOOL) /* Open MPI's flags (coll_tuned_use_dynamic_rules) */
      snprintf(out, n, "%d", *(unsigned char *)&v != 0);
    else
      rc = -1;
  } else {
    rc = -1;
  }
  MPI_T_cvar_handle_free(&h);
  return rc;
}

/* The enumeration's item names (values = 0) or their values (values = 1),
 * in the same order: a rules file names an algorithm by its value. */
static void enum_items(FILE *f, MPI_T_enum et, int values) {
  int items = 0, len = NAME_MAX_, first = 1;
  char en[NAME_MAX_];
  fputc('[', f);
  if (MPI_T_enum_get_info(et, &items, en, &len) == MPI_SUCCESS)
    for (int k = 0; k < items; k++) {
      int val = 0;
      len = NAME_MAX_;
      if (MPI_T_enum_get_item(et, k, &val, en, &len) != MPI_SUCCESS) continue;
      if (!first) fputc(',', f);
      first = 0;
      if (values)
        fprintf(f, "%d", val);
      else
        cs_json_str(f, en);
    }
  fputc(']', f);
}

typedef struct {
  char name[NAME_MAX_];
  MPI_Datatype dt;
  MPI_T_enum et;
  int bind;
} cvar_info;

/* cvar i's description and its value as text; 0 when both were read (a
 * variable bound to an object has no value of its own here). */
static int lookup(int i, cvar_info *c, char *val, size_t n) {
  char desc[8];
  int nlen = NAME_MAX_, dlen = sizeof desc, verb, scope;
  if (MPI_T_cvar_get_info(i, c->name, &nlen, &verb, &c->dt, &c->et, desc, &dlen, &c->bind,
                          &scope) != MPI_SUCCESS ||
      c->bind != MPI_T_BIND_NO_OBJECT)
    return -1;
  return read_value(i, c->dt, c->et, val, n);
}

/* `"cvars":{...}` for the comma-separated names (null for a name the
 * implementation does not have, or whose value needs an object), or every
 * readable variable with its enumeration when names is "*". */
static void cvars_json(FILE *f, const char *names) {
  int num = 0, first = 1;
  char val[VALUE_MAX];
  cvar_info c;
  fprintf(f, ",\"cvars\":{");
  if (!strcmp(names, "*")) {
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num; i++) {
      if (lookup(i, &c, val, sizeof val)) continue;
      fprintf(f, "%s", first ? "" : ",");
      cs_json_str(f, c.name);
      fprintf(f, ":{\"value\":");
      cs_json_str(f, val);
      if (c.et != MPI_T_ENUM_NULL) {
        fprintf(f, ",\"enum\":");
        enum_items(f, c.et, 0);
        fprintf(f, ",\"enum_values\":");
        enum_items(f, c.et, 1);
      }
      fputc('}', f);
      first = 0;
    }
  } else {
    char *list = strdup(names);
    for (char *tok = list ? strtok(list, ",") : NULL; tok; tok = strtok(NULL, ",")) {
      int i;
      fprintf(f, "%s", first ? "" : ",");
      cs_json_str(f, tok);
      if (MPI_T_cvar_get_index(tok, &i) == MPI_SUCCESS && lookup(i, &c, val, sizeof val) == 0) {
        fputc(':', f);
        cs_json_str(f, val);
      } else {
        fprintf(f, ":null");
      }
      first = 0;
    }
    free(list);
  }
  fputc('}', f);
}

/* Read before MPI_Init, with MPI_T left open until cs_cvars_done: every
 * component is still registered then (after MPI_Init, Open MPI 4.1 has
 * closed those it did not select, and reading one of their variables
 * crashes), and Open MPI's MPI_T_init_thread costs 0.2 s after MPI_Init
 * but its MPI_Init next to nothing after it.  So the values are those the
 * library took from its settings (a fallback it makes inside MPI_Init, as
 * vader's from cma when the kernel refuses it, is not seen).  NULL when
 * MPI_T cannot start or nothing is asked. */
char *cs_cvars_capture(const char *names, int *opened) {
  int provided;
  char *buf = NULL;
  size_t len = 0;
  *opened = 0;
  if (!names || !*names || MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
    return NULL;
  *opened = 1;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  cvars_json(f, names);
  fclose(f);
  return buf;
}

void cs_cvars_done(int opened) {
  if (opened) MPI_T_finalize();
}
