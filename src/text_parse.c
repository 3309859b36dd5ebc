/*
 * text_parse.c — reads the text form of a fusion (scanfuse_parse, scanfuse_parse_file).
 *
 * Grammar, one statement per line (see scanfuse.h):
 *     input NAME: DTYPE[D0, D1, ...]          DTYPE[] is 0-d
 *     NAME = OP(ARGS)    /    NAME, NAME = OP(ARGS)
 *     output NAME [as ALIAS], ...             may appear several times
 *     # comment to the end of the line; blank lines
 * ARGS are positional or key=value; a value is a defined name, an integer, a float
 * (also inf, -inf, nan, 1e-3), true/false, none, a dtype (a dotted name such as
 * torch.float16, a NumPy descr such as <f4, or an identifier that is not a defined
 * value name but parses as a dtype), a list [a, b] of integers, or a nested call of a
 * one-result op ("sigmoid(cast(max(x, dim=1), float32))"), whose result is an unnamed
 * value emitted before the node that uses it.  A word parameter given by key
 * (scatter's reduce=add, or reduce="add") takes an identifier or a quoted word.
 *
 * Extension beyond the header's grammar: `output NAME as ALIAS` marks value NAME as an
 * output called ALIAS.  The printer needs it only for outputs whose name differs from
 * the name their value can be printed under (an input output under another name, one
 * value output twice).
 *
 * Name resolution: a defined value name wins over every other reading of an
 * identifier except the literal words true, false, none, inf and nan, which are
 * reserved: they cannot name a value (they may still be output aliases, which are
 * never referenced).  Dotted names and descrs cannot be value names, so they are
 * always dtypes.
 *
 * Invariants that keep the parser robust to arbitrary bytes:
 *  - the text is only read through the cursor of one line, always checked against
 *    that line's end, so no read goes past the terminating NUL;
 *  - the only recursion is a nested call, bounded by MAX_DEPTH, with its argument
 *    array on the heap, so deep nesting is an error and cannot exhaust the stack;
 *    lists hold integers only and do not nest;
 *  - integer literals are accumulated with overflow checks;
 *  - tokens of any length are copied into a scratch buffer sized from the line
 *    (2 * length + 2 is enough: tokens are disjoint substrings, each needing one NUL);
 *  - names are found through a hash table, so parsing stays linear in the text;
 *  - the first error stops parsing; every message is "FILE:LINE:COL: message" with
 *    1-based line and byte column, and quoted tokens are shortened for messages.
 * Status: SCANFUSE_ERROR_PARSE for syntax errors (and undefined or redefined names),
 * SCANFUSE_ERROR_DTYPE for unknown or complex dtypes, the builder's own status for
 * semantic errors (its message then follows the statement's location).
 */
#include "sf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enough for every op's parameters with room for a few duplicates, which sf_bind_args
 * reports itself; more than this is a parse error. */
#define MAX_ARGS 32
/* Deepest nesting of calls in arguments ("sigmoid(cast(x, f32))" is depth 1). */
#define MAX_DEPTH 64
/* Longest token quoted in a message; longer ones are cut and end in "...". */
#define QUOTE_MAX 48

typedef struct parser {
    scanfuse_fusion *f;
    const char *file;       /* for messages */
    const char *line_start; /* first byte of the current line */
    const char *end;        /* the current line's end ('\n', or the final NUL) */
    const char *p;          /* the cursor, line_start <= p <= end */
    const char *stmt_at;    /* the current statement's first byte */
    int line;
    int32_t *ids;   /* name table: value ids by hash of their names, -1 = empty */
    size_t ids_cap; /* a power of two, more than twice the number of names */
    size_t nids;
    char *scratch; /* token copies for the current line */
    size_t scratch_used, scratch_cap;
    bool oom;
} parser;

/* A token of the current line: a pointer into the text and its length. */
typedef struct token {
    const char *s;
    size_t n;
} token;

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Words that are always literals and so cannot name values. */
static bool is_reserved(const char *s) {
    return strcmp(s, "true") == 0 || strcmp(s, "false") == 0 || strcmp(s, "none") == 0 ||
           strcmp(s, "inf") == 0 || strcmp(s, "nan") == 0;
}

static int col_of(const parser *ps, const char *at) {
    size_t c = (size_t)(at - ps->line_start) + 1;
    return c > (size_t)INT_MAX ? INT_MAX : (int)c;
}

