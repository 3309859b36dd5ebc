/*
 * args.c — op signatures and argument binding: the bridge between "how a user spells
 * a call" (tensor ids plus text such as "dim=-1, dtype=f32, exclusive=true") and the
 * one attribute struct every op reads (sf_attrs).
 *
 * Three jobs:
 *  - sf_op_signature: parses the SIGNATURE column of ops.def once into a static table.
 *    The table is program text, so a malformed signature is a bug (SF_ASSERT), never a
 *    user error.
 *  - sf_parse_attr_text: tokenizes attribute text into sf_arg entries.  Only keys need
 *    storage (they are copied into the caller's buffer); every value is decoded here.
 *  - sf_bind_args: matches arguments to parameters like Python does (positional first,
 *    then keywords, each parameter at most once, defaults for the rest) and stores each
 *    one in the sf_attrs field its name maps to.  One extension: a positional tensor
 *    met where a non-tensor parameter comes next fills the next tensor parameter, so
 *    the tensors-first order of scanfuse_op works for ops such as gather(x, dim,
 *    index).  Word parameters (reduce=add) take a bare or quoted word, checked here.
 *
 * Invariants: nothing here touches the fusion except to append weak scalar nodes, and
 * those are appended only after every argument has been checked, so a rejected call
 * leaves no stray nodes behind.  Semantic checks that need shapes or dtypes (a dim in
 * range, a dtype the op accepts) belong to sf_infer, not here.
 */
#include "sf.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* Small helpers shared by the parser and the binder                               */
/* ------------------------------------------------------------------------------ */

/* Shortest "%g" text that reads back as the same double, so messages show 0.1 and
 * not 0.10000000000000001. */
static void format_double(char *out, size_t outlen, double v) {
    if (isnan(v)) {
        snprintf(out, outlen, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, outlen, v < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, outlen, "%.*g", prec, v);
        if (strtod(out, NULL) == v) return;
    }
}

static bool is_ident_start(int c) { return isalpha(c) || c == '_'; }
static bool is_ident_char(int c) { return isalnum(c) || c == '_'; }

/* Parses a whole token as a decimal int64 ("-12"); false if it is not one or if it
 * does not fit (then *overflow is set). */
static bool parse_int_token(const char *s, size_t n, int64_t *out, bool *overflow) {
    *overflow = false;
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == n) return false;
    /* Accumulate as a negative number so that INT64_MIN parses without overflow. */
    int64_t acc = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        int d = s[i] - '0';
        if (acc < (INT64_MIN + d) / 10) {
            *overflow = true;
            return false;
        }
        acc = acc * 10 - d;
    }
    if (!neg) {
        if (acc == INT64_MIN) {
            *overflow = true;
            return false;
        }
        acc = -acc;
    }
    *out = acc;
    return true;
}

static sf_num num_int(int64_t v) {
    sf_num n;
    memset(&n, 0, sizeof n);
    n.kind = SF_NUM_INT;
    n.i = v;
    n.f = (double)v;
    return n;
}

static sf_num num_float(double v) {
    sf_num n;
    memset(&n, 0, sizeof n);
    n.kind = SF_NUM_FLOAT;
    n.f = v;
    return n;
}

static sf_num num_bool(bool v) {
    sf_num n;
    memset(&n, 0, sizeof n);
    n.kind = SF_NUM_BOOL;
    n.i = v ? 1 : 0;
    n.f = v ? 1.0 : 0.0;
    return n;
}

static void arg_clear(sf_arg *a) {
    memset(a, 0, sizeof *a);
    a->key = NULL;
    a->kind = SF_ARG_NONE;
    a->value = SCANFUSE_NO_VALUE;
    a->dtype = SCANFUSE_DTYPE_NONE;
}

/* ------------------------------------------------------------------------------ */
/* Value tokens (shared by attribute text and signature defaults)                  */
/* ------------------------------------------------------------------------------ */

typedef struct lexer {
    const char *text;
    size_t pos;
    char *msg;
    size_t msglen;
} lexer;

static void skip_space(lexer *lx) {
    while (lx->text[lx->pos] && isspace((unsigned char)lx->text[lx->pos])) lx->pos++;
}

/* Column (1-based) of the current position, for messages. */
static int col_of(size_t pos) { return (int)pos + 1; }

/* A number: an optional sign, then digits with '.', exponent, or inf/nan/infinity.
 * Integers (digits only) become SF_NUM_INT; everything else goes through strtod on the
 * isolated token, which must be consumed entirely. */
