/*
 * cuda_cache.c — turns generated CUDA C into a loadable image: NVRTC compiles it to a
 * cubin for the device's architecture (sm_XY), or to PTX for the newest virtual
 * architecture NVRTC knows when it cannot emit code for that device; images are cached
 * in memory (per process) and on disk, so a second process starts warm.
 *
 * Cache key: a 128-bit hash (two FNV-1a-64 streams) of the scanfuse version, the NVRTC
 * version, the target architecture, the compile options and the source.  The disk cache
 * lives in $SCANFUSE_CACHE_DIR, else $XDG_CACHE_HOME/scanfuse, else ~/.cache/scanfuse
 * (SCANFUSE_CACHE_DIR=off disables it); an entry is written to a temporary file in the
 * same directory and renamed into place, so readers never see a partial file, and it
 * carries its size and a checksum, so a damaged file is ignored (and recompiled).
 *
 * SCANFUSE_DUMP_CUDA=1 prints every generated source to stderr; any other value except
 * 0 is taken as a directory that receives KEY.cu for every source compiled.
 */
#include "cuda_api.h"
#include "cuda_codegen.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------ */
/* Hashing                                                                         */
/* ------------------------------------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

typedef struct hash128 {
    uint64_t a, b;
} hash128;

static void h_add(hash128 *h, const void *data, size_t n) {
    h->a = fnv1a(h->a, data, n);
    h->b = fnv1a(h->b, data, n);
    unsigned char sep = 0xff; /* field separator: "ab"+"c" differs from "a"+"bc" */
    h->a = fnv1a(h->a, &sep, 1);
    h->b = fnv1a(h->b ^ 0x9e3779b97f4a7c15ull, &sep, 1);
}

/* ------------------------------------------------------------------------------ */
/* The in-memory cache                                                             */
/* ------------------------------------------------------------------------------ */

typedef struct mem_entry {
    struct mem_entry *next;
    char key[40];
    sf_cuda_image img;
} mem_entry;

#define MEM_CACHE_MAX_BYTES (256u << 20)
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_entry *mem_head;
static size_t mem_bytes;

static bool image_copy(sf_cuda_image *dst, const sf_cuda_image *src) {
    *dst = *src;
    dst->data = sf_malloc(src->size);
    if (!dst->data) return false;
    memcpy(dst->data, src->data, src->size);
    return true;
}

static bool mem_lookup(const char *key, sf_cuda_image *out) {
    bool found = false, ok = true;
    pthread_mutex_lock(&mem_lock);
    for (mem_entry *e = mem_head; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
            found = true;
            ok = image_copy(out, &e->img);
            break;
        }
    pthread_mutex_unlock(&mem_lock);
    return found && ok;
}