/* Records "FILE:LINE:COL: message" (first error wins, as everywhere). */
static void perr(parser *ps, const char *at, scanfuse_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void perr(parser *ps, const char *at, scanfuse_status st, const char *fmt, ...) {
    char body[SF_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    sf_fail(ps->f, st, "%s:%d:%d: %s", ps->file, ps->line, col_of(ps, at), body);
}

/* Puts "FILE:LINE:COL: " in front of the error the builder recorded in the fusion, so
 * that semantic errors point at the statement that caused them. */
static void prefix_fusion_error(parser *ps, const char *at) {
    sf_buf b = {0};
    sf_buf_printf(&b, "%s:%d:%d: %s", ps->file, ps->line, col_of(ps, at), ps->f->error);
    char *msg = sf_buf_take(&b);
    if (!msg) return; /* out of memory: the builder's message stays as it is */
    size_t n = strlen(msg);
    if (n > SF_ERR_LEN - 1) n = SF_ERR_LEN - 1; /* a long message is cut, like sf_fail's */
    memcpy(ps->f->error, msg, n);
    ps->f->error[n] = '\0';
    free(msg);
}

/* Writes a token into q for a message: at most QUOTE_MAX bytes, non-printable bytes
 * as '?', a cut token ending in "...". */
static const char *quote(token t, char *q, size_t qlen) {
    size_t n = t.n < QUOTE_MAX ? t.n : QUOTE_MAX;
    if (n + 4 > qlen) n = qlen > 4 ? qlen - 4 : 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t.s[i];
        q[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n < t.n) {
        memcpy(q + n, "...", 4);
    } else {
        q[n] = '\0';
    }
    return q;
}

/* Describes the byte at p for "unexpected ..." messages. */
static const char *describe_char(const parser *ps, const char *p, char *d, size_t dlen) {
    if (p >= ps->end) {
        snprintf(d, dlen, "end of line");
    } else {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x21 && c < 0x7f) snprintf(d, dlen, "character '%c'", c);
        else snprintf(d, dlen, "byte 0x%02x", c);
    }
    return d;
}

/* A NUL-terminated copy of a token in the scratch buffer (NULL after OOM). */
static char *copy_token(parser *ps, token t) {
    if (ps->scratch_used + t.n + 1 > ps->scratch_cap) {
        ps->oom = true; /* cannot happen with the sizing rule; treated as OOM */
        return NULL;
    }
    char *d = ps->scratch + ps->scratch_used;
    memcpy(d, t.s, t.n);
    d[t.n] = '\0';
    ps->scratch_used += t.n + 1;
    return d;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r' ||
                               *ps->p == '\v' || *ps->p == '\f'))
        ps->p++;
}

/* True at the end of the statement: end of line or a comment. */
static bool at_stmt_end(parser *ps) {
    skip_ws(ps);
    return ps->p >= ps->end || *ps->p == '#';
}

static bool peek(parser *ps, char c) {
    skip_ws(ps);
    return ps->p < ps->end && *ps->p == c;
}

/* An identifier [A-Za-z_][A-Za-z0-9_]* at the cursor (after spaces), or n == 0. */
static token lex_ident(parser *ps) {
    skip_ws(ps);
    token t = {ps->p, 0};
    if (ps->p < ps->end && is_ident_start(*ps->p)) {
        while (ps->p < ps->end && is_ident_char(*ps->p)) ps->p++;
        t.n = (size_t)(ps->p - t.s);
    }
    return t;
}

/* A dtype word: every character a dtype spelling can contain ("float32",
 * "torch.float16", "<f4", "|b1", "=i8"). */
static token lex_dtype_word(parser *ps) {
    skip_ws(ps);
    token t = {ps->p, 0};
    while (ps->p < ps->end && (is_ident_char(*ps->p) || *ps->p == '.' || *ps->p == '<' ||
                               *ps->p == '>' || *ps->p == '|' || *ps->p == '='))
        ps->p++;
    t.n = (size_t)(ps->p - t.s);
    return t;
}

static bool token_is(token t, const char *word) {
    size_t n = strlen(word);
    return t.n == n && memcmp(t.s, word, n) == 0;
}

/* Expects character c; reports "expected WHAT, found ..." otherwise. */
static bool expect(parser *ps, char c, const char *what) {
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return true;
    }
    char d[32];
    perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "expected %s, found %s", what,
         describe_char(ps, ps->p, d, sizeof d));
    return false;
}

/* ---- numbers ---- */

/*
 * Scans a number at the cursor: [+-]? digits [. digits] [e [+-] digits], or .digits;
 * also [+-]?inf and [+-]?nan when `words` is set.  Integers must fit in int64 (the
 * magnitude 2^63 only with a minus sign); floats that overflow become infinities, as
 * strtod and Python's float() make them.
 */