static scanfuse_status lex_number(lexer *lx, sf_num *out) {
    const char *t = lx->text;
    size_t start = lx->pos, p = lx->pos;
    if (t[p] == '+' || t[p] == '-') p++;
    if (isalpha((unsigned char)t[p])) {
        size_t w = p;
        while (is_ident_char((unsigned char)t[p])) p++;
        size_t n = p - w;
        bool neg = t[start] == '-';
        if ((n == 3 && strncmp(t + w, "inf", 3) == 0) ||
            (n == 8 && strncmp(t + w, "infinity", 8) == 0)) {
            *out = num_float(neg ? -INFINITY : INFINITY);
        } else if (n == 3 && strncmp(t + w, "nan", 3) == 0) {
            *out = num_float(NAN);
        } else {
            sf_msg(lx->msg, lx->msglen, "column %d: malformed number '%.*s'", col_of(start),
                   (int)(p - start), t + start);
            return SCANFUSE_ERROR_PARSE;
        }
        lx->pos = p;
        return SCANFUSE_OK;
    }
    /* The token runs over digits, '.', letters and '_' (so that a typo such as "12abc"
     * is one token, rejected whole) and a sign right after an exponent letter.  p > 0
     * here whenever t[p] is a sign, because a leading sign was skipped above. */
    while (is_ident_char((unsigned char)t[p]) || t[p] == '.' ||
           ((t[p] == '+' || t[p] == '-') && (t[p - 1] == 'e' || t[p - 1] == 'E')))
        p++;
    size_t n = p - start;
    char tok[64];
    if (n == 0 || n >= sizeof tok) {
        sf_msg(lx->msg, lx->msglen, "column %d: malformed number '%.*s'", col_of(start),
               (int)(n > 40 ? 40 : n), t + start);
        return SCANFUSE_ERROR_PARSE;
    }
    memcpy(tok, t + start, n);
    tok[n] = '\0';
    int64_t iv;
    bool overflow;
    if (parse_int_token(tok, n, &iv, &overflow)) {
        *out = num_int(iv);
    } else if (overflow) {
        sf_msg(lx->msg, lx->msglen, "column %d: integer %s does not fit in int64",
               col_of(start), tok);
        return SCANFUSE_ERROR_PARSE;
    } else {
        /* Only plain decimal floats: strtod alone would also accept hex floats
         * ("0x1p3"), so letters other than the exponent are refused first. */
        bool digit_seen = false, only_decimal = true;
        for (size_t i = 0; i < n; i++) {
            char c = tok[i];
            if (isdigit((unsigned char)c)) digit_seen = true;
            else if (!(c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) only_decimal = false;
        }
        bool ok = digit_seen && only_decimal;
        char *end = NULL;
        double v = ok ? strtod(tok, &end) : 0.0;
        if (!ok || !end || *end != '\0') {
            sf_msg(lx->msg, lx->msglen, "column %d: malformed number '%s'", col_of(start),
                   tok);
            return SCANFUSE_ERROR_PARSE;
        }
        /* Overflow to infinity is a typo far more often than intent. */
        if (isinf(v)) {
            sf_msg(lx->msg, lx->msglen, "column %d: number %s is out of range for float64",
                   col_of(start), tok);
            return SCANFUSE_ERROR_PARSE;
        }
        *out = num_float(v);
    }
    lx->pos = p;
    return SCANFUSE_OK;
}

/* Stores a word for a word parameter (SF_ARG_STR); `at` is its position. */
static scanfuse_status put_word(lexer *lx, size_t at, const char *word, sf_arg *out) {
    size_t n = strlen(word);
    if (n == 0 || n >= sizeof out->str) {
        sf_msg(lx->msg, lx->msglen, "column %d: word '%.40s' is too long or empty", col_of(at),
               word);
        return SCANFUSE_ERROR_PARSE;
    }
    memcpy(out->str, word, n + 1);
    out->kind = SF_ARG_STR;
    return SCANFUSE_OK;
}

/* A bare word: true/false/none (also Python's capitalized spellings) or a dtype name.
 * Dtype names may contain dots (torch.float16); NumPy descrs ("<f4") are lexed by the
 * caller as words too.  `key` is the keyword the value is given for (NULL when
 * positional), used only to pick the clearer message for an unknown word. */
static scanfuse_status lex_word(lexer *lx, const char *key, sf_arg *out) {
    const char *t = lx->text;
    size_t start = lx->pos, p = lx->pos;
    if (t[p] == '<' || t[p] == '>' || t[p] == '|' || t[p] == '=') p++;
    while (is_ident_char((unsigned char)t[p]) || t[p] == '.') p++;
    size_t n = p - start;
    char word[64];
    if (n >= sizeof word) {
        sf_msg(lx->msg, lx->msglen, "column %d: word '%.40s...' is too long", col_of(start),
               t + start);
        return SCANFUSE_ERROR_PARSE;
    }
    memcpy(word, t + start, n);
    word[n] = '\0';
    lx->pos = p;
    if (strcmp(word, "true") == 0 || strcmp(word, "True") == 0) {
        out->kind = SF_ARG_BOOL;
        out->num = num_bool(true);
        return SCANFUSE_OK;
    }
    if (strcmp(word, "false") == 0 || strcmp(word, "False") == 0) {
        out->kind = SF_ARG_BOOL;
        out->num = num_bool(false);
        return SCANFUSE_OK;
    }
    if (strcmp(word, "none") == 0 || strcmp(word, "None") == 0) {
        out->kind = SF_ARG_NONE;
        return SCANFUSE_OK;
    }
    if (key && sf_is_word_param(key)) /* reduce=add: a word, checked when binding */
        return put_word(lx, start, word, out);
    if (strcmp(word, "inf") == 0 || strcmp(word, "infinity") == 0 || strcmp(word, "nan") == 0) {
        out->kind = SF_ARG_FLOAT;
        out->num = num_float(word[0] == 'n' ? NAN : INFINITY);
        return SCANFUSE_OK;
    }
    char m[160] = "";
    scanfuse_dtype dt;
    scanfuse_status st = sf_dtype_parse(word, &dt, m, sizeof m);
    if (st == SCANFUSE_OK) {
        out->kind = SF_ARG_DTYPE;
        out->dtype = dt;
        return SCANFUSE_OK;
    }
    /* A complex or big-endian dtype is a dtype error with the parser's own message;
     * anything else is a word we do not know. */
    if (strncmp(m, "unknown dtype", 13) != 0 || (key && strcmp(key, "dtype") == 0)) {
        sf_msg(lx->msg, lx->msglen, "%s", m);
        return SCANFUSE_ERROR_DTYPE;
    }
    sf_msg(lx->msg, lx->msglen,
           "column %d: unexpected '%s' (expected a number, true, false, none, a dtype or "
           "a list)",
           col_of(start), word);
    return SCANFUSE_ERROR_PARSE;
}

/* "[a, b, ...]" of integers (a trailing comma is allowed, [] is the empty list). */
static scanfuse_status lex_list(lexer *lx, sf_arg *out) {
    const char *t = lx->text;
    size_t open = lx->pos;
    lx->pos++; /* '[' */
    out->kind = SF_ARG_LIST;
    out->nlist = 0;
    for (;;) {
        skip_space(lx);
        if (t[lx->pos] == ']') {
            lx->pos++;
            return SCANFUSE_OK;
        }
        if (t[lx->pos] == '\0') {
            sf_msg(lx->msg, lx->msglen, "column %d: '[' is never closed", col_of(open));
            return SCANFUSE_ERROR_PARSE;
        }
        size_t at = lx->pos;
        char c = t[at];
        if (!(isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.')) {
            sf_msg(lx->msg, lx->msglen, "column %d: lists hold integers only, got '%c'",
                   col_of(at), c);
            return SCANFUSE_ERROR_PARSE;
        }
        sf_num n;
        scanfuse_status st = lex_number(lx, &n);
        if (st != SCANFUSE_OK) return st;
        if (n.kind != SF_NUM_INT) {
            char fb[40];
            format_double(fb, sizeof fb, n.f);
            sf_msg(lx->msg, lx->msglen, "column %d: lists hold integers only, got %s",
                   col_of(at), fb);
            return SCANFUSE_ERROR_PARSE;
        }
        if (out->nlist >= SF_MAX_LIST) {
            sf_msg(lx->msg, lx->msglen, "column %d: a list holds at most %d entries",
                   col_of(at), SF_MAX_LIST);
            return SCANFUSE_ERROR_PARSE;
        }
        out->list[out->nlist++] = n.i;
        skip_space(lx);
        if (t[lx->pos] == '\0') {
            sf_msg(lx->msg, lx->msglen, "column %d: '[' is never closed", col_of(open));
            return SCANFUSE_ERROR_PARSE;
        }
        if (t[lx->pos] == ',') {
            lx->pos++;
        } else if (t[lx->pos] != ']') {
            sf_msg(lx->msg, lx->msglen, "column %d: expected ',' or ']' in a list",
                   col_of(lx->pos));
            return SCANFUSE_ERROR_PARSE;
        }
    }
}

/* One value at the current position (after skipping space). */
static scanfuse_status lex_value(lexer *lx, const char *key, sf_arg *out) {
    skip_space(lx);
    const char *t = lx->text;
    char c = t[lx->pos];
    if (c == '[') return lex_list(lx, out);
    if (c == '\'' || c == '"') {
        /* A quoted dtype ("<f4" as NumPy writes it); nothing else is a string. */
        size_t open = lx->pos;
        const char *close = strchr(t + open + 1, c);
        size_t n = close ? (size_t)(close - (t + open + 1)) : 0;
        char word[64];
        if (!close || n >= sizeof word) {
            sf_msg(lx->msg, lx->msglen, "column %d: unterminated or too long string",
                   col_of(open));
            return SCANFUSE_ERROR_PARSE;
        }
        memcpy(word, t + open + 1, n);
        word[n] = '\0';
        if (key && sf_is_word_param(key)) { /* reduce="add" */
            scanfuse_status st = put_word(lx, open, word, out);
            if (st == SCANFUSE_OK) lx->pos = open + n + 2;
            return st;
        }
        char m[160];
        if (sf_dtype_parse(word, &out->dtype, m, sizeof m) != SCANFUSE_OK) {
            sf_msg(lx->msg, lx->msglen, "%s", m);
            return SCANFUSE_ERROR_DTYPE;
        }
        out->kind = SF_ARG_DTYPE;
        lx->pos = open + n + 2;
        return SCANFUSE_OK;
    }
    if (isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.') {
        sf_num n;
        scanfuse_status st = lex_number(lx, &n);
        if (st != SCANFUSE_OK) return st;
        out->num = n;
        out->kind = n.kind == SF_NUM_INT ? SF_ARG_INT : SF_ARG_FLOAT;
        return SCANFUSE_OK;
    }
    if (is_ident_start((unsigned char)c) || c == '<' || c == '>' || c == '|' || c == '=') {
        return lex_word(lx, key, out);
    }
    if (c == '\0' || c == ',')
        sf_msg(lx->msg, lx->msglen, "column %d: expected a value", col_of(lx->pos));
    else
        sf_msg(lx->msg, lx->msglen, "column %d: unexpected character '%c'", col_of(lx->pos),
               c);
    return SCANFUSE_ERROR_PARSE;
}

/* ------------------------------------------------------------------------------ */
/* Signatures                                                                      */
/* ------------------------------------------------------------------------------ */

static sf_signature sig_table[SF_NUM_OPS];

static sf_pkind parse_pkind(const char *s, size_t n) {
    static const struct {
        const char *name;
        sf_pkind kind;
    } kinds[] = {{"tensor", SF_P_TENSOR}, {"int", SF_P_INT},   {"ints", SF_P_INTS},
                 {"num", SF_P_NUM},       {"bool", SF_P_BOOL}, {"dtype", SF_P_DTYPE},
                 {"str", SF_P_STR}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].name) == n && strncmp(kinds[i].name, s, n) == 0) return kinds[i].kind;
    SF_ASSERT(!"unknown parameter kind in ops.def");
    return SF_P_TENSOR;
}

