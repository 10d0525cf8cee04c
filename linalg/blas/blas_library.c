/* blas_library.c: which BLAS and LAPACK the process runs (blas_library.h). */
#define _GNU_SOURCE /* RTLD_DEFAULT, RTLD_NOLOAD, dladdr, dl_iterate_phdr */
#include "blas_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <omp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_config.h"

typedef char *(*qp_str_fn)(void);
typedef int (*qp_int_fn)(void);
typedef int64_t (*qp_i64_fn)(void); /* BLIS's gint_t / dim_t: 64 bits on a 64-bit build */

/* A symbol's address, through a function-pointer type (dlsym's void * is an object pointer). */
static void *qp_sym(void *handle, const char *name) { return dlsym(handle, name); }

/* The real path of the file that holds addr into out (PATH_MAX); 0 when none. */
static int qp_file_of(const void *addr, char *out) {
  Dl_info info;
  if (!addr || !dladdr(addr, &info) || !info.dli_fname || !info.dli_fname[0]) return 0;
  if (!realpath(info.dli_fname, out)) snprintf(out, PATH_MAX, "%s", info.dli_fname);
  return 1;
}

/* 1 when symbol `name` is defined in the same file as `addr` (both found from RTLD_DEFAULT). */
static int qp_same_file(const void *addr, const char *name) {
  char a[PATH_MAX], b[PATH_MAX];
  return qp_file_of(addr, a) && qp_file_of(qp_sym(RTLD_DEFAULT, name), b) && strcmp(a, b) == 0;
}

/* Asked once a process (two realpath calls each time otherwise; openblas_tuning.c asks before
 * every step): the libraries a process binds dgemm_ to do not change. */
int qp_blas_library_is_openblas(void) {
  static int answer = -1;
  if (answer < 0) answer = qp_same_file(qp_sym(RTLD_DEFAULT, "dgemm_"), "openblas_get_config");
  return answer;
}

int qp_blas_library_is_blis(void) {
  static int answer = -1;
  if (answer < 0) answer = qp_same_file(qp_sym(RTLD_DEFAULT, "dgemm_"), "bli_info_get_version_str");
  return answer;
}

const char *qp_blas_library_name(void) {
  return qp_blas_library_is_openblas() ? "OpenBLAS"
         : qp_blas_library_is_blis()   ? "BLIS"
                                       : "an unknown BLAS";
}

int qp_blas_library_threads(void) {
  if (qp_blas_library_is_openblas()) {
    const qp_int_fn threads = (qp_int_fn)qp_sym(RTLD_DEFAULT, "openblas_get_num_threads");
    const int t = threads ? threads() : 1;
    return t > 0 ? t : 1;
  }
  if (qp_blas_library_is_blis()) {
    const qp_i64_fn threads = (qp_i64_fn)qp_sym(RTLD_DEFAULT, "bli_thread_get_num_threads");
    const int64_t t = threads ? threads() : 1;
    return t > 0 ? (t > INT_MAX ? INT_MAX : (int)t) : 1;
  }
  return 1;
}

int qp_blas_library_threads_default(void) {
  static const char *const set[] = {"BLIS_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_JC_NT",
                                    "BLIS_PC_NT",       "BLIS_IC_NT",      "BLIS_JR_NT",
                                    "BLIS_IR_NT"};
  if (!qp_blas_library_is_blis()) return 0;
  for (size_t i = 0; i < sizeof set / sizeof set[0]; ++i)
    if (getenv(set[i])) return 0;
  void (*set_threads)(int64_t) =
      (void (*)(int64_t))qp_sym(RTLD_DEFAULT, "bli_thread_set_num_threads");
  if (!set_threads) return 0;
  const int t = omp_get_max_threads();
  set_threads(t);
  return t;
}