static bool lex_number(parser *ps, bool words, sf_num *out) {
    skip_ws(ps);
    const char *start = ps->p, *q = ps->p;
    bool neg = false;
    if (q < ps->end && (*q == '-' || *q == '+')) {
        neg = *q == '-';
        q++;
    }
    if (words && q < ps->end && is_ident_start(*q)) {
        token w = {q, 0};
        while (q < ps->end && is_ident_char(*q)) q++;
        w.n = (size_t)(q - w.s);
        if (token_is(w, "inf") || token_is(w, "nan")) {
            double v = token_is(w, "inf") ? INFINITY : NAN;
            out->kind = SF_NUM_FLOAT;
            out->f = neg ? -v : v;
            out->i = 0;
            ps->p = q;
            return true;
        }
        char qb[QUOTE_MAX + 4];
        perr(ps, start, SCANFUSE_ERROR_PARSE, "expected a number, found '%s'",
             quote((token){start, (size_t)(q - start)}, qb, sizeof qb));
        return false;
    }
    const char *digits = q;
    while (q < ps->end && is_digit(*q)) q++;
    bool is_float = false;
    size_t nint = (size_t)(q - digits);
    size_t nfrac = 0;
    if (q < ps->end && *q == '.') {
        is_float = true;
        q++;
        const char *fs = q;
        while (q < ps->end && is_digit(*q)) q++;
        nfrac = (size_t)(q - fs);
    }
    if (nint + nfrac == 0) {
        char d[32];
        perr(ps, start, SCANFUSE_ERROR_PARSE, "expected a number, found %s",
             describe_char(ps, q, d, sizeof d));
        return false;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        if (e < ps->end && (*e == '+' || *e == '-')) e++;
        if (e < ps->end && is_digit(*e)) {
            is_float = true;
            q = e;
            while (q < ps->end && is_digit(*q)) q++;
        } else {
            perr(ps, q, SCANFUSE_ERROR_PARSE, "malformed exponent in number");
            return false;
        }
    }
    if (q < ps->end && (is_ident_char(*q) || *q == '.')) {
        char d[32];
        perr(ps, q, SCANFUSE_ERROR_PARSE, "unexpected %s in number",
             describe_char(ps, q, d, sizeof d));
        return false;
    }
    token whole = {start, (size_t)(q - start)};
    if (is_float) {
        char *copy = copy_token(ps, whole);
        if (!copy) return false;
        /* strtod reads the C locale's decimal point, which the library never changes */
        out->kind = SF_NUM_FLOAT;
        out->f = strtod(copy, NULL);
        out->i = 0;
    } else {
        uint64_t mag = 0;
        const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
        for (const char *d = digits; d < digits + nint; d++) {
            uint64_t digit = (uint64_t)(*d - '0');
            if (mag > (limit - digit) / 10u) {
                char qb[QUOTE_MAX + 4];
                perr(ps, start, SCANFUSE_ERROR_PARSE, "integer %s out of the range of int64",
                     quote(whole, qb, sizeof qb));
                return false;
            }
            mag = mag * 10u + digit;
        }
        out->kind = SF_NUM_INT;
        /* -(2^63) is formed without overflowing: negate mag - 1, then subtract 1 */
        out->i = neg ? (mag == 0 ? 0 : -(int64_t)(mag - 1u) - 1) : (int64_t)mag;
        out->f = (double)out->i;
    }
    ps->p = q;
    return true;
}

/* An integer (list entries, input sizes). */
static bool lex_int(parser *ps, int64_t *out) {
    skip_ws(ps);
    const char *start = ps->p;
    sf_num n;
    if (!lex_number(ps, false, &n)) return false;
    if (n.kind != SF_NUM_INT) {
        perr(ps, start, SCANFUSE_ERROR_PARSE, "expected an integer, found %.17g", n.f);
        return false;
    }
    *out = n.i;
    return true;
}

/*
 * A list of integers "[a, b, ...]" (possibly empty) into list[0..*n).  `maxn` bounds
 * the entries; `what` names the list in messages.
 */
static bool parse_int_list(parser *ps, int64_t *list, int *n, int maxn, const char *what) {
    skip_ws(ps);
    const char *open = ps->p;
    if (!expect(ps, '[', "'['")) return false;
    *n = 0;
    if (peek(ps, ']')) {
        ps->p++;
        return true;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p == '#') {
            perr(ps, open, SCANFUSE_ERROR_PARSE, "unterminated list: missing ']'");
            return false;
        }
        if (*n >= maxn) {
            perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "%s has more than %d entries", what, maxn);
            return false;
        }
        if (!lex_int(ps, &list[*n])) return false;
        (*n)++;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p == '#') {
            perr(ps, open, SCANFUSE_ERROR_PARSE, "unterminated list: missing ']'");
            return false;
        }
        if (*ps->p == ']') {
            ps->p++;
            return true;
        }
        if (!expect(ps, ',', "',' or ']' in list")) return false;
    }
}

/* ---- the name table ----
 * Names are looked up once per reference, so a linear search over the values would
 * make parsing quadratic in the number of statements; this open-addressing table keeps
 * it linear.  It stores value ids only: the names themselves are the fusion's
 * (f->values[id].name), which stay put while the values array grows. */

static size_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static int32_t find_name(const parser *ps, const char *name) {
    if (!ps->ids) return -1;
    for (size_t i = name_hash(name) & (ps->ids_cap - 1);; i = (i + 1) & (ps->ids_cap - 1)) {
        int32_t id = ps->ids[i];
        if (id < 0) return -1;
        const char *nm = ps->f->values[id].name;
        if (nm && strcmp(nm, name) == 0) return id;
    }
}