/* "name:kind[=default], ..." — written by us in ops.def, so violations assert. */
static void parse_signature(const char *text, sf_signature *sig) {
    memset(sig, 0, sizeof *sig);
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        SF_ASSERT(sig->nparams < SF_MAX_PARAMS);
        sf_param *prm = &sig->params[sig->nparams++];
        const char *name = p;
        while (is_ident_char((unsigned char)*p)) p++;
        size_t nlen = (size_t)(p - name);
        SF_ASSERT(nlen > 0 && nlen < sizeof prm->name && *p == ':');
        memcpy(prm->name, name, nlen);
        p++;
        const char *kind = p;
        while (isalpha((unsigned char)*p)) p++;
        prm->kind = parse_pkind(kind, (size_t)(p - kind));
        if (*p == '=') {
            p++;
            const char *def = p;
            while (*p && *p != ',') p++;
            size_t dlen = (size_t)(p - def);
            while (dlen > 0 && def[dlen - 1] == ' ') dlen--;
            SF_ASSERT(dlen > 0 && dlen < sizeof prm->default_text);
            memcpy(prm->default_text, def, dlen);
            prm->has_default = true;
            prm->default_none = strcmp(prm->default_text, "none") == 0;
        }
        SF_ASSERT(*p == ',' || *p == '\0');
    }
}