static void mem_insert(const char *key, const sf_cuda_image *img) {
    mem_entry *e = sf_calloc(1, sizeof *e);
    if (!e) return;
    if (!image_copy(&e->img, img)) {
        free(e);
        return;
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    pthread_mutex_lock(&mem_lock);
    if (mem_bytes + img->size > MEM_CACHE_MAX_BYTES) {
        pthread_mutex_unlock(&mem_lock);
        free(e->img.data);
        free(e);
        return;
    }
    e->next = mem_head;
    mem_head = e;
    mem_bytes += img->size;
    pthread_mutex_unlock(&mem_lock);
}

/* ------------------------------------------------------------------------------ */
/* The disk cache                                                                  */
/* ------------------------------------------------------------------------------ */

#define DISK_MAGIC "SFCUIMG1"

/* The cache directory (created if needed), or false when the disk cache is off or
 * cannot be created. */
static bool cache_dir(char *dir, size_t len) {
    const char *env = getenv("SCANFUSE_CACHE_DIR");
    if (env && (strcmp(env, "off") == 0 || strcmp(env, "0") == 0)) return false;
    if (env && env[0]) {
        snprintf(dir, len, "%s", env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (xdg && xdg[0]) snprintf(dir, len, "%s/scanfuse", xdg);
        else if (home && home[0]) snprintf(dir, len, "%s/.cache/scanfuse", home);
        else return false;
    }
    /* mkdir -p */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
    return true;
}

static bool disk_read(const char *dir, const char *key, sf_cuda_image *out) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.img", dir, key);
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    unsigned char hdr[32];
    bool ok = fread(hdr, 1, sizeof hdr, fp) == sizeof hdr && memcmp(hdr, DISK_MAGIC, 8) == 0;
    uint64_t size = 0, sum = 0;
    uint32_t kind = 0;
    if (ok) {
        memcpy(&size, hdr + 8, 8);
        memcpy(&sum, hdr + 16, 8);
        memcpy(&kind, hdr + 24, 4);
        ok = size > 0 && size < (1ull << 31) && kind <= 1;
    }
    void *data = NULL;
    if (ok) {
        data = sf_malloc((size_t)size);
        ok = data && fread(data, 1, (size_t)size, fp) == size &&
             fnv1a(0xcbf29ce484222325ull, data, (size_t)size) == sum;
    }
    fclose(fp);
    if (!ok) {
        free(data);
        return false;
    }
    out->data = data;
    out->size = (size_t)size;
    out->ptx = kind == 1;
    return true;
}

static void disk_write(const char *dir, const char *key, const sf_cuda_image *img) {
    char path[1200], tmp[1300];
    snprintf(path, sizeof path, "%s/%s.img", dir, key);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    if (!fp) return;
    unsigned char hdr[32] = {0};
    uint64_t size = img->size, sum = fnv1a(0xcbf29ce484222325ull, img->data, img->size);
    uint32_t kind = img->ptx ? 1u : 0u;
    memcpy(hdr, DISK_MAGIC, 8);
    memcpy(hdr + 8, &size, 8);
    memcpy(hdr + 16, &sum, 8);
    memcpy(hdr + 24, &kind, 4);
    bool ok = fwrite(hdr, 1, sizeof hdr, fp) == sizeof hdr &&
              fwrite(img->data, 1, img->size, fp) == img->size;
    ok = (fclose(fp) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
}

/* ------------------------------------------------------------------------------ */
/* Dumping                                                                         */
/* ------------------------------------------------------------------------------ */

static void dump_source(const char *key, const char *source) {
    const char *env = getenv("SCANFUSE_DUMP_CUDA");
    if (!env || !env[0] || strcmp(env, "0") == 0) return;
    if (strcmp(env, "1") == 0) {
        fprintf(stderr, "// ---- scanfuse CUDA source %s ----\n%s\n", key, source);
        return;
    }
    mkdir(env, 0755);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.cu", env, key);
    FILE *fp = fopen(path, "w");
    if (!fp) return;
    fputs(source, fp);
    fclose(fp);
}

/* ------------------------------------------------------------------------------ */
/* NVRTC                                                                           */
/* ------------------------------------------------------------------------------ */

/* The newest architecture <= arch that NVRTC can target, or 0 if none is listed. */
static int best_supported_arch(const sf_cuda_nvrtc_api *nv, int arch) {
    if (!nv->nvrtcGetNumSupportedArchs || !nv->nvrtcGetSupportedArchs) return 0;
    int n = 0;
    if (nv->nvrtcGetNumSupportedArchs(&n) != 0 || n <= 0 || n > 256) return 0;
    int archs[256];
    if (nv->nvrtcGetSupportedArchs(archs) != 0) return 0;
    int best = 0;
    for (int i = 0; i < n; i++)
        if (archs[i] <= arch && archs[i] > best) best = archs[i];
    return best;
}

static void options_for(int arch, bool ptx, char archopt[64], const char *opts[8], int *nopts) {
    snprintf(archopt, 64, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", arch);
    int n = 0;
    opts[n++] = archopt;
    opts[n++] = "-std=c++17";
    opts[n++] = "--fmad=false";
    opts[n++] = "--diag-suppress=177,550";
    *nopts = n;
}

/* One NVRTC compile.  Returns 0 on success, 1 on a compile error (message with the
 * log), 2 when the architecture option itself was rejected. */
static int nvrtc_compile(const sf_cuda_nvrtc_api *nv, const char *source, int arch, bool ptx,
                         sf_cuda_image *out, char *msg, size_t msglen) {
    char archopt[64];
    const char *opts[8];
    int nopts;
    options_for(arch, ptx, archopt, opts, &nopts);
    sf_nvrtcProgram prog = NULL;
    sf_nvrtcResult r = nv->nvrtcCreateProgram(&prog, source, "scanfuse_kernels.cu", 0, NULL, NULL);
    if (r != 0) {
        sf_msg(msg, msglen, "cuda: nvrtcCreateProgram failed: %s", nv->nvrtcGetErrorString(r));
        return 1;
    }
    r = nv->nvrtcCompileProgram(prog, nopts, opts);
    if (r != 0) {
        size_t ls = 0;
        char *log = NULL;
        if (nv->nvrtcGetProgramLogSize(prog, &ls) == 0 && ls > 0 && (log = sf_malloc(ls + 1))) {
            if (nv->nvrtcGetProgramLog(prog, log) != 0) log[0] = '\0';
            log[ls] = '\0';
        }
        const int invalid_option = 5; /* NVRTC_ERROR_INVALID_OPTION */
        int rc = r == invalid_option ? 2 : 1;
        sf_msg(msg, msglen, "cuda: NVRTC could not compile the generated kernels for %s: %s: %s",
               archopt + 19, nv->nvrtcGetErrorString(r), log && log[0] ? log : "(no log)");
        const char *dump = getenv("SCANFUSE_DUMP_CUDA");
        if (log && dump && dump[0] && strcmp(dump, "0") != 0)
            fprintf(stderr, "// ---- NVRTC log ----\n%s\n", log);
        free(log);
        nv->nvrtcDestroyProgram(&prog);
        return rc;
    }
    size_t size = 0;
    bool ok;
    if (ptx) {
        ok = nv->nvrtcGetPTXSize(prog, &size) == 0 && size > 0;
        if (ok && (out->data = sf_malloc(size))) ok = nv->nvrtcGetPTX(prog, out->data) == 0;
        else ok = false;
    } else {
        ok = nv->nvrtcGetCUBINSize && nv->nvrtcGetCUBINSize(prog, &size) == 0 && size > 0;
        if (ok && (out->data = sf_malloc(size))) ok = nv->nvrtcGetCUBIN(prog, out->data) == 0;
        else ok = false;
    }
    nv->nvrtcDestroyProgram(&prog);
    if (!ok) {
        free(out->data);
        out->data = NULL;
        sf_msg(msg, msglen, "cuda: NVRTC produced no %s", ptx ? "PTX" : "cubin");
        return 1;
    }
    out->size = size;
    out->ptx = ptx;
    return 0;
}

scanfuse_status sf_cuda_build(const char *source, int arch, sf_cuda_image *out, char *msg,
                              size_t msglen) {
    memset(out, 0, sizeof *out);
    const sf_cuda_nvrtc_api *nv = sf_cuda_nvrtc(msg, msglen);
    if (!nv) return SCANFUSE_ERROR_DEVICE;
    char archopt[64];
    const char *opts[8];
    int nopts;
    options_for(arch, false, archopt, opts, &nopts);
    hash128 h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    h_add(&h, "scanfuse-cuda " SCANFUSE_VERSION, strlen("scanfuse-cuda " SCANFUSE_VERSION));
    int ver[3] = {nv->major, nv->minor, arch};
    h_add(&h, ver, sizeof ver);
    for (int i = 0; i < nopts; i++) h_add(&h, opts[i], strlen(opts[i]));
    h_add(&h, source, strlen(source));
    char key[40];
    snprintf(key, sizeof key, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);

    dump_source(key, source);
    if (mem_lookup(key, out)) return SCANFUSE_OK;
    char dir[1024];
    bool have_dir = cache_dir(dir, sizeof dir);
    if (have_dir && disk_read(dir, key, out)) {
        mem_insert(key, out);
        return SCANFUSE_OK;
    }
    int rc = nvrtc_compile(nv, source, arch, false, out, msg, msglen);
    if (rc == 2) { /* NVRTC does not know this architecture: PTX for the newest it knows */
        int best = best_supported_arch(nv, arch);
        if (best > 0) rc = nvrtc_compile(nv, source, best, true, out, msg, msglen);
    }
    if (rc != 0) return SCANFUSE_ERROR_DEVICE;
    mem_insert(key, out);
    if (have_dir) disk_write(dir, key, out);
    return SCANFUSE_OK;
}