/* Adds value id (already named in the fusion) to the table; false when out of memory. */
static bool add_name(parser *ps, int32_t id) {
    if (2 * (ps->nids + 1) >= ps->ids_cap) {
        size_t cap = ps->ids_cap ? 2 * ps->ids_cap : 64;
        int32_t *ids = malloc(cap * sizeof *ids);
        if (!ids) return false;
        for (size_t i = 0; i < cap; i++) ids[i] = -1;
        for (size_t j = 0; j < ps->ids_cap; j++) {
            int32_t old = ps->ids[j];
            if (old < 0) continue;
            size_t i = name_hash(ps->f->values[old].name) & (cap - 1);
            while (ids[i] >= 0) i = (i + 1) & (cap - 1);
            ids[i] = old;
        }
        free(ps->ids);
        ps->ids = ids;
        ps->ids_cap = cap;
    }
    size_t i = name_hash(ps->f->values[id].name) & (ps->ids_cap - 1);
    while (ps->ids[i] >= 0) i = (i + 1) & (ps->ids_cap - 1);
    ps->ids[i] = id;
    ps->nids++;
    return true;
}

/* ---- names and dtypes ---- */

/* Parses a dtype word; reports the dtype parser's message at the word. */
static bool resolve_dtype(parser *ps, token w, scanfuse_dtype *out) {
    char qb[QUOTE_MAX + 4];
    if (w.n == 0) {
        char d[32];
        perr(ps, w.s, SCANFUSE_ERROR_PARSE, "expected a dtype, found %s",
             describe_char(ps, w.s, d, sizeof d));
        return false;
    }
    if (w.n > 64) { /* no spelling is this long; keeps the copied name short */
        perr(ps, w.s, SCANFUSE_ERROR_DTYPE, "unknown dtype '%s'", quote(w, qb, sizeof qb));
        return false;
    }
    char *name = copy_token(ps, w);
    if (!name) return false;
    char msg[160];
    scanfuse_status st = sf_dtype_parse(name, out, msg, sizeof msg);
    if (st != SCANFUSE_OK) {
        perr(ps, w.s, st, "%s", msg);
        return false;
    }
    return true;
}

/* Checks that a token can name a new value; returns its copy or NULL (error set). */
static char *new_name(parser *ps, token t) {
    char qb[QUOTE_MAX + 4];
    if (t.n == 0) {
        char d[32];
        perr(ps, t.s, SCANFUSE_ERROR_PARSE, "expected a name, found %s",
             describe_char(ps, t.s, d, sizeof d));
        return NULL;
    }
    char *name = copy_token(ps, t);
    if (!name) return NULL;
    if (is_reserved(name)) {
        perr(ps, t.s, SCANFUSE_ERROR_PARSE, "'%s' is a reserved word and cannot name a value",
             name);
        return NULL;
    }
    if (find_name(ps, name) >= 0) {
        perr(ps, t.s, SCANFUSE_ERROR_PARSE, "redefined name '%s'", quote(t, qb, sizeof qb));
        return NULL;
    }
    return name;
}

/* Resolves a reference to a defined value (-1 with the error set otherwise); *copy
 * gets the name's NUL-terminated copy. */
static int32_t lookup_name(parser *ps, token t, const char **copy) {
    char *name = copy_token(ps, t);
    *copy = name;
    if (!name) return -1;
    int32_t id = find_name(ps, name);
    if (id < 0) {
        char qb[QUOTE_MAX + 4];
        perr(ps, t.s, SCANFUSE_ERROR_PARSE, "undefined name '%s'", quote(t, qb, sizeof qb));
    }
    return id;
}

/* ---- statements ---- */

/* input NAME: DTYPE[D0, ...]   (the cursor is after "input") */
static void parse_input(parser *ps) {
    token nt = lex_ident(ps);
    char *name = new_name(ps, nt);
    if (!name) return;
    if (!expect(ps, ':', "':' after the input name")) return;
    skip_ws(ps);
    token dw = lex_dtype_word(ps);
    scanfuse_dtype dt;
    if (!resolve_dtype(ps, dw, &dt)) return;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '[') {
        char d[32];
        perr(ps, ps->p, SCANFUSE_ERROR_PARSE,
             "expected '[' and the shape after the dtype (DTYPE[] for 0-d), found %s",
             describe_char(ps, ps->p, d, sizeof d));
        return;
    }
    const char *shape_at = ps->p;
    int64_t shape[SF_MAX_DIMS];
    int ndim = 0;
    /* one entry more than allowed, so that a too-long shape gets its own message */
    int64_t list[SF_MAX_DIMS + 1];
    if (!parse_int_list(ps, list, &ndim, SF_MAX_DIMS + 1, "the shape")) return;
    if (ndim > SF_MAX_DIMS) {
        perr(ps, shape_at, SCANFUSE_ERROR_SHAPE, "input '%s': more than %d dims", name,
             SF_MAX_DIMS);
        return;
    }
    for (int i = 0; i < ndim; i++) {
        if (list[i] < 0) {
            perr(ps, shape_at, SCANFUSE_ERROR_SHAPE,
                 "input '%s': size %lld of dim %d is negative", name, (long long)list[i], i);
            return;
        }
        shape[i] = list[i];
    }
    if (!at_stmt_end(ps)) return; /* the caller reports the trailing text */
    scanfuse_value v = scanfuse_input(ps->f, name, dt, ndim, shape);
    if (v == SCANFUSE_NO_VALUE || ps->f->status != SCANFUSE_OK) {
        if (ps->f->status == SCANFUSE_OK)
            perr(ps, nt.s, SCANFUSE_ERROR_STATE, "input '%s' could not be declared", name);
        else
            prefix_fusion_error(ps, nt.s);
        return;
    }
    if (!add_name(ps, v)) ps->oom = true;
}