static void parse_all_signatures(void) {
    for (int i = 0; i < SF_NUM_OPS; i++) parse_signature(sf_op_table[i].signature, &sig_table[i]);
}

/* pthread_once: fusions may be built from several threads at once. */
static pthread_once_t sig_once = PTHREAD_ONCE_INIT;

const sf_signature *sf_op_signature(sf_op op) {
    if ((int)op < 0 || op >= SF_NUM_OPS) return NULL;
    pthread_once(&sig_once, parse_all_signatures);
    return &sig_table[op];
}

bool sf_is_word_param(const char *name) {
    if (!name) return false;
    for (int op = 0; op < SF_NUM_OPS; op++) {
        const sf_signature *sig = sf_op_signature((sf_op)op);
        for (int p = 0; p < sig->nparams; p++)
            if (sig->params[p].kind == SF_P_STR && strcmp(sig->params[p].name, name) == 0)
                return true;
    }
    return false;
}

bool sf_reduce_parse(const char *word, sf_reduce *out) {
    /* PyTorch's scatter spells it reduce='add'; nothing else is supported yet. */
    if (word && strcmp(word, "add") == 0) {
        *out = SF_REDUCE_ADD;
        return true;
    }
    return false;
}

const char *sf_reduce_name(sf_reduce r) {
    switch (r) {
    case SF_REDUCE_NONE: return "none";
    case SF_REDUCE_ADD: return "add";
    }
    return "?";
}