/* Appends printf output to buf (capacity n) at *len; *len counts what was needed. */
static void qp_add(char *buf, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void qp_add(char *buf, size_t n, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int k = vsnprintf(*len < n ? buf + *len : NULL, *len < n ? n - *len : 0, fmt, ap);
  va_end(ap);
  if (k > 0) *len += (size_t)k;
}

/* What family the library file `path` (loaded) belongs to, from the symbols it or its own
 * dependencies define: "OpenBLAS", "BLIS", else "BLIS" by its path, else "unknown". */
static const char *qp_family_of_loaded(const char *path) {
  void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  const char *family = "unknown";
  if (h) {
    if (qp_sym(h, "openblas_get_config"))
      family = "OpenBLAS";
    else if (qp_sym(h, "bli_info_get_version_str"))
      family = "BLIS";
    dlclose(h);
  }
  if (strcmp(family, "unknown") == 0 && strstr(path, "blis")) family = "BLIS";
  return family;
}

/* What the LAPACK file `lapack` is beside the BLAS file `blas`. */
static const char *qp_lapack_kind(const char *lapack, const char *blas) {
  if (strcmp(lapack, blas) == 0) return "(in the BLAS library itself)";
  const char *family = qp_family_of_loaded(lapack);
  if (strcmp(family, "OpenBLAS") == 0) return "(OpenBLAS's)";
  if (strcmp(family, "BLIS") == 0) return "(BLIS's)";
  if (strstr(lapack, "/lapack/liblapack.so")) return "(the reference LAPACK, by its path)";
  return "(a separate library)";
}

/* The other loaded objects that define `symbol` themselves, beside the file `bound`. */
typedef struct {
  const char *symbol, *bound;
  char *buf;
  size_t n, *len;
  int count;
} qp_other_defs;

static int qp_find_other(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  qp_other_defs *o = data;
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  char here[PATH_MAX], def[PATH_MAX];
  if (!realpath(info->dlpi_name, here)) snprintf(here, sizeof here, "%s", info->dlpi_name);
  if (qp_file_of(qp_sym(h, o->symbol), def) && strcmp(def, here) == 0 &&
      strcmp(here, o->bound) != 0) {
    qp_add(o->buf, o->n, o->len,
           "  also loaded, defines %s too but is not called (calls bind to the above): %s (%s)\n",
           o->symbol, here, qp_family_of_loaded(here));
    ++o->count;
  }
  dlclose(h);
  return 0;
}

#if QP_HAVE_SCALAPACK
/* The file that holds the soname `soname` in this process ("" when not loaded). */
static void qp_soname_file(const char *soname, const char *symbol, char *out) {
  out[0] = '\0';
  void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return;
  struct link_map *map = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) {
    if (!realpath(map->l_name, out)) snprintf(out, PATH_MAX, "%s", map->l_name);
  } else {
    (void)qp_file_of(qp_sym(h, symbol), out);
  }
  dlclose(h);
}
#endif

void qp_blas_library_identity(char *library, size_t library_size, char *kernel,
                              size_t kernel_size) {
  if (qp_blas_library_is_openblas()) {
    const qp_str_fn config = (qp_str_fn)qp_sym(RTLD_DEFAULT, "openblas_get_config");
    const qp_str_fn core = (qp_str_fn)qp_sym(RTLD_DEFAULT, "openblas_get_corename");
    /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64": its version, then the
     * kernel in use (which DYNAMIC_ARCH picks, or OPENBLAS_CORETYPE forces) */
    char version[32] = "?";
    if (config) (void)sscanf(config(), "%*s %31s", version);
    snprintf(library, library_size, "OpenBLAS %s", version);
    snprintf(kernel, kernel_size, "%s", core ? core() : "unknown");
  } else if (qp_blas_library_is_blis()) {
    const qp_str_fn version = (qp_str_fn)qp_sym(RTLD_DEFAULT, "bli_info_get_version_str");
    const qp_int_fn arch_id = (qp_int_fn)qp_sym(RTLD_DEFAULT, "bli_arch_query_id");
    char *(*arch_string)(int) = (char *(*)(int))qp_sym(RTLD_DEFAULT, "bli_arch_string");
    snprintf(library, library_size, "BLIS %s", version ? version() : "?");
    snprintf(kernel, kernel_size, "%s",
             arch_id && arch_string ? arch_string(arch_id()) : "unknown");
  } else {
    char file[PATH_MAX] = "";
    const char *base = qp_file_of(qp_sym(RTLD_DEFAULT, "dgemm_"), file) ? strrchr(file, '/') : 0;
    snprintf(library, library_size, "%s", file[0] ? (base ? base + 1 : file) : "unknown");
    snprintf(kernel, kernel_size, "unknown");
  }
}