/* output NAME [as ALIAS], ...   (the cursor is after "output") */
static void parse_output(parser *ps) {
    for (;;) {
        token nt = lex_ident(ps);
        if (nt.n == 0) {
            char d[32];
            perr(ps, nt.s, SCANFUSE_ERROR_PARSE,
                 "expected a value name after 'output', found %s",
                 describe_char(ps, nt.s, d, sizeof d));
            return;
        }
        const char *oname = NULL;
        int32_t id = lookup_name(ps, nt, &oname);
        if (id < 0) return;
        /* "NAME as ALIAS"; a value may itself be called "as" ("output as") */
        const char *save = ps->p;
        token as = lex_ident(ps);
        if (token_is(as, "as")) {
            token alias = lex_ident(ps);
            if (alias.n == 0) {
                char d[32];
                perr(ps, alias.s, SCANFUSE_ERROR_PARSE,
                     "expected an output name after 'as', found %s",
                     describe_char(ps, alias.s, d, sizeof d));
                return;
            }
            oname = copy_token(ps, alias);
            if (!oname) return;
        } else {
            ps->p = save;
        }
        if (scanfuse_output(ps->f, id, oname) != SCANFUSE_OK) {
            prefix_fusion_error(ps, nt.s);
            return;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        return; /* the caller checks for trailing text */
    }
}

static bool parse_call(parser *ps, token opt, int depth, int nresults, int32_t *out);

/* One argument: [key =] value.  Fills a (key copied into scratch).  A value may be a
 * nested call of a one-result op, which is emitted first and passed as its result. */
static bool parse_arg(parser *ps, sf_arg *a, int depth) {
    memset(a, 0, sizeof *a);
    a->dtype = SCANFUSE_DTYPE_NONE;
    skip_ws(ps);
    /* key=value: an identifier, spaces, then '=' */
    const char *save = ps->p;
    token key = lex_ident(ps);
    /* messages about an argument point at its key when it has one */
    a->line = ps->line;
    a->col = col_of(ps, save);
    if (key.n > 0 && peek(ps, '=')) {
        ps->p++;
        a->key = copy_token(ps, key);
        if (!a->key) return false;
    } else {
        ps->p = save;
    }
    skip_ws(ps);
    const char *at = ps->p;
    if (at >= ps->end || *at == '#' || *at == ',' || *at == ')') {
        char d[32];
        perr(ps, at, SCANFUSE_ERROR_PARSE, "expected an argument value, found %s",
             describe_char(ps, at, d, sizeof d));
        return false;
    }
    char c = *at;
    if (c == '[') {
        a->kind = SF_ARG_LIST;
        return parse_int_list(ps, a->list, &a->nlist, SF_MAX_LIST, "a list argument");
    }
    if (is_digit(c) || c == '-' || c == '+' || c == '.') {
        sf_num n;
        if (!lex_number(ps, true, &n)) return false;
        a->num = n;
        a->kind = n.kind == SF_NUM_INT ? SF_ARG_INT : SF_ARG_FLOAT;
        return true;
    }
    if (c == '<' || c == '>' || c == '|' || c == '=') { /* a NumPy descr */
        token w = lex_dtype_word(ps);
        a->kind = SF_ARG_DTYPE;
        return resolve_dtype(ps, w, &a->dtype);
    }
    if (is_ident_start(c)) {
        token w = lex_ident(ps);
        if (ps->p < ps->end && *ps->p == '.') {
            /* a dotted name ("torch.float16") is never a value name: a dtype */
            ps->p = at;
            w = lex_dtype_word(ps);
            a->kind = SF_ARG_DTYPE;
            return resolve_dtype(ps, w, &a->dtype);
        }
        if (peek(ps, '(')) { /* a nested call */
            int32_t id = -1;
            if (!parse_call(ps, w, depth + 1, 1, &id)) return false;
            a->kind = SF_ARG_VALUE;
            a->value = id;
            return true;
        }
        char *name = copy_token(ps, w);
        if (!name) return false;
        if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0) {
            a->kind = SF_ARG_BOOL;
            a->num.kind = SF_NUM_BOOL;
            a->num.i = name[0] == 't';
            a->num.f = (double)a->num.i;
            return true;
        }
        if (strcmp(name, "none") == 0) {
            a->kind = SF_ARG_NONE;
            return true;
        }
        if (a->key && sf_is_word_param(a->key)) { /* reduce=add: a word, not a name */
            if (w.n >= sizeof a->str) {
                char wq[QUOTE_MAX + 4];
                perr(ps, at, SCANFUSE_ERROR_PARSE, "word '%s' is too long", quote(w, wq, sizeof wq));
                return false;
            }
            memcpy(a->str, name, w.n + 1);
            a->kind = SF_ARG_STR;
            return true;
        }
        if (strcmp(name, "inf") == 0 || strcmp(name, "nan") == 0) {
            a->kind = SF_ARG_FLOAT;
            a->num.kind = SF_NUM_FLOAT;
            a->num.f = name[0] == 'i' ? INFINITY : NAN;
            return true;
        }
        int32_t id = find_name(ps, name);
        if (id >= 0) {
            a->kind = SF_ARG_VALUE;
            a->value = id;
            return true;
        }
        scanfuse_dtype dt;
        char msg[160];
        scanfuse_status st = sf_dtype_parse(name, &dt, msg, sizeof msg);
        if (st == SCANFUSE_OK) {
            a->kind = SF_ARG_DTYPE;
            a->dtype = dt;
            return true;
        }
        if (strstr(msg, "complex")) { /* a dtype the library rejects, not a typo */
            perr(ps, at, st, "%s", msg);
            return false;
        }
        char qb[QUOTE_MAX + 4];
        perr(ps, at, SCANFUSE_ERROR_PARSE, "undefined name '%s'", quote(w, qb, sizeof qb));
        return false;
    }
    if ((c == '"' || c == '\'') && a->key && sf_is_word_param(a->key)) { /* reduce="add" */
        const char *q = at + 1;
        while (q < ps->end && *q != c) q++;
        size_t n = (size_t)(q - (at + 1));
        if (q >= ps->end || n == 0 || n >= sizeof a->str) {
            perr(ps, at, SCANFUSE_ERROR_PARSE, "unterminated, empty or too long string");
            return false;
        }
        memcpy(a->str, at + 1, n);
        a->str[n] = '\0';
        a->kind = SF_ARG_STR;
        ps->p = q + 1;
        return true;
    }
    char d[32];
    perr(ps, at, SCANFUSE_ERROR_PARSE, "unexpected %s in an argument",
         describe_char(ps, at, d, sizeof d));
    return false;
}