/* ------------------------------------------------------------------------------ */
/* Attribute text                                                                  */
/* ------------------------------------------------------------------------------ */

scanfuse_status sf_parse_attr_text(const char *text, sf_arg *args, int maxargs, int *nargs,
                                   char *buf, size_t buflen, char *msg, size_t msglen) {
    if (nargs) *nargs = 0;
    if (!text) return SCANFUSE_OK;
    if (!args || !nargs || maxargs < 0) {
        sf_msg(msg, msglen, "no room for arguments");
        return SCANFUSE_ERROR_ARGUMENT;
    }
    lexer lx = {text, 0, msg, msglen};
    size_t used = 0; /* bytes of buf taken by keys */
    int n = 0;
    for (;;) {
        skip_space(&lx);
        if (text[lx.pos] == '\0') break;
        if (n >= maxargs) {
            sf_msg(msg, msglen, "column %d: too many arguments (at most %d)", col_of(lx.pos),
                   maxargs);
            return SCANFUSE_ERROR_ARGUMENT;
        }
        sf_arg *a = &args[n];
        arg_clear(a);
        a->line = 1;
        a->col = col_of(lx.pos);
        /* A key is an identifier followed by '=' (but not "==", which starts a NumPy
         * descr value such as "==i8" only after a key). */
        size_t p = lx.pos;
        if (is_ident_start((unsigned char)text[p])) {
            size_t k = p;
            while (is_ident_char((unsigned char)text[k])) k++;
            size_t e = k;
            while (text[e] && isspace((unsigned char)text[e])) e++;
            if (text[e] == '=') {
                size_t klen = k - p;
                if (!buf || used + klen + 1 > buflen) {
                    sf_msg(msg, msglen, "arguments text too long for its buffer");
                    return SCANFUSE_ERROR_ARGUMENT;
                }
                memcpy(buf + used, text + p, klen);
                buf[used + klen] = '\0';
                a->key = buf + used;
                used += klen + 1;
                lx.pos = e + 1;
                skip_space(&lx);
                if (text[lx.pos] == '\0' || text[lx.pos] == ',') {
                    sf_msg(msg, msglen, "column %d: expected a value after '%s='",
                           col_of(lx.pos), a->key);
                    return SCANFUSE_ERROR_PARSE;
                }
            }
        }
        scanfuse_status st = lex_value(&lx, a->key, a);
        if (st != SCANFUSE_OK) return st;
        n++;
        skip_space(&lx);
        if (text[lx.pos] == ',') {
            lx.pos++;
        } else if (text[lx.pos] != '\0') {
            sf_msg(msg, msglen, "column %d: expected ',' between arguments, got '%c'",
                   col_of(lx.pos), text[lx.pos]);
            return SCANFUSE_ERROR_PARSE;
        }
    }
    *nargs = n;
    return SCANFUSE_OK;
}

/* ------------------------------------------------------------------------------ */
/* Binding                                                                         */
/* ------------------------------------------------------------------------------ */