size_t qp_blas_library_describe(char *buf, size_t n) {
  size_t len = 0;
  if (n) buf[0] = '\0';
  char blas[PATH_MAX] = "", lapack[PATH_MAX] = "";
  const int have_blas = qp_file_of(qp_sym(RTLD_DEFAULT, "dgemm_"), blas);
  const int have_lapack = qp_file_of(qp_sym(RTLD_DEFAULT, "dpotrf_"), lapack);
  if (!have_blas) {
    qp_add(buf, n, &len, "BLAS: no dgemm_ found in the process\n");
  } else if (qp_blas_library_is_openblas()) {
    const qp_str_fn config = (qp_str_fn)qp_sym(RTLD_DEFAULT, "openblas_get_config");
    const qp_str_fn core = (qp_str_fn)qp_sym(RTLD_DEFAULT, "openblas_get_corename");
    const qp_int_fn parallel = (qp_int_fn)qp_sym(RTLD_DEFAULT, "openblas_get_parallel");
    const int mode = parallel ? parallel() : -1;
    const int t = qp_blas_library_threads();
    qp_add(buf, n, &len, "BLAS: %s (core %s; %s, %d thread%s) %s\n", config ? config() : "OpenBLAS",
           core ? core() : "?",
           mode == 0   ? "serial"
           : mode == 1 ? "pthreads"
           : mode == 2 ? "OpenMP"
                       : "threading unknown",
           t, t == 1 ? "" : "s", blas);
  } else if (qp_blas_library_is_blis()) {
    char library[64], arch[48];
    qp_blas_library_identity(library, sizeof library, arch, sizeof arch);
    const qp_i64_fn omp = (qp_i64_fn)qp_sym(RTLD_DEFAULT, "bli_info_get_enable_openmp");
    const qp_i64_fn pthreads = (qp_i64_fn)qp_sym(RTLD_DEFAULT, "bli_info_get_enable_pthreads");
    const int t = qp_blas_library_threads();
    qp_add(buf, n, &len, "BLAS: %s (arch %s; %s, %d thread%s) %s\n", library, arch,
           omp && omp()             ? "OpenMP"
           : pthreads && pthreads() ? "pthreads"
                                    : "single-threaded",
           t, t == 1 ? "" : "s", blas);
  } else {
    qp_add(buf, n, &len, "BLAS: %s %s\n", qp_blas_library_name(), blas);
  }
  if (!have_lapack) {
    qp_add(buf, n, &len, "LAPACK: no dpotrf_ found in the process\n");
  } else {
    void (*ilaver)(int *, int *, int *) =
        (void (*)(int *, int *, int *))qp_sym(RTLD_DEFAULT, "ilaver_");
    int major = 0, minor = 0, patch = 0;
    char version[48] = "version unknown";
    if (ilaver && qp_same_file(qp_sym(RTLD_DEFAULT, "dpotrf_"), "ilaver_")) {
      ilaver(&major, &minor, &patch);
      snprintf(version, sizeof version, "%d.%d.%d", major, minor, patch);
    }
    qp_add(buf, n, &len, "LAPACK: %s %s %s\n", version, qp_lapack_kind(lapack, blas), lapack);
  }
  /* Another library that defines dgemm_ or dpotrf_ itself, and two BLAS families at once. */
  qp_other_defs o = {"dgemm_", blas, buf, n, &len, 0};
  if (have_blas) dl_iterate_phdr(qp_find_other, &o);
  qp_other_defs l = {"dpotrf_", lapack, buf, n, &len, 0};
  if (have_lapack) dl_iterate_phdr(qp_find_other, &l);
  char openblas[PATH_MAX];
  if (have_blas && !qp_blas_library_is_openblas() &&
      qp_file_of(qp_sym(RTLD_DEFAULT, "openblas_get_config"), openblas))
    qp_add(buf, n, &len,
           "  warning: OpenBLAS is loaded too (%s) beside %s: two BLAS in the process\n", openblas,
           qp_blas_library_name());
#if QP_HAVE_SCALAPACK
  /* ScaLAPACK's own calls bind, like qmlpipe's, to the first definition in the process; what
   * it names is the sonames libblas.so.3 and liblapack.so.3: the files that hold them. */
  char scalapack[PATH_MAX], soblas[PATH_MAX], solapack[PATH_MAX];
  if (qp_file_of(qp_sym(RTLD_DEFAULT, "pdgemm_"), scalapack)) {
    qp_soname_file("libblas.so.3", "dgemm_", soblas);
    qp_soname_file("liblapack.so.3", "dpotrf_", solapack);
    const char *fb = soblas[0] ? qp_family_of_loaded(soblas) : "none";
    const char *fl = solapack[0] ? qp_lapack_kind(solapack, soblas) : "(none)";
    const char *mine = qp_blas_library_name();
    const int blas_differs = soblas[0] && strcmp(fb, mine) != 0;
    const int lapack_differs = solapack[0] && strcmp(solapack, lapack) != 0 &&
                               strcmp(qp_family_of_loaded(solapack), "OpenBLAS") == 0 &&
                               !qp_blas_library_is_openblas();
    qp_add(buf, n, &len, "ScaLAPACK: %s; its libblas.so.3 is %s (%s), its liblapack.so.3 %s %s\n",
           scalapack, soblas[0] ? soblas : "not loaded", fb, solapack[0] ? solapack : "not loaded",
           fl);
    if (blas_differs || lapack_differs)
      qp_add(buf, n, &len,
             "  warning: ScaLAPACK's libraries differ from qmlpipe's BLAS (%s): two BLAS in "
             "the process\n",
             mine);
    else
      qp_add(buf, n, &len, "  ScaLAPACK's BLAS and LAPACK calls go to the same %s and LAPACK\n",
             mine);
  }
#endif
  return len;
}