/*
 * OP(ARGS) with the cursor after the op name `opt`: parses the arguments (nested calls
 * are emitted as they are met, so nodes stay in topological order), binds them, emits
 * the node and writes its nresults result ids to out.  A builder error is prefixed
 * with the location of the op name.  depth counts nested calls, bounded so that deep
 * nesting is an error and not a stack overflow.
 */
static bool parse_call(parser *ps, token opt, int depth, int nresults, int32_t *out) {
    char qb[QUOTE_MAX + 4];
    if (depth > MAX_DEPTH) {
        perr(ps, opt.s, SCANFUSE_ERROR_PARSE, "calls nested more than %d deep", MAX_DEPTH);
        return false;
    }
    sf_op op = SF_NUM_OPS;
    if (opt.n < 64) {
        char *opname = copy_token(ps, opt);
        if (!opname) return false;
        op = sf_op_lookup(opname);
    }
    if (op == SF_NUM_OPS) {
        perr(ps, opt.s, SCANFUSE_ERROR_PARSE, "unknown op '%s'", quote(opt, qb, sizeof qb));
        return false;
    }
    const sf_op_info *info = &sf_op_table[op];
    if (nresults != info->nout) {
        if (depth > 0)
            perr(ps, opt.s, SCANFUSE_ERROR_PARSE,
                 "%s has %d results and cannot be used as an argument", info->name,
                 info->nout);
        else
            perr(ps, ps->stmt_at, SCANFUSE_ERROR_PARSE,
                 "%s has %d result%s, but %d name%s given", info->name, info->nout,
                 info->nout == 1 ? "" : "s", nresults, nresults == 1 ? " is" : "s are");
        return false;
    }
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '(') {
        char d[32];
        perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "expected '(' after '%s', found %s", info->name,
             describe_char(ps, ps->p, d, sizeof d));
        return false;
    }
    const char *open = ps->p++;
    /* on the heap: a frame per nesting level stays small */
    sf_arg *args = malloc(MAX_ARGS * sizeof *args);
    if (!args) {
        ps->oom = true;
        return false;
    }
    int nargs = 0;
    bool ok = false;
    if (peek(ps, ')')) {
        ps->p++;
        ok = true;
    } else {
        for (;;) {
            if (nargs >= MAX_ARGS) {
                perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "more than %d arguments", MAX_ARGS);
                break;
            }
            if (!parse_arg(ps, &args[nargs], depth)) break;
            nargs++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == ')') {
                ps->p++;
                ok = true;
                break;
            }
            if (ps->p >= ps->end || *ps->p == '#') {
                perr(ps, open, SCANFUSE_ERROR_PARSE, "missing ')' for the call of %s",
                     info->name);
            } else {
                char d[32];
                perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "expected ',' or ')', found %s",
                     describe_char(ps, ps->p, d, sizeof d));
            }
            break;
        }
    }
    if (ok && depth == 0 && !at_stmt_end(ps)) ok = false; /* the caller reports it */
    if (!ok) {
        free(args);
        return false;
    }

    int32_t in[SF_MAX_IN];
    int nin = 0, bad = -1;
    sf_attrs attrs;
    sf_attrs_init(&attrs);
    char msg[SF_ERR_LEN];
    msg[0] = '\0';
    scanfuse_status st = sf_bind_args(ps->f, op, args, nargs, in, &nin, &attrs, msg,
                                      sizeof msg, &bad);
    const char *bad_at = opt.s;
    if (bad >= 0 && bad < nargs && args[bad].col > 0)
        bad_at = ps->line_start + (args[bad].col - 1);
    free(args);
    if (st != SCANFUSE_OK) {
        if (ps->f->status != SCANFUSE_OK) /* failed while making a scalar: already in f */
            prefix_fusion_error(ps, bad_at);
        else
            perr(ps, bad_at, st, "%s", msg[0] ? msg : "invalid arguments");
        return false;
    }
    if (ps->f->status != SCANFUSE_OK) { /* defensive: binding must not leave an error */
        prefix_fusion_error(ps, opt.s);
        return false;
    }
    const char *at = depth == 0 ? ps->stmt_at : opt.s;
    if (sf_emit(ps->f, op, in, nin, &attrs, out) != SCANFUSE_OK) {
        if (ps->f->status == SCANFUSE_OK)
            perr(ps, at, SCANFUSE_ERROR_STATE, "%s: could not be built", info->name);
        else
            prefix_fusion_error(ps, at);
        return false;
    }
    return true;
}