/* "float 1.5", "int 3", "list [1, 2]", ... : how an argument reads in a message. */
static void describe_arg(const scanfuse_fusion *f, const sf_arg *a, char *out, size_t outlen) {
    char tmp[40];
    switch (a->kind) {
    case SF_ARG_VALUE: {
        char nb[32];
        const char *name = NULL;
        if (f && a->value >= 0 && a->value < f->nvalues)
            name = sf_value_name(f, a->value, nb, sizeof nb);
        if (name) snprintf(out, outlen, "tensor %s", name);
        else snprintf(out, outlen, "tensor (id %d)", (int)a->value);
        return;
    }
    case SF_ARG_INT: snprintf(out, outlen, "int %lld", (long long)a->num.i); return;
    case SF_ARG_FLOAT:
        format_double(tmp, sizeof tmp, a->num.f);
        snprintf(out, outlen, "float %s", tmp);
        return;
    case SF_ARG_BOOL: snprintf(out, outlen, "bool %s", a->num.i ? "true" : "false"); return;
    case SF_ARG_DTYPE: snprintf(out, outlen, "dtype %s", scanfuse_dtype_name(a->dtype)); return;
    case SF_ARG_NONE: snprintf(out, outlen, "none"); return;
    case SF_ARG_STR: snprintf(out, outlen, "word '%s'", a->str); return;
    case SF_ARG_LIST: {
        size_t len = 0;
        len += (size_t)snprintf(out, outlen, "list [");
        for (int i = 0; i < a->nlist && len < outlen; i++)
            len += (size_t)snprintf(out + len, outlen - len, "%s%lld", i ? ", " : "",
                                    (long long)a->list[i]);
        if (len < outlen) snprintf(out + len, outlen - len, "]");
        return;
    }
    }
    snprintf(out, outlen, "an argument of unknown kind");
}

static const char *pkind_name(sf_pkind k) {
    switch (k) {
    case SF_P_TENSOR: return "a tensor";
    case SF_P_INT: return "an int";
    case SF_P_INTS: return "an int or a list of ints";
    case SF_P_NUM: return "a number";
    case SF_P_BOOL: return "a bool";
    case SF_P_DTYPE: return "a dtype";
    case SF_P_STR: return "a word";
    }
    return "?";
}

/* Does argument a fit a parameter of kind k?  none fits only a "=none" default. */
static bool arg_fits(const sf_param *prm, const sf_arg *a) {
    if (a->kind == SF_ARG_NONE) return prm->default_none;
    switch (prm->kind) {
    case SF_P_TENSOR:
        return a->kind == SF_ARG_VALUE || a->kind == SF_ARG_INT || a->kind == SF_ARG_FLOAT ||
               a->kind == SF_ARG_BOOL;
    case SF_P_INT: return a->kind == SF_ARG_INT;
    case SF_P_INTS: return a->kind == SF_ARG_INT || a->kind == SF_ARG_LIST;
    case SF_P_NUM:
        return a->kind == SF_ARG_INT || a->kind == SF_ARG_FLOAT || a->kind == SF_ARG_BOOL;
    case SF_P_BOOL: return a->kind == SF_ARG_BOOL;
    case SF_P_DTYPE: return a->kind == SF_ARG_DTYPE;
    case SF_P_STR: return a->kind == SF_ARG_STR;
    }
    return false;
}

/* Stores a non-tensor argument in the attribute field its parameter name maps to (see
 * the sf_attrs comment in sf.h).  none leaves the field "not given". */
static void store_attr(const sf_param *prm, const sf_arg *a, sf_attrs *at) {
    if (a->kind == SF_ARG_NONE) return;
    const char *nm = prm->name;
    if (strcmp(nm, "dim") == 0 && prm->kind == SF_P_INT) {
        at->dim = a->num.i;
        at->has_dim = true;
    } else if (prm->kind == SF_P_INTS) {
        SF_ASSERT(strcmp(nm, "dim") == 0 || strcmp(nm, "size") == 0 ||
                  strcmp(nm, "shape") == 0 || strcmp(nm, "dims") == 0 || strcmp(nm, "pad") == 0);
        if (a->kind == SF_ARG_INT) {
            at->list[0] = a->num.i;
            at->nlist = 1;
        } else {
            SF_ASSERT(a->nlist >= 0 && a->nlist <= SF_MAX_LIST);
            memcpy(at->list, a->list, (size_t)a->nlist * sizeof a->list[0]);
            at->nlist = a->nlist;
        }
        at->has_list = true;
    } else if (strcmp(nm, "dtype") == 0) {
        at->dtype = a->dtype;
    } else if (strcmp(nm, "start") == 0) {
        at->start = a->num;
        at->has_start = true;
    } else if (strcmp(nm, "end") == 0) {
        at->end = a->num;
        at->has_end = true;
    } else if (strcmp(nm, "step") == 0) {
        at->step = a->num;
        at->has_step = true;
    } else if (strcmp(nm, "value") == 0 || strcmp(nm, "fill_value") == 0) {
        at->value = a->num;
        at->has_value = true;
    } else if (strcmp(nm, "diagonal") == 0) {
        at->diagonal = a->num.i;
    } else if (strcmp(nm, "exclusive") == 0) {
        at->exclusive = a->num.i != 0;
    } else if (strcmp(nm, "reverse") == 0) {
        at->reverse = a->num.i != 0;
    } else if (strcmp(nm, "keepdim") == 0) {
        at->keepdim = a->num.i != 0;
    } else if (strcmp(nm, "k") == 0 || strcmp(nm, "num_classes") == 0 ||
               strcmp(nm, "minlength") == 0 || strcmp(nm, "range") == 0) {
        at->count = a->num.i;
        at->has_count = true;
    } else if (strcmp(nm, "largest") == 0) {
        at->largest = a->num.i != 0;
    } else if (strcmp(nm, "sorted") == 0) {
        at->sorted = a->num.i != 0;
    } else if (strcmp(nm, "descending") == 0) {
        at->descending = a->num.i != 0;
    } else if (strcmp(nm, "stable") == 0) {
        at->stable = a->num.i != 0;
    } else if (strcmp(nm, "reduce") == 0) {
        bool ok = sf_reduce_parse(a->str, &at->reduce);
        SF_ASSERT(ok); /* sf_bind_args checked the word */
    } else {
        SF_ASSERT(!"ops.def parameter without an sf_attrs field");
    }
}