/* NAME[, NAME] = OP(ARGS)   (the cursor is after the first name) */
static void parse_assign(parser *ps, token first) {
    token names[SF_MAX_OUT + 1];
    int nnames = 0;
    names[nnames++] = first;
    while (peek(ps, ',')) {
        ps->p++;
        token t = lex_ident(ps);
        if (t.n == 0) {
            char d[32];
            perr(ps, t.s, SCANFUSE_ERROR_PARSE, "expected a result name, found %s",
                 describe_char(ps, t.s, d, sizeof d));
            return;
        }
        if (nnames > SF_MAX_OUT) {
            perr(ps, t.s, SCANFUSE_ERROR_PARSE, "more than %d result names", SF_MAX_OUT);
            return;
        }
        names[nnames++] = t;
    }
    char *cnames[SF_MAX_OUT + 1];
    for (int i = 0; i < nnames; i++) {
        cnames[i] = new_name(ps, names[i]);
        if (!cnames[i]) return;
        for (int j = 0; j < i; j++) {
            if (strcmp(cnames[i], cnames[j]) == 0) {
                char qb[QUOTE_MAX + 4];
                perr(ps, names[i].s, SCANFUSE_ERROR_PARSE,
                     "name '%s' is given twice in one statement", quote(names[i], qb, sizeof qb));
                return;
            }
        }
    }
    if (!expect(ps, '=', nnames == 1 ? "'=' or ',' after the result name" : "'='")) return;
    token opt = lex_ident(ps);
    if (opt.n == 0) {
        char d[32];
        perr(ps, opt.s, SCANFUSE_ERROR_PARSE, "expected an op name, found %s",
             describe_char(ps, opt.s, d, sizeof d));
        return;
    }
    int32_t out[SF_MAX_OUT] = {-1, -1};
    if (!parse_call(ps, opt, 0, nnames, out)) return;
    for (int i = 0; i < nnames; i++) {
        if (sf_set_value_name(ps->f, out[i], cnames[i]) != SCANFUSE_OK) {
            if (ps->f->status == SCANFUSE_OK)
                perr(ps, names[i].s, SCANFUSE_ERROR_MEMORY, "out of memory naming '%s'",
                     cnames[i]);
            else
                prefix_fusion_error(ps, names[i].s);
            return;
        }
        if (!add_name(ps, out[i])) {
            ps->oom = true;
            return;
        }
    }
}

/* One line: a statement, a comment, or nothing. */
static void parse_line(parser *ps) {
    ps->p = ps->line_start;
    if (at_stmt_end(ps)) return;
    const char *stmt_at = ps->p;
    ps->stmt_at = stmt_at;
    token first = lex_ident(ps);
    if (first.n == 0) {
        char d[32];
        perr(ps, stmt_at, SCANFUSE_ERROR_PARSE, "unexpected %s at the start of a statement",
             describe_char(ps, stmt_at, d, sizeof d));
        return;
    }
    /* "input"/"output" start a declaration only when a name follows, so values may
     * still be called input or output */
    skip_ws(ps);
    bool name_follows = ps->p < ps->end && is_ident_start(*ps->p);
    if (token_is(first, "input") && name_follows) {
        parse_input(ps);
    } else if (token_is(first, "output") && name_follows) {
        parse_output(ps);
    } else if (token_is(first, "input") || token_is(first, "output")) {
        skip_ws(ps);
        if (ps->p < ps->end && (*ps->p == '=' || *ps->p == ',')) {
            parse_assign(ps, first);
        } else {
            char d[32];
            perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "expected a name after '%s', found %s",
                 token_is(first, "input") ? "input" : "output",
                 describe_char(ps, ps->p, d, sizeof d));
        }
    } else {
        parse_assign(ps, first);
    }
    if (ps->f->status != SCANFUSE_OK) return;
    if (!at_stmt_end(ps)) {
        char d[32];
        perr(ps, ps->p, SCANFUSE_ERROR_PARSE, "unexpected %s after the statement",
             describe_char(ps, ps->p, d, sizeof d));
    }
}