/* The default of a parameter as an argument (defaults are written in the text form). */
static void default_arg(const sf_param *prm, sf_arg *out) {
    arg_clear(out);
    char m[128];
    lexer lx = {prm->default_text, 0, m, sizeof m};
    scanfuse_status st = lex_value(&lx, prm->name, out);
    SF_ASSERT(st == SCANFUSE_OK);
    SF_ASSERT(arg_fits(prm, out));
}

scanfuse_status sf_bind_args(scanfuse_fusion *f, sf_op op, const sf_arg *args, int nargs,
                             int32_t *in, int *nin, sf_attrs *attrs, char *msg,
                             size_t msglen, int *bad_arg) {
    if (bad_arg) *bad_arg = -1;
    const sf_signature *sig = sf_op_signature(op);
    if (!sig) {
        sf_msg(msg, msglen, "unknown op (%d)", (int)op);
        return SCANFUSE_ERROR_ARGUMENT;
    }
    const char *opname = sf_op_table[op].name;
    if (nargs < 0 || (nargs > 0 && !args) || !in || !nin || !attrs) {
        sf_msg(msg, msglen, "%s: invalid argument array", opname);
        return SCANFUSE_ERROR_ARGUMENT;
    }

    /* Which argument fills each parameter (-1: none yet). */
    int bound[SF_MAX_PARAMS];
    for (int p = 0; p < SF_MAX_PARAMS; p++) bound[p] = -1;

    int npos = 0;
    bool seen_key = false;
    for (int i = 0; i < nargs; i++) {
        const sf_arg *a = &args[i];
        int p;
        if (!a->key) {
            if (seen_key) {
                if (bad_arg) *bad_arg = i;
                sf_msg(msg, msglen, "%s: positional argument follows keyword argument", opname);
                return SCANFUSE_ERROR_ARGUMENT;
            }
            while (npos < sig->nparams && bound[npos] >= 0) npos++; /* taken, see below */
            if (npos >= sig->nparams) {
                if (bad_arg) *bad_arg = i;
                sf_msg(msg, msglen, "%s: too many positional arguments (takes at most %d, got %d)",
                       opname, sig->nparams, i + 1);
                return SCANFUSE_ERROR_ARGUMENT;
            }
            p = npos;
            /* A tensor where a non-tensor parameter comes next fills the next tensor
             * parameter instead, so the tensors-first spelling that scanfuse_op and the
             * printer use, gather(x, idx, dim=1), binds like torch's gather(x, 1, idx);
             * the skipped parameters still take the positional arguments that follow. */
            if (a->kind == SF_ARG_VALUE && sig->params[p].kind != SF_P_TENSOR) {
                for (int q = p + 1; q < sig->nparams; q++)
                    if (sig->params[q].kind == SF_P_TENSOR && bound[q] < 0) {
                        p = q;
                        break;
                    }
            }
            if (p == npos) npos++;
        } else {
            seen_key = true;
            for (p = 0; p < sig->nparams; p++)
                if (strcmp(sig->params[p].name, a->key) == 0) break;
            if (p == sig->nparams) {
                if (bad_arg) *bad_arg = i;
                sf_msg(msg, msglen, "%s: unexpected argument '%s'", opname, a->key);
                return SCANFUSE_ERROR_ARGUMENT;
            }
            if (bound[p] >= 0) {
                if (bad_arg) *bad_arg = i;
                sf_msg(msg, msglen, "%s: argument '%s' given twice", opname, a->key);
                return SCANFUSE_ERROR_ARGUMENT;
            }
        }
        const sf_param *prm = &sig->params[p];
        if (!arg_fits(prm, a)) {
            char d[96];
            describe_arg(f, a, d, sizeof d);
            if (bad_arg) *bad_arg = i;
            sf_msg(msg, msglen, "%s: argument '%s' must be %s, got %s", opname, prm->name,
                   pkind_name(prm->kind), d);
            return SCANFUSE_ERROR_ARGUMENT;
        }
        sf_reduce rd;
        if (a->kind == SF_ARG_STR && !sf_reduce_parse(a->str, &rd)) {
            /* the one word parameter so far is reduce= */
            if (bad_arg) *bad_arg = i;
            sf_msg(msg, msglen, "%s: argument '%s' must be none or add, got '%s'", opname,
                   prm->name, a->str);
            return SCANFUSE_ERROR_ARGUMENT;
        }
        bound[p] = i;
    }

    /* torch.arange(n) means arange(0, n): a lone bound is the end.  Likewise
     * arange(end=n) starts at 0. */
    sf_arg zero_start;
    bool use_zero_start = false;
    int p_start = -1, p_end = -1;
    if (op == SF_OP_arange) {
        for (int p = 0; p < sig->nparams; p++) {
            if (strcmp(sig->params[p].name, "start") == 0) p_start = p;
            if (strcmp(sig->params[p].name, "end") == 0) p_end = p;
        }
        SF_ASSERT(p_start >= 0 && p_end >= 0);
        bool end_given = bound[p_end] >= 0 && args[bound[p_end]].kind != SF_ARG_NONE;
        if (!end_given && bound[p_start] >= 0) {
            bound[p_end] = bound[p_start];
            bound[p_start] = -1;
            end_given = true;
        }
        if (end_given && bound[p_start] < 0) {
            arg_clear(&zero_start);
            zero_start.kind = SF_ARG_INT;
            zero_start.num = num_int(0);
            use_zero_start = true;
        }
    }

    for (int p = 0; p < sig->nparams; p++) {
        if (bound[p] >= 0 || sig->params[p].has_default) continue;
        if (p == p_start && use_zero_start) continue;
        sf_msg(msg, msglen, "%s: missing required argument '%s'", opname, sig->params[p].name);
        return SCANFUSE_ERROR_ARGUMENT;
    }

    /* Everything checked: fill the attributes, then create the weak scalars. */
    sf_attrs_init(attrs);
    int ntensor = 0;
    for (int p = 0; p < sig->nparams; p++) {
        const sf_param *prm = &sig->params[p];
        if (prm->kind == SF_P_TENSOR) {
            ntensor++;
            continue;
        }
        if (bound[p] >= 0) {
            store_attr(prm, &args[bound[p]], attrs);
        } else if (p == p_start && use_zero_start) {
            store_attr(prm, &zero_start, attrs);
        } else {
            sf_arg d;
            default_arg(prm, &d);
            store_attr(prm, &d, attrs);
        }
    }
    SF_ASSERT(ntensor <= SF_MAX_IN);

    int k = 0;
    for (int p = 0; p < sig->nparams; p++) {
        if (sig->params[p].kind != SF_P_TENSOR) continue;
        const sf_arg *a = &args[bound[p]];
        if (a->kind == SF_ARG_VALUE) {
            in[k++] = a->value;
            continue;
        }
        /* A number where a tensor goes: a Python-like weak scalar. */
        if (!f) {
            if (bad_arg) *bad_arg = bound[p];
            sf_msg(msg, msglen, "%s: no fusion to hold the scalar for argument '%s'", opname,
                   sig->params[p].name);
            return SCANFUSE_ERROR_STATE;
        }
        sf_attrs sa;
        sf_attrs_init(&sa);
        sa.value = a->num;
        sa.has_value = true;
        int32_t id = SCANFUSE_NO_VALUE;
        scanfuse_status st = sf_emit(f, SF_OP_scalar, NULL, 0, &sa, &id);
        if (st != SCANFUSE_OK) {
            if (bad_arg) *bad_arg = bound[p];
            sf_msg(msg, msglen, "%s", f->error[0] ? f->error : "scalar: cannot create a scalar");
            return st;
        }
        in[k++] = id;
    }
    *nin = k;
    return SCANFUSE_OK;
}