scanfuse_fusion *scanfuse_parse(const char *text, const char *filename) {
    scanfuse_fusion *f = scanfuse_fusion_new();
    if (!f) return NULL;
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.f = f;
    ps.file = filename ? filename : "<text>";
    if (!text) {
        sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "%s: no text given", ps.file);
        return f;
    }
    bool any = false;
    const char *line = text;
    int lineno = 0;
    for (;;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        if (lineno < INT_MAX) lineno++;
        size_t len = (size_t)(end - line);
        if (len > (SIZE_MAX - 2) / 2) {
            sf_fail(f, SCANFUSE_ERROR_MEMORY, "%s:%d:1: line too long", ps.file, lineno);
            break;
        }
        size_t need = 2 * len + 2;
        if (need > ps.scratch_cap) {
            char *s = realloc(ps.scratch, need);
            if (!s) {
                sf_fail(f, SCANFUSE_ERROR_MEMORY, "%s:%d:1: out of memory", ps.file, lineno);
                break;
            }
            ps.scratch = s;
            ps.scratch_cap = need;
        }
        ps.scratch_used = 0;
        ps.line_start = line;
        ps.end = end;
        ps.line = lineno;
        ps.p = line;
        if (!at_stmt_end(&ps)) any = true;
        parse_line(&ps);
        if (ps.oom && f->status == SCANFUSE_OK)
            sf_fail(f, SCANFUSE_ERROR_MEMORY, "%s:%d:1: out of memory", ps.file, lineno);
        if (f->status != SCANFUSE_OK || !nl) break;
        line = nl + 1;
    }
    if (f->status == SCANFUSE_OK && !any)
        sf_fail(f, SCANFUSE_ERROR_PARSE, "%s:1:1: empty fusion text: no statements", ps.file);
    free(ps.scratch);
    free(ps.ids);
    return f;
}

scanfuse_fusion *scanfuse_parse_file(const char *path) {
    if (!path) {
        scanfuse_fusion *f = scanfuse_fusion_new();
        if (f) sf_fail(f, SCANFUSE_ERROR_ARGUMENT, "no file name given");
        return f;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        int e = errno;
        scanfuse_fusion *f = scanfuse_fusion_new();
        if (f) sf_fail(f, SCANFUSE_ERROR_IO, "cannot open '%s': %s", path, strerror(e));
        return f;
    }
    char *data = NULL;
    size_t len = 0, cap = 0;
    bool read_error = false, oom = false;
    int read_errno = 0;
    for (;;) {
        if (cap - len < 4096) {
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap < cap) {
                oom = true;
                break;
            }
            char *d = realloc(data, ncap);
            if (!d) {
                oom = true;
                break;
            }
            data = d;
            cap = ncap;
        }
        size_t got = fread(data + len, 1, cap - len - 1, fp);
        len += got;
        if (got == 0) {
            if (ferror(fp)) {
                read_error = true;
                read_errno = errno;
            }
            break;
        }
    }
    fclose(fp);
    if (oom || read_error) {
        free(data);
        scanfuse_fusion *f = scanfuse_fusion_new();
        if (f) {
            if (oom) sf_fail(f, SCANFUSE_ERROR_MEMORY, "cannot read '%s': out of memory", path);
            else sf_fail(f, SCANFUSE_ERROR_IO, "cannot read '%s': %s", path,
                         strerror(read_errno ? read_errno : EIO));
        }
        return f;
    }
    data[len] = '\0';
    /* The text form never contains NUL; a NUL would silently end the text early. */
    const char *nul = memchr(data, '\0', len);
    if (nul) {
        int line = 1;
        const char *ls = data;
        for (const char *q = data; q < nul; q++) {
            if (*q == '\n') {
                if (line < INT_MAX) line++;
                ls = q + 1;
            }
        }
        size_t col = (size_t)(nul - ls) + 1;
        scanfuse_fusion *f = scanfuse_fusion_new();
        if (f) sf_fail(f, SCANFUSE_ERROR_PARSE, "%s:%d:%zu: NUL byte in the text", path, line,
                       col);
        free(data);
        return f;
    }
    scanfuse_fusion *f = scanfuse_parse(data, path);
    free(data);
    return f;
}
