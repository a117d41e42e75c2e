/*
 * profview._fastscan: the events of a Chrome-trace ``traceEvents`` array → typed columns.
 *
 * One job: read a byte range of the array, one event object at a time, and write the fields that
 * profview's events frame needs straight into column buffers (doubles, int64s, and per-column
 * dictionary codes for text), without a Python object per event and without holding the GIL.
 * Python (parsers/fast_chrome.py) splits the array into ranges, runs them on threads and checks
 * that the ranges join up.
 *
 * The reader is a validating JSON parser.  It reproduces what Polars' NDJSON reader makes of each
 * value under profview's read schema (parsers/chrome_trace.py): anything it cannot reproduce
 * exactly (a float where text is expected, an escaped string inside an array, a lone surrogate,
 * invalid JSON ...) stops it with ValueError, and the caller falls back to that reader.
 *
 * Null encodings in the returned buffers: NaN for floats, INT64_MIN for ints, code 0 for text.
 * ``external_id`` 0 is returned as null, as profview's events frame has it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#if defined(__GLIBC__) || defined(__APPLE__)
#define HAVE_STRTOD_L 1
/* JSON numbers use '.' whatever LC_NUMERIC the host program set: strtod follows it, strtod_l with
 * the C locale does not. */
static locale_t c_numeric;
#endif

/* ---- columns ------------------------------------------------------------------------------ */

/* The argument columns and the ``args`` keys that feed them come from parsers/schema.py's
 * ARG_COLUMNS, through the generated arg_fields.h (scripts/gen_arg_fields.py): one list for both
 * readers.  The top-level columns are fixed here. */
#include "arg_fields.h"

enum { F_TS, F_DUR, PV_ARG_FLOAT_COLUMNS N_FLOAT };
static const char *FLOAT_NAMES[N_FLOAT] = {"ts", "dur", PV_ARG_FLOAT_NAMES};

enum { I_FLOW, PV_ARG_INT_COLUMNS N_INT };
static const char *INT_NAMES[N_INT] = {"flow_id", PV_ARG_INT_NAMES};

enum { S_PH, S_CAT, S_NAME, S_PID, S_TID, PV_ARG_STR_COLUMNS N_STR };
static const char *STR_NAMES[N_STR] = {"ph", "cat", "name", "pid", "tid", PV_ARG_STR_NAMES};

#define INT_NULL INT64_MIN

/* How a value is read into its column. */
enum { R_FLOAT, R_INT, R_TEXT, R_STREAM };

typedef struct {
    const char *key;
    int read;   /* R_* */
    int column; /* index into the float/int/str columns */
    int slot;   /* per-event slot: a column fed by two keys has two slots, the first one wins */
} Field;

/* Top-level event keys (args handled separately). */
enum { T_PH, T_CAT, T_NAME, T_PID, T_TID, T_TS, T_DUR, T_ID, T_ARGS, N_TOP };

/* Keys of ``args``; slot numbers index ArgValues.  A column fed by two keys has two slots. */
enum { PV_ARG_SLOTS N_ARG /* at most 64: the seen-mask in read_args is 64 bits */ };
_Static_assert(N_ARG <= 64, "the seen-mask in read_args has 64 bits");
static const Field ARG_FIELDS[N_ARG] = {PV_ARG_FIELDS};

/* ---- errors ------------------------------------------------------------------------------- */

typedef struct {
    const char *what; /* static message, NULL when fine */
    const char *where;
} Failure;

#define FAIL(st, msg, at)          \
    do {                           \
        (st)->fail.what = (msg);   \
        (st)->fail.where = (at);   \
        return -1;                 \
    } while (0)

/* ---- arena and dictionaries --------------------------------------------------------------- */

typedef struct Block {
    struct Block *next;
    size_t used, size;
    char data[];
} Block;

typedef struct {
    uint64_t hash;
    const char *ptr;
    uint32_t len;
    uint32_t code;
} Entry;

typedef struct {
    Entry *slots;
    size_t mask;   /* capacity - 1 */
    size_t count;  /* distinct strings */
    const char **ptrs; /* by code - 1 */
    uint32_t *lens;
    size_t cap_uniques;
    /* the value interned last: consecutive events often repeat a column's value (ph, cat, pid,
     * tid), which is then found without hashing it or probing the table */
    const char *last_ptr;
    size_t last_len;
    uint32_t last_code;
} Dict;

typedef struct {
    /* growable columns */
    size_t rows, cap;
    double *f[N_FLOAT];
    int64_t *i[N_INT];
    uint32_t *s[N_STR];
    Dict dict[N_STR];
    Block *arena;
    char *tmp; /* scratch for unescaped / serialised text */
    size_t tmp_len, tmp_cap;
    Failure fail;
    int cut; /* the failure is the end of the data: the document is cut short, not malformed */
    int starved; /* the failure may be only the end of the data: more of it could make the value whole */
    const char *end;
    const char *first, *last; /* the range being read: [first, last) holds its events' starts */
} State;

/* The hash only places a string in its table (codes follow first appearance), so it may change
 * freely.  The tail of a string of 8 bytes or more is read as its last 8 bytes (overlapping the
 * previous word): one load instead of a copy of variable length. */
static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xff51afd7ed558ccdULL);
    uint64_t w = 0;
    if (n >= 8) {
        const char *last = p + n - 8;
        while (p < last) {
            memcpy(&w, p, 8);
            h = (h ^ w) * 0x100000001B3ULL;
            h ^= h >> 29;
            p += 8;
        }
        memcpy(&w, last, 8);
        h = (h ^ w) * 0xC2B2AE3D27D4EB4FULL;
        h ^= h >> 32;
        return h;
    }
    memcpy(&w, p, n);
    h = (h ^ w) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 32;
    return h;
}

static char *arena_copy(State *st, const char *p, size_t n) {
    Block *b = st->arena;
    if (b == NULL || b->size - b->used < n) {
        size_t size = n > (1 << 20) ? n : (1 << 20);
        b = malloc(sizeof(Block) + size);
        if (b == NULL) return NULL;
        b->next = st->arena;
        b->used = 0;
        b->size = size;
        st->arena = b;
    }
    char *out = b->data + b->used;
    memcpy(out, p, n);
    b->used += n;
    return out;
}

static int dict_init(Dict *d) {
    d->mask = 255;
    d->count = 0;
    d->last_ptr = NULL;
    d->last_len = 0;
    d->last_code = 0;
    d->slots = calloc(d->mask + 1, sizeof(Entry));
    d->cap_uniques = 256;
    d->ptrs = malloc(d->cap_uniques * sizeof(char *));
    d->lens = malloc(d->cap_uniques * sizeof(uint32_t));
    return (d->slots && d->ptrs && d->lens) ? 0 : -1;
}

static void dict_free(Dict *d) {
    free(d->slots);
    free(d->ptrs);
    free(d->lens);
}

static int dict_grow(Dict *d) {
    size_t cap = (d->mask + 1) * 2;
    Entry *slots = calloc(cap, sizeof(Entry));
    if (slots == NULL) return -1;
    for (size_t k = 0; k <= d->mask; k++) {
        Entry *e = &d->slots[k];
        if (e->code == 0) continue;
        size_t at = e->hash & (cap - 1);
        while (slots[at].code) at = (at + 1) & (cap - 1);
        slots[at] = *e;
    }
    free(d->slots);
    d->slots = slots;
    d->mask = cap - 1;
    return 0;
}

/* The code of ``p[0:n]`` in ``d`` (1-based), adding it; ``stable`` says p outlives the scan. */
static int64_t intern(State *st, Dict *d, const char *p, size_t n, int stable) {
    if (n > UINT32_MAX) return -1;
    if (d->last_code != 0 && d->last_len == n && memcmp(d->last_ptr, p, n) == 0) return d->last_code;
    uint64_t h = hash_bytes(p, n);
    size_t at = h & d->mask;
    for (;;) {
        Entry *e = &d->slots[at];
        if (e->code == 0) break;
        if (e->hash == h && e->len == n && memcmp(e->ptr, p, n) == 0) {
            d->last_ptr = e->ptr;
            d->last_len = n;
            d->last_code = e->code;
            return e->code;
        }
        at = (at + 1) & d->mask;
    }
    if (!stable) {
        p = arena_copy(st, p, n);
        if (p == NULL) return -1;
    }
    if (d->count == d->cap_uniques) {
        size_t cap = d->cap_uniques * 2;
        const char **ptrs = realloc(d->ptrs, cap * sizeof(char *));
        if (ptrs == NULL) return -1;
        d->ptrs = ptrs;
        uint32_t *lens = realloc(d->lens, cap * sizeof(uint32_t));
        if (lens == NULL) return -1;
        d->lens = lens;
        d->cap_uniques = cap;
    }
    d->ptrs[d->count] = p;
    d->lens[d->count] = (uint32_t)n;
    d->count++;
    Entry *e = &d->slots[at];
    e->hash = h;
    e->ptr = p;
    e->len = (uint32_t)n;
    e->code = (uint32_t)d->count;
    d->last_ptr = p;
    d->last_len = n;
    d->last_code = e->code;
    if (d->count * 2 > d->mask + 1 && dict_grow(d) < 0) return -1;
    return (int64_t)d->count;
}

/* ---- scratch text ------------------------------------------------------------------------- */

static int tmp_reserve(State *st, size_t extra) {
    if (st->tmp_len + extra <= st->tmp_cap) return 0;
    size_t cap = st->tmp_cap ? st->tmp_cap : 256;
    while (cap < st->tmp_len + extra) cap *= 2;
    char *tmp = realloc(st->tmp, cap);
    if (tmp == NULL) return -1;
    st->tmp = tmp;
    st->tmp_cap = cap;
    return 0;
}

static int tmp_put(State *st, const char *p, size_t n) {
    if (tmp_reserve(st, n) < 0) return -1;
    memcpy(st->tmp + st->tmp_len, p, n);
    st->tmp_len += n;
    return 0;
}

/* ---- lexing ------------------------------------------------------------------------------- */

static inline int is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Pretty-printed traces put a newline and an indent before most keys: after the common case (no
 * whitespace at all, one test), runs are skipped 16 bytes at a time. */
static inline const char *skip_ws(const char *p, const char *end) {
    if (p >= end || (unsigned char)*p > ' ') return p;
    if (!is_ws(*p)) return p;
    if (++p < end && (unsigned char)*p > ' ') return p; /* the one space after ':' or ',' */
#ifdef __SSE2__
    while (p + 16 <= end) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i space = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
        __m128i other_ws = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t')));
        __m128i ws = _mm_or_si128(space, other_ws);
        unsigned other = (unsigned)_mm_movemask_epi8(ws) ^ 0xFFFFu;
        if (other) return p + __builtin_ctz(other);
        p += 16;
    }
#endif
    while (p < end && is_ws(*p)) p++;
    return p;
}

/* p at the opening quote.  Sets the content span and whether it holds escapes; returns the byte
 * after the closing quote, or NULL (unterminated, raw control character, bad escape). */
static const char *scan_string(State *st, const char *p, const char **start, size_t *len, int *escaped) {
    const char *end = st->end;
    const char *q = p + 1;
    *escaped = 0;
    for (;;) {
#ifdef __SSE2__
        while (q + 16 <= end) {
            __m128i v = _mm_loadu_si128((const __m128i *)q);
            __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
            __m128i slash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
            /* bytes < 0x20: (v & 0xE0) == 0 */
            __m128i ctrl = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)0xE0)), _mm_setzero_si128());
            int bits = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), ctrl));
            if (bits) {
                q += __builtin_ctz(bits);
                break;
            }
            q += 16;
        }
#endif
        if (q >= end) {
            st->fail.what = "unterminated string";
            st->fail.where = p;
            st->cut = 1;
            return NULL;
        }
        unsigned char c = (unsigned char)*q;
        if (c == '"') {
            *start = p + 1;
            *len = (size_t)(q - p - 1);
            return q + 1;
        }
        if (c == '\\') {
            *escaped = 1;
            if (q + 1 >= end) {
                st->cut = 1;
                break;
            }
            char e = q[1];
            if (e == 'u') {
                if (q + 6 > end) {
                    st->cut = 1;
                    break;
                }
                for (int k = 2; k < 6; k++) {
                    char h = q[k];
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) goto bad;
                }
                q += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                       e == 't') {
                q += 2;
            } else {
                goto bad;
            }
            continue;
        }
        if (c < 0x20) goto bad;
        q++;
    }
bad:
    st->fail.what = "invalid string (control character or bad escape)";
    st->fail.where = q;
    return NULL;
}

static int hex4(const char *p) {
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char h = p[k];
        v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
}

/* Unescape a string's content into the scratch buffer (appending).  Lone surrogates are refused. */
static int unescape_into_tmp(State *st, const char *p, size_t n) {
    const char *end = p + n;
    if (tmp_reserve(st, n) < 0) FAIL(st, "out of memory", p);
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        if (bs == NULL) bs = end;
        if (tmp_put(st, p, (size_t)(bs - p)) < 0) FAIL(st, "out of memory", p);
        if (bs == end) break;
        char e = bs[1];
        char out[4];
        size_t k = 1;
        p = bs + 2;
        switch (e) {
            case '"': out[0] = '"'; break;
            case '\\': out[0] = '\\'; break;
            case '/': out[0] = '/'; break;
            case 'b': out[0] = '\b'; break;
            case 'f': out[0] = '\f'; break;
            case 'n': out[0] = '\n'; break;
            case 'r': out[0] = '\r'; break;
            case 't': out[0] = '\t'; break;
            default: { /* 'u' */
                uint32_t cp = (uint32_t)hex4(bs + 2);
                p = bs + 6;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (p + 6 > end || p[0] != '\\' || p[1] != 'u') FAIL(st, "lone surrogate", bs);
                    uint32_t lo = (uint32_t)hex4(p + 2);
                    if (lo < 0xDC00 || lo > 0xDFFF) FAIL(st, "lone surrogate", bs);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    FAIL(st, "lone surrogate", bs);
                }
                if (cp < 0x80) {
                    out[0] = (char)cp;
                } else if (cp < 0x800) {
                    out[0] = (char)(0xC0 | (cp >> 6));
                    out[1] = (char)(0x80 | (cp & 0x3F));
                    k = 2;
                } else if (cp < 0x10000) {
                    out[0] = (char)(0xE0 | (cp >> 12));
                    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    out[2] = (char)(0x80 | (cp & 0x3F));
                    k = 3;
                } else {
                    out[0] = (char)(0xF0 | (cp >> 18));
                    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    out[3] = (char)(0x80 | (cp & 0x3F));
                    k = 4;
                }
            }
        }
        if (tmp_put(st, out, k) < 0) FAIL(st, "out of memory", p);
    }
    return 0;
}

/* A JSON number at p: its end, whether it is an integer literal; NULL if malformed. */
static const char *scan_number(State *st, const char *p, int *is_int) {
    const char *end = st->end;
    const char *q = p;
    *is_int = 1;
    if (q < end && *q == '-') q++;
    if (q >= end) goto bad;
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        while (q < end && *q >= '0' && *q <= '9') q++;
    } else {
        goto bad;
    }
    if (q < end && *q == '.') {
        *is_int = 0;
        q++;
        if (q >= end || *q < '0' || *q > '9') goto bad;
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        *is_int = 0;
        q++;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q >= end || *q < '0' || *q > '9') goto bad;
        while (q < end && *q >= '0' && *q <= '9') q++;
    }
    return q;
bad:
    st->fail.what = "invalid number";
    st->fail.where = p; /* a number cut at the end is "malformed" to the general reader too: no cut */
    st->starved = q >= end; /* ... but a chunk's end is not the document's: "1e" may go on */
    return NULL;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The double nearest to the number literal [p, q): exact fast path, strtod otherwise. */
static int number_to_double(const char *p, const char *q, double *out) {
    const char *r = p;
    int negative = 0;
    if (*r == '-') {
        negative = 1;
        r++;
    }
    uint64_t mantissa = 0;
    int digits = 0, exp10 = 0;
    while (r < q && *r >= '0' && *r <= '9') {
        if (digits < 19) {
            mantissa = mantissa * 10 + (uint64_t)(*r - '0');
            if (mantissa) digits++;
        } else {
            exp10++;
        }
        r++;
    }
    if (r < q && *r == '.') {
        r++;
        while (r < q && *r >= '0' && *r <= '9') {
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*r - '0');
                if (mantissa) digits++;
                exp10--;
            }
            r++;
        }
    }
    if (r == q && mantissa <= (1ULL << 53) && exp10 >= -22 && exp10 <= 22) {
        double v = (double)mantissa;
        v = exp10 < 0 ? v / POW10[-exp10] : v * POW10[exp10];
        *out = negative ? -v : v;
        return 0;
    }
    char small[64];
    size_t n = (size_t)(q - p);
    char *text = n < sizeof small ? small : malloc(n + 1);
    if (text == NULL) return -1;
    memcpy(text, p, n);
    text[n] = 0;
#ifdef HAVE_STRTOD_L
    double v = c_numeric ? strtod_l(text, NULL, c_numeric) : strtod(text, NULL);
#else
    double v = strtod(text, NULL);
#endif
    if (text != small) free(text);
    if (!isfinite(v)) return -1; /* Polars refuses such a number outright */
    *out = v;
    return 0;
}

/* An integer literal [p, q) as int64; 0 when it does not fit (Polars gives null). */
static int literal_to_int(const char *p, const char *q, int64_t *out) {
    int negative = *p == '-';
    const char *r = p + negative;
    if (q - r > 19) return 0;
    uint64_t v = 0;
    for (; r < q; r++) {
        uint64_t next = v * 10 + (uint64_t)(*r - '0');
        if (next / 10 != v) return 0;
        v = next;
    }
    if (negative) {
        if (v > (uint64_t)INT64_MAX + 1) return 0;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)v;
    }
    return 1;
}

static const char *scan_literal(State *st, const char *p, const char *word, size_t n) {
    size_t left = (size_t)(st->end - p);
    if (left < n || memcmp(p, word, n) != 0) {
        st->fail.what = "invalid literal";
        st->fail.where = p;
        st->cut = left < n && memcmp(p, word, left) == 0; /* "tru" at the very end */
        return NULL;
    }
    return p + n;
}

/* After a value inside an object or array at *pp: 1 (past ',': another item follows), 0 (past
 * ``close``: the container ends) or -1 (malformed). */
static int next_item(State *st, const char **pp, char close) {
    const char *p = skip_ws(*pp, st->end);
    if (p < st->end && (*p == ',' || *p == close)) {
        *pp = skip_ws(p + 1, st->end);
        return *p == ',';
    }
    st->fail.what = close == '}' ? "expected ',' or '}' after a value" : "expected ',' or ']' after a value";
    st->fail.where = p;
    return -1;
}

/* Skip any JSON value, validating it.  Returns the byte after it, or NULL. */
static const char *skip_value(State *st, const char *p, int depth) {
    const char *end = st->end;
    if (depth > 256) {
        st->fail.what = "nesting too deep";
        st->fail.where = p;
        return NULL;
    }
    if (p >= end) goto cut;
    const char *s;
    size_t n;
    int esc, is_int;
    switch (*p) {
        case '"':
            return scan_string(st, p, &s, &n, &esc);
        case '{':
            p = skip_ws(p + 1, end);
            if (p < end && *p == '}') return p + 1;
            for (;;) {
                if (p >= end || *p != '"') goto bad;
                p = scan_string(st, p, &s, &n, &esc);
                if (p == NULL) return NULL;
                p = skip_ws(p, end);
                if (p >= end || *p != ':') goto bad;
                p = skip_value(st, skip_ws(p + 1, end), depth + 1);
                if (p == NULL) return NULL;
                int more = next_item(st, &p, '}');
                if (more <= 0) return more ? NULL : p;
            }
        case '[':
            p = skip_ws(p + 1, end);
            if (p < end && *p == ']') return p + 1;
            for (;;) {
                p = skip_value(st, p, depth + 1);
                if (p == NULL) return NULL;
                int more = next_item(st, &p, ']');
                if (more <= 0) return more ? NULL : p;
            }
        case 't':
            return scan_literal(st, p, "true", 4);
        case 'f':
            return scan_literal(st, p, "false", 5);
        case 'n':
            return scan_literal(st, p, "null", 4);
        default:
            return scan_number(st, p, &is_int);
    }
cut:
    st->fail.what = "unexpected end";
    st->fail.where = p;
    return NULL;
bad:
    if (st->fail.what == NULL) {
        st->fail.what = "invalid JSON";
        st->fail.where = p;
    }
    return NULL;
}

/* ---- values as Polars reads them ---------------------------------------------------------- */

/* Write a non-string value to the scratch buffer the way Polars renders it as text.  Returns the
 * byte after the value; NULL where the rendering is not reproduced here (floats, escapes). */
static const char *render_value(State *st, const char *p, int depth) {
    const char *end = st->end;
    const char *s, *q;
    size_t n;
    int esc, is_int;
    if (depth > 64 || p >= end) goto unsupported;
    switch (*p) {
        case '"':
            q = scan_string(st, p, &s, &n, &esc);
            if (q == NULL) return NULL;
            if (esc) goto unsupported;
            if (tmp_put(st, p, n + 2) < 0) goto unsupported;
            return q;
        case '[':
        case '{': {
            int object = *p == '{';
            char close = object ? '}' : ']';
            if (tmp_put(st, p, 1) < 0) goto unsupported;
            p = skip_ws(p + 1, end);
            if (p < end && *p == close) {
                if (tmp_put(st, &close, 1) < 0) goto unsupported;
                return p + 1;
            }
            for (;;) {
                if (object) {
                    if (p >= end || *p != '"') goto unsupported;
                    q = scan_string(st, p, &s, &n, &esc);
                    if (q == NULL) return NULL;
                    if (esc || tmp_put(st, p, n + 2) < 0 || tmp_put(st, ": ", 2) < 0) goto unsupported;
                    p = skip_ws(q, end);
                    if (p >= end || *p != ':') goto unsupported;
                    p = skip_ws(p + 1, end);
                }
                p = render_value(st, p, depth + 1);
                if (p == NULL) return NULL;
                p = skip_ws(p, end);
                if (p < end && *p == ',') {
                    if (tmp_put(st, ", ", 2) < 0) goto unsupported;
                    p = skip_ws(p + 1, end);
                    continue;
                }
                if (p < end && *p == close) {
                    if (tmp_put(st, &close, 1) < 0) goto unsupported;
                    return p + 1;
                }
                goto unsupported;
            }
        }
        case 't':
            q = scan_literal(st, p, "true", 4);
            if (q == NULL || tmp_put(st, "true", 4) < 0) return NULL;
            return q;
        case 'f':
            q = scan_literal(st, p, "false", 5);
            if (q == NULL || tmp_put(st, "false", 5) < 0) return NULL;
            return q;
        case 'n':
            q = scan_literal(st, p, "null", 4);
            if (q == NULL || tmp_put(st, "null", 4) < 0) return NULL;
            return q;
        default:
            q = scan_number(st, p, &is_int);
            if (q == NULL) return NULL;
            /* Integers up to 18 digits print as written (except -0); anything else is left to Polars. */
            if (!is_int || q - p > 18 || (q - p == 2 && p[0] == '-' && p[1] == '0')) goto unsupported;
            if (tmp_put(st, p, (size_t)(q - p)) < 0) goto unsupported;
            return q;
    }
unsupported:
    if (st->fail.what == NULL) {
        st->fail.what = "a value whose text form is left to the general reader";
        st->fail.where = p;
    }
    return NULL;
}

/* The end of the value at p when its text form (render_value's) is its own bytes: no whitespace
 * but one space after each ',' (and ':'), strings without escapes, integers as render_value prints
 * them.  Then the value is interned straight from the buffer, without building its text.  NULL
 * otherwise (or if the value is malformed), leaving the failure state as it was: render_value then
 * decides, with its own messages. */
static const char *canonical_end(State *st, const char *p, int depth) {
    const char *end = st->end;
    const char *s, *q;
    size_t n;
    int esc, is_int;
    if (depth > 64 || p >= end) return NULL;
    switch (*p) {
        case '"':
            q = scan_string(st, p, &s, &n, &esc);
            return q == NULL || esc ? NULL : q;
        case '[':
        case '{': {
            int object = *p == '{';
            char close = object ? '}' : ']';
            p++;
            if (p < end && *p == close) return p + 1;
            for (;;) {
                if (object) {
                    if (p >= end || *p != '"') return NULL;
                    q = scan_string(st, p, &s, &n, &esc);
                    if (q == NULL || esc || end - q < 2 || q[0] != ':' || q[1] != ' ') return NULL;
                    p = q + 2;
                }
                p = canonical_end(st, p, depth + 1);
                if (p == NULL || p >= end) return NULL;
                if (*p == close) return p + 1;
                if (*p != ',' || end - p < 2 || p[1] != ' ') return NULL;
                p += 2;
            }
        }
        case 't':
            return end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
        case 'f':
            return end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
        case 'n':
            return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
        default:
            q = scan_number(st, p, &is_int);
            if (q == NULL || !is_int || q - p > 18 || (q - p == 2 && p[0] == '-' && p[1] == '0')) return NULL;
            return q;
    }
}

/* A text column's value: its dictionary code (0 for null). */
static const char *read_text(State *st, const char *p, int column, uint32_t *code) {
    Dict *d = &st->dict[column];
    const char *s, *q;
    size_t n;
    int esc;
    int64_t c;
    if (p < st->end && *p == '"') {
        q = scan_string(st, p, &s, &n, &esc);
        if (q == NULL) return NULL;
        if (!esc) {
            c = intern(st, d, s, n, 1);
        } else {
            st->tmp_len = 0;
            if (unescape_into_tmp(st, s, n) < 0) return NULL;
            c = intern(st, d, st->tmp, st->tmp_len, 0);
        }
    } else if (p < st->end && *p == 'n') {
        q = scan_literal(st, p, "null", 4);
        if (q == NULL) return NULL;
        *code = 0;
        return q;
    } else {
        Failure fail = st->fail;
        int cut = st->cut, starved = st->starved;
        q = canonical_end(st, p, 0);
        if (q != NULL) {
            c = intern(st, d, p, (size_t)(q - p), 1);
        } else {
            st->fail = fail;
            st->cut = cut;
            st->starved = starved;
            st->tmp_len = 0;
            q = render_value(st, p, 0);
            if (q == NULL) return NULL;
            c = intern(st, d, st->tmp, st->tmp_len, 0);
        }
    }
    if (c < 0) {
        st->fail.what = "out of memory";
        st->fail.where = p;
        return NULL;
    }
    *code = (uint32_t)c;
    return q;
}

/* number_to_double's exact path in the same pass as scan_number's checks, for the common number
 * (``ts``, ``dur``: up to 19 significant digits, no exponent): the end of the number, or NULL where
 * the two-pass path decides (anything else, including a number that reaches the data's end). */
static const char *read_plain_double(const char *p, const char *end, double *out) {
    const char *r = p;
    int negative = r < end && *r == '-';
    r += negative;
    uint64_t mantissa = 0;
    int digits = 0, exp10 = 0;
    if (r >= end) return NULL;
    if (*r == '0') {
        r++;
    } else if (*r >= '1' && *r <= '9') {
        while (r < end && *r >= '0' && *r <= '9') {
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*r - '0');
                digits++;
            } else {
                exp10++;
            }
            r++;
        }
    } else {
        return NULL;
    }
    if (r < end && *r == '.') {
        r++;
        if (r >= end || *r < '0' || *r > '9') return NULL;
        while (r < end && *r >= '0' && *r <= '9') {
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*r - '0');
                if (mantissa) digits++;
                exp10--;
            }
            r++;
        }
    }
    if (r >= end || *r == 'e' || *r == 'E') return NULL;
    if (mantissa > (1ULL << 53) || exp10 < -22 || exp10 > 22) return NULL;
    double v = (double)mantissa;
    v = exp10 < 0 ? v / POW10[-exp10] : v * POW10[exp10];
    *out = negative ? -v : v;
    return r;
}

static const char *read_float(State *st, const char *p, double *out) {
    int is_int;
    *out = NAN;
    const char *plain = read_plain_double(p, st->end, out);
    if (plain != NULL) return plain;
    *out = NAN;
    if (p < st->end && (*p == '-' || (*p >= '0' && *p <= '9'))) {
        const char *q = scan_number(st, p, &is_int);
        if (q == NULL) return NULL;
        if (number_to_double(p, q, out) < 0) {
            st->fail.what = "a number out of range";
            st->fail.where = p;
            return NULL;
        }
        return q;
    }
    return skip_value(st, p, 1);
}

/* The common integer (up to 18 digits, so it fits and is not the null marker) in one pass: its
 * end, or NULL where scan_number and literal_to_int decide. */
static const char *read_plain_int(const char *p, const char *end, int64_t *out) {
    const char *r = p;
    int negative = r < end && *r == '-';
    r += negative;
    if (r >= end) return NULL;
    uint64_t v = 0;
    if (*r == '0') {
        r++;
    } else if (*r >= '1' && *r <= '9') {
        const char *digits = r;
        while (r < end && *r >= '0' && *r <= '9') v = v * 10 + (uint64_t)(*r++ - '0');
        if (r - digits > 18) return NULL;
    } else {
        return NULL;
    }
    if (r >= end || *r == '.' || *r == 'e' || *r == 'E') return NULL;
    *out = negative ? -(int64_t)v : (int64_t)v;
    return r;
}

static const char *read_int(State *st, const char *p, int64_t *out) {
    int is_int;
    const char *plain = read_plain_int(p, st->end, out);
    if (plain != NULL) return plain;
    *out = INT_NULL;
    if (p < st->end && (*p == '-' || (*p >= '0' && *p <= '9'))) {
        const char *q = scan_number(st, p, &is_int);
        if (q == NULL) return NULL;
        if (is_int && literal_to_int(p, q, out) && *out == INT_NULL) {
            st->fail.what = "the smallest int64 (profview's null marker)";
            st->fail.where = p;
            return NULL;
        }
        if (!is_int) *out = INT_NULL;
        return q;
    }
    return skip_value(st, p, 1);
}

/* ``stream`` is read as text and cast to an integer: integer literals and digit strings count. */
static const char *read_stream(State *st, const char *p, int64_t *out) {
    *out = INT_NULL;
    if (p < st->end && *p == '"') {
        const char *s;
        size_t n;
        int esc;
        const char *q = scan_string(st, p, &s, &n, &esc);
        if (q == NULL) return NULL;
        if (esc) {
            st->fail.what = "an escaped stream name";
            st->fail.where = p;
            return NULL;
        }
        const char *r = s, *e = s + n;
        int negative = 0;
        if (r < e && (*r == '+' || *r == '-')) negative = *r++ == '-';
        if (r == e) return q;
        uint64_t v = 0;
        for (; r < e; r++) {
            if (*r < '0' || *r > '9') return q;
            uint64_t next = v * 10 + (uint64_t)(*r - '0');
            if (next / 10 != v || next > (uint64_t)INT64_MAX) return q;
            v = next;
        }
        *out = negative ? -(int64_t)v : (int64_t)v;
        return q;
    }
    if (p < st->end && (*p == '-' || (*p >= '0' && *p <= '9'))) {
        int is_int;
        const char *q = scan_number(st, p, &is_int);
        if (q == NULL) return NULL;
        if (!is_int) { /* Polars prints a float as text first ("7.0" reads as "7"): left to it */
            st->fail.what = "a float stream";
            st->fail.where = p;
            return NULL;
        }
    }
    return read_int(st, p, out);
}

/* ---- events ------------------------------------------------------------------------------- */

typedef struct {
    double f[N_FLOAT];
    double occ2;
    int64_t i[N_INT];
    int64_t ext2, corr2;
    uint32_t s[N_STR];
} Row;

/* Room for more rows, at ``p`` in the range.  Past the first 1,024 rows the range's row count is
 * projected from the bytes per row so far (plus a sixteenth), so that a column is copied by realloc
 * once or twice instead of once per doubling; the capacity grows by half at least and 16 times at
 * most (small first events must not make a huge range ask for an impossible buffer), and
 * column_new gives back what the range did not use.  Only the columns that hold a value have a
 * buffer (see read_event's end). */
static int grow_columns(State *st, const char *p) {
    size_t cap = 1024;
    if (st->cap) {
        size_t done = (size_t)(p - st->first), range = (size_t)(st->last - st->first);
        double projected = done ? (double)st->rows * ((double)range / (double)done) : 0.0;
        projected += projected / 16;
        cap = st->cap + st->cap / 2;
        if (projected > (double)cap) cap = projected < (double)st->cap * 16 ? (size_t)projected : st->cap * 16;
    }
    for (int k = 0; k < N_FLOAT; k++) {
        if (st->f[k] == NULL) continue;
        double *a = realloc(st->f[k], cap * sizeof(double));
        if (a == NULL) return -1;
        st->f[k] = a;
    }
    for (int k = 0; k < N_INT; k++) {
        if (st->i[k] == NULL) continue;
        int64_t *a = realloc(st->i[k], cap * sizeof(int64_t));
        if (a == NULL) return -1;
        st->i[k] = a;
    }
    for (int k = 0; k < N_STR; k++) {
        if (st->s[k] == NULL) continue;
        uint32_t *a = realloc(st->s[k], cap * sizeof(uint32_t));
        if (a == NULL) return -1;
        st->s[k] = a;
    }
    st->cap = cap;
    return 0;
}

/* A column's first value, at row r: its buffer, null up to r.  A column no event of the range
 * fills never gets one (most argument columns, in most traces): no memory, no writes. */
static void *first_value(State *st, size_t width, size_t r, int kind) {
    void *a = malloc(st->cap * width);
    if (a == NULL) return NULL;
    if (kind == 0) {
        for (size_t k = 0; k < r; k++) ((double *)a)[k] = NAN;
    } else if (kind == 1) {
        for (size_t k = 0; k < r; k++) ((int64_t *)a)[k] = INT_NULL;
    } else {
        memset(a, 0, r * width);
    }
    return a;
}

static int top_key(const char *k, size_t n) {
    switch (n) {
        case 2:
            if (k[0] == 'p' && k[1] == 'h') return T_PH;
            if (k[0] == 't' && k[1] == 's') return T_TS;
            if (k[0] == 'i' && k[1] == 'd') return T_ID;
            return -1;
        case 3:
            if (memcmp(k, "cat", 3) == 0) return T_CAT;
            if (memcmp(k, "pid", 3) == 0) return T_PID;
            if (memcmp(k, "tid", 3) == 0) return T_TID;
            if (memcmp(k, "dur", 3) == 0) return T_DUR;
            return -1;
        case 4:
            if (memcmp(k, "name", 4) == 0) return T_NAME;
            if (memcmp(k, "args", 4) == 0) return T_ARGS;
            return -1;
        default:
            return -1;
    }
}

/* ARG_FIELDS by key length (filled once at import by index_arg_keys): a key is compared only with
 * the fields of its own length, most often none or one, instead of with every field. */
#define ARG_KEY_MAX 64
static int8_t ARG_BY_LEN[ARG_KEY_MAX][N_ARG + 1]; /* field indices, -1 after the last */

static void index_arg_keys(void) {
    int used[ARG_KEY_MAX] = {0};
    memset(ARG_BY_LEN, -1, sizeof ARG_BY_LEN);
    for (int a = 0; a < N_ARG; a++) {
        size_t n = strlen(ARG_FIELDS[a].key);
        if (n < ARG_KEY_MAX) ARG_BY_LEN[n][used[n]++] = (int8_t)a;
    }
}

static int arg_key(const char *k, size_t n) {
    if (n >= ARG_KEY_MAX) {
        for (int a = 0; a < N_ARG; a++) /* no such key today: kept general all the same */
            if (strlen(ARG_FIELDS[a].key) == n && memcmp(ARG_FIELDS[a].key, k, n) == 0) return a;
        return -1;
    }
    for (const int8_t *a = ARG_BY_LEN[n]; *a >= 0; a++) {
        const char *key = ARG_FIELDS[*a].key;
        if (key[0] == k[0] && memcmp(key, k, n) == 0) return *a;
    }
    return -1;
}

/* A member's key at p (its opening quote): sets the key's span and returns where its value
 * begins; NULL if malformed or if the key has escapes (the general reader handles those). */
static const char *read_key(State *st, const char *p, const char **key, size_t *len) {
    int esc;
    if (p >= st->end || *p != '"') {
        st->fail.what = "expected a key";
        st->fail.where = p;
        return NULL;
    }
    p = scan_string(st, p, key, len, &esc);
    if (p == NULL) return NULL;
    if (esc) {
        st->fail.what = "an escaped key";
        st->fail.where = *key;
        return NULL;
    }
    p = skip_ws(p, st->end);
    if (p >= st->end || *p != ':') {
        st->fail.what = "expected ':' after a key";
        st->fail.where = p;
        return NULL;
    }
    return skip_ws(p + 1, st->end);
}

static const char *read_args(State *st, const char *p, Row *row) {
    uint64_t seen = 0; /* one bit per ARG_FIELDS entry: N_ARG must stay <= 64 */
    p = skip_ws(p + 1, st->end);
    if (p < st->end && *p == '}') return p + 1;
    for (;;) {
        const char *s;
        size_t n;
        p = read_key(st, p, &s, &n);
        if (p == NULL) return NULL;
        int a = n ? arg_key(s, n) : -1;
        if (a < 0 || (seen & (UINT64_C(1) << a))) {
            p = skip_value(st, p, 2);
        } else {
            seen |= UINT64_C(1) << a;
            const Field *f = &ARG_FIELDS[a];
            switch (a) {
                case A_EXTERNAL_ID_2: p = read_int(st, p, &row->ext2); break;
                case A_CORRELATION_2: p = read_int(st, p, &row->corr2); break;
                case A_OCCUPANCY_2: p = read_float(st, p, &row->occ2); break;
                default:
                    if (f->read == R_INT) p = read_int(st, p, &row->i[f->column]);
                    else if (f->read == R_FLOAT) p = read_float(st, p, &row->f[f->column]);
                    else if (f->read == R_STREAM) p = read_stream(st, p, &row->i[f->column]);
                    else p = read_text(st, p, f->column, &row->s[f->column]);
            }
        }
        if (p == NULL) return NULL;
        int more = next_item(st, &p, '}');
        if (more < 0) return NULL;
        if (!more) return p;
    }
}

/* One event object at p (which must be '{'); appends a row. */
static const char *read_event(State *st, const char *p) {
    const char *end = st->end;
    Row row;
    for (int k = 0; k < N_FLOAT; k++) row.f[k] = NAN;
    row.occ2 = NAN;
    for (int k = 0; k < N_INT; k++) row.i[k] = INT_NULL;
    row.ext2 = row.corr2 = INT_NULL;
    memset(row.s, 0, sizeof row.s);
    uint32_t seen = 0; /* one bit per ARG_FIELDS entry: N_ARG must stay <= 32 */
    if (p >= end || *p != '{') {
        st->fail.what = "an element of traceEvents that is not an object";
        st->fail.where = p;
        return NULL;
    }
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
        goto append;
    }
    for (;;) {
        const char *s;
        size_t n;
        p = read_key(st, p, &s, &n);
        if (p == NULL) return NULL;
        int t = top_key(s, n);
        if (t < 0 || (seen & (1u << t))) {
            p = skip_value(st, p, 1);
        } else {
            seen |= 1u << t;
            switch (t) {
                case T_PH: p = read_text(st, p, S_PH, &row.s[S_PH]); break;
                case T_CAT: p = read_text(st, p, S_CAT, &row.s[S_CAT]); break;
                case T_NAME: p = read_text(st, p, S_NAME, &row.s[S_NAME]); break;
                case T_PID: p = read_text(st, p, S_PID, &row.s[S_PID]); break;
                case T_TID: p = read_text(st, p, S_TID, &row.s[S_TID]); break;
                case T_TS: p = read_float(st, p, &row.f[F_TS]); break;
                case T_DUR: p = read_float(st, p, &row.f[F_DUR]); break;
                case T_ID: p = read_int(st, p, &row.i[I_FLOW]); break;
                default: /* T_ARGS */
                    p = (p < end && *p == '{') ? read_args(st, p, &row) : skip_value(st, p, 1);
            }
        }
        if (p == NULL) return NULL;
        int more = next_item(st, &p, '}');
        if (more < 0) return NULL;
        if (!more) break;
    }
append:
    if (row.i[I_EXTERNAL_ID] == INT_NULL) row.i[I_EXTERNAL_ID] = row.ext2;
    if (row.i[I_EXTERNAL_ID] == 0) row.i[I_EXTERNAL_ID] = INT_NULL; /* External id 0 means "none" in Kineto */
    if (row.i[I_CORRELATION] == INT_NULL) row.i[I_CORRELATION] = row.corr2;
    if (isnan(row.f[F_OCCUPANCY])) row.f[F_OCCUPANCY] = row.occ2;
    if (st->rows == st->cap && grow_columns(st, p) < 0) goto oom;
    size_t r = st->rows;
    for (int k = 0; k < N_FLOAT; k++) {
        if (st->f[k] == NULL) {
            if (isnan(row.f[k])) continue;
            if ((st->f[k] = first_value(st, sizeof(double), r, 0)) == NULL) goto oom;
        }
        st->f[k][r] = row.f[k];
    }
    for (int k = 0; k < N_INT; k++) {
        if (st->i[k] == NULL) {
            if (row.i[k] == INT_NULL) continue;
            if ((st->i[k] = first_value(st, sizeof(int64_t), r, 1)) == NULL) goto oom;
        }
        st->i[k][r] = row.i[k];
    }
    for (int k = 0; k < N_STR; k++) {
        if (st->s[k] == NULL) {
            if (row.s[k] == 0) continue;
            if ((st->s[k] = first_value(st, sizeof(uint32_t), r, 2)) == NULL) goto oom;
        }
        st->s[k][r] = row.s[k];
    }
    st->rows = r + 1;
    return p;
oom:
    st->fail.what = "out of memory";
    st->fail.where = p;
    return NULL;
}

/* ---- a buffer-exporting column ------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD void *data;
    Py_ssize_t size;
} Column;

static void column_dealloc(Column *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int column_getbuffer(Column *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size, 1, flags);
}

static PyBufferProcs column_as_buffer = {(getbufferproc)column_getbuffer, NULL};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "profview._fastscan.Column",
    .tp_basicsize = sizeof(Column),
    .tp_dealloc = (destructor)column_dealloc,
    .tp_as_buffer = &column_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column of one scanned range (read it through the buffer protocol).",
};

/* Wraps ``*data`` (taking ownership, which clears ``*data``). */
static PyObject *column_new(void **data, size_t size) {
    Column *c = PyObject_New(Column, &ColumnType);
    if (c == NULL) return NULL;
    void *shrunk = (*data && size) ? realloc(*data, size) : NULL; /* columns grow by doubling */
    if (shrunk) *data = shrunk;
    c->data = *data ? *data : malloc(1);
    c->size = (Py_ssize_t)size;
    *data = NULL;
    return (PyObject *)c;
}

/* ---- a column handed to Polars (Arrow C data interface) ------------------------------------
 * ``arrow_column(column, format, length)`` moves a column's buffer into an Arrow array that Polars
 * takes without a copy (``pl.Series`` of an object with ``__arrow_c_array__``): the array's
 * release frees the buffer, so no Python object (and no GIL) is needed when Polars lets it go.
 * The column is left empty.  ``format``: "l" int64, "g" float64, "I" uint32; no validity
 * buffer (null markers are replaced on the Python side). */

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

static void release_schema(struct ArrowSchema *schema) { schema->release = NULL; }

static void release_array(struct ArrowArray *array) {
    if (array->buffers != NULL) {
        free((void *)array->buffers[1]);
        free(array->buffers);
        array->buffers = NULL;
    }
    array->release = NULL;
}

static void schema_capsule_free(PyObject *capsule) {
    struct ArrowSchema *schema = PyCapsule_GetPointer(capsule, "arrow_schema");
    if (schema == NULL) {
        PyErr_Clear();
        return;
    }
    if (schema->release != NULL) schema->release(schema);
    free(schema);
}

static void array_capsule_free(PyObject *capsule) {
    struct ArrowArray *array = PyCapsule_GetPointer(capsule, "arrow_array");
    if (array == NULL) {
        PyErr_Clear();
        return;
    }
    if (array->release != NULL) array->release(array); /* not taken by Polars: free it here */
    free(array);
}

static PyObject *arrow_column(PyObject *self, PyObject *args) {
    (void)self;
    Column *column;
    const char *format;
    Py_ssize_t length;
    if (!PyArg_ParseTuple(args, "O!sn", &ColumnType, &column, &format, &length)) return NULL;
    static const char *const FORMATS[] = {"l", "g", "I"};
    static const Py_ssize_t WIDTHS[] = {8, 8, 4};
    int kind = -1;
    for (int k = 0; k < 3; k++)
        if (strcmp(format, FORMATS[k]) == 0) kind = k;
    if (kind < 0) return PyErr_Format(PyExc_ValueError, "unknown Arrow format %s", format);
    if (length < 0 || column->data == NULL || length > column->size / WIDTHS[kind])
        return PyErr_Format(PyExc_ValueError, "a column of %zd bytes has no %zd values", column->size, length);
    struct ArrowSchema *schema = calloc(1, sizeof *schema);
    struct ArrowArray *array = calloc(1, sizeof *array);
    const void **buffers = calloc(2, sizeof *buffers);
    PyObject *schema_capsule = NULL, *array_capsule = NULL;
    if (schema == NULL || array == NULL || buffers == NULL) {
        free(schema);
        free(array);
        free(buffers);
        return PyErr_NoMemory();
    }
    *schema = (struct ArrowSchema){.format = FORMATS[kind], .name = "", .flags = 2 /* nullable */,
                                   .release = release_schema};
    schema_capsule = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
    if (schema_capsule == NULL) {
        free(schema);
        free(array);
        free(buffers);
        return NULL;
    }
    buffers[1] = column->data; /* the array owns the buffer from here on */
    *array = (struct ArrowArray){.length = length, .n_buffers = 2, .buffers = buffers, .release = release_array};
    column->data = NULL;
    column->size = 0;
    array_capsule = PyCapsule_New(array, "arrow_array", array_capsule_free);
    if (array_capsule == NULL) {
        release_array(array);
        free(array);
        Py_DECREF(schema_capsule);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, schema_capsule, array_capsule);
    Py_DECREF(schema_capsule);
    Py_DECREF(array_capsule);
    return pair;
}

static const char arrow_column_doc[] =
    "arrow_column(column, format, length) -> (schema capsule, array capsule): the column's buffer "
    "moved into an Arrow array (format l int64, g float64, I uint32), for __arrow_c_array__.";

/* A column without a value costs nothing: None stands for it (and its buffer is freed now). */
static PyObject *none_column(void **data) {
    free(*data);
    *data = NULL;
    Py_RETURN_NONE;
}

static int all_null_floats(const double *v, size_t n) {
    if (v == NULL) return 1; /* no value was ever written */
    for (size_t r = 0; r < n; r++)
        if (!isnan(v[r])) return 0;
    return 1;
}

static int all_null_ints(const int64_t *v, size_t n) {
    if (v == NULL) return 1;
    for (size_t r = 0; r < n; r++)
        if (v[r] != INT_NULL) return 0;
    return 1;
}

static int all_null_codes(const uint32_t *v, size_t n) {
    if (v == NULL) return 1;
    for (size_t r = 0; r < n; r++)
        if (v[r] != 0) return 0;
    return 1;
}

/* ---- Python entry points ------------------------------------------------------------------ */

static void state_free(State *st) {
    for (int k = 0; k < N_FLOAT; k++) free(st->f[k]);
    for (int k = 0; k < N_INT; k++) free(st->i[k]);
    for (int k = 0; k < N_STR; k++) {
        free(st->s[k]);
        dict_free(&st->dict[k]);
    }
    while (st->arena) {
        Block *next = st->arena->next;
        free(st->arena);
        st->arena = next;
    }
    free(st->tmp);
}

static PyObject *raise_failure(State *st, const char *base) {
    if (st->fail.what == NULL) return PyErr_Format(PyExc_ValueError, "scan failed");
    return PyErr_Format(PyExc_ValueError, "%s at byte %zd", st->fail.what, (Py_ssize_t)(st->fail.where - base));
}

static PyObject *uniques_list(Dict *d) {
    PyObject *list = PyList_New((Py_ssize_t)d->count + 1);
    if (list == NULL) return NULL;
    Py_INCREF(Py_None);
    PyList_SET_ITEM(list, 0, Py_None);
    for (size_t k = 0; k < d->count; k++) {
        PyObject *text = PyUnicode_DecodeUTF8(d->ptrs[k], (Py_ssize_t)d->lens[k], "replace");
        if (text == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k + 1, text);
    }
    return list;
}

PyDoc_STRVAR(scan_events_doc,
             "scan_events(buffer, start, stop) -> (rows, next, ended, cut, floats, ints, texts)\n\n"
             "Read the events of a traceEvents array from ``start`` (an event's '{'), stopping at the\n"
             "first event that begins at or after ``stop``, or at the array's ']'.  ``next`` is where\n"
             "the next event begins (or the byte after ']' when ``ended``).  When the data ends inside\n"
             "the array (a cut file), ``cut`` is true, the events before the cut are returned and\n"
             "``next`` is where the unfinished one begins.  ``floats``/``ints`` map column names to\n"
             "buffers of float64/int64; ``texts`` maps names to (codes uint32 buffer, uniques list\n"
             "with None at 0).  ValueError names the first problem (other than a cut) and its byte.\n\n"
             "A column without a single value in the range is None instead of a buffer (for texts, the\n"
             "codes).  With ``final`` false the buffer is a chunk of a longer document: the scan stops\n"
             "(``cut``, ``next`` at the event's '{') at the first event that the chunk's end may have cut,\n"
             "including one that could still go on (a number) and the last event before the ']', which\n"
             "is left to the document's last chunk.");

static PyObject *scan_events(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, stop;
    int final = 1;
    if (!PyArg_ParseTuple(args, "y*nn|p", &buf, &start, &stop, &final)) return NULL;
    const char *base = buf.buf;
    State st;
    memset(&st, 0, sizeof st);
    st.end = base + buf.len;
    int ok = start >= 0 && start <= buf.len;
    for (int k = 0; k < N_STR && ok; k++) ok = dict_init(&st.dict[k]) == 0;
    const char *p = base + (ok ? start : 0);
    const char *event = p;
    st.first = p;
    st.last = stop >= buf.len ? st.end : stop <= start ? p : base + stop;
    int ended = 0, cut = 0;
    size_t rows_before = 0; /* rows before ``event``: a chunk's last event is read again in the next */
    if (ok) {
        Py_BEGIN_ALLOW_THREADS;
        for (;;) {
            event = p;
            rows_before = st.rows;
            p = read_event(&st, p);
            if (p == NULL) break;
            p = skip_ws(p, st.end);
            if (p < st.end && *p == ']') {
                if (!final) { /* the array's last event goes with the document's end, not this chunk */
                    st.starved = 1;
                    p = NULL;
                    break;
                }
                ended = 1;
                p++;
                break;
            }
            if (p >= st.end || *p != ',') {
                st.fail.what = p >= st.end ? "the array is cut short" : "expected ',' or ']' after an event";
                st.fail.where = p;
                p = NULL;
                break;
            }
            p = skip_ws(p + 1, st.end);
            if (p - base >= stop) break;
        }
        Py_END_ALLOW_THREADS;
    }
    PyObject *result = NULL;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "bad start offset or out of memory");
        goto done;
    }
    if (p == NULL && (st.cut || st.fail.where >= st.end || (!final && st.starved))) {
        cut = 1; /* everything before ``event`` was read and is valid JSON: keep it */
        p = event;
        if (!final) st.rows = rows_before; /* complete or not, ``event`` is read again with more data */
    }
    if (p == NULL) {
        raise_failure(&st, base);
        goto done;
    }
    PyObject *floats = PyDict_New(), *ints = PyDict_New(), *texts = PyDict_New();
    if (floats == NULL || ints == NULL || texts == NULL) goto built;
    for (int k = 0; k < N_FLOAT; k++) {
        PyObject *c = all_null_floats(st.f[k], st.rows) ? none_column((void **)&st.f[k])
                                                         : column_new((void **)&st.f[k], st.rows * sizeof(double));
        if (c == NULL || PyDict_SetItemString(floats, FLOAT_NAMES[k], c) < 0) goto built;
        Py_DECREF(c);
    }
    for (int k = 0; k < N_INT; k++) {
        PyObject *c = all_null_ints(st.i[k], st.rows) ? none_column((void **)&st.i[k])
                                                      : column_new((void **)&st.i[k], st.rows * sizeof(int64_t));
        if (c == NULL || PyDict_SetItemString(ints, INT_NAMES[k], c) < 0) goto built;
        Py_DECREF(c);
    }
    for (int k = 0; k < N_STR; k++) {
        PyObject *codes = all_null_codes(st.s[k], st.rows) ? none_column((void **)&st.s[k])
                                                            : column_new((void **)&st.s[k], st.rows * sizeof(uint32_t));
        PyObject *uniques = uniques_list(&st.dict[k]);
        PyObject *pair = (codes && uniques) ? PyTuple_Pack(2, codes, uniques) : NULL;
        Py_XDECREF(codes);
        Py_XDECREF(uniques);
        if (pair == NULL || PyDict_SetItemString(texts, STR_NAMES[k], pair) < 0) goto built;
        Py_DECREF(pair);
    }
    result = Py_BuildValue("nnOOOOO", (Py_ssize_t)st.rows, (Py_ssize_t)(p - base), ended ? Py_True : Py_False,
                           cut ? Py_True : Py_False, floats, ints, texts);
built:
    Py_XDECREF(floats);
    Py_XDECREF(ints);
    Py_XDECREF(texts);
done:
    state_free(&st);
    PyBuffer_Release(&buf);
    return result;
}

PyDoc_STRVAR(next_event_doc,
             "next_event(buffer, pos, stop) -> int\n\n"
             "Where the next event of an array of objects seems to begin at or after ``pos``: the '{'\n"
             "of the first '}' ',' '{' sequence (whitespace allowed); -1 if none before ``stop``.\n"
             "A guess: scan_events' ``next`` of the range before confirms it.");

static PyObject *next_event(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t pos, stop;
    if (!PyArg_ParseTuple(args, "y*nn", &buf, &pos, &stop)) return NULL;
    const char *base = buf.buf;
    const char *end = base + (stop < buf.len ? stop : buf.len);
    Py_ssize_t found = -1;
    const char *p = base + (pos < 0 ? 0 : pos);
    while (p < end) {
        const char *brace = memchr(p, '}', (size_t)(end - p));
        if (brace == NULL) break;
        const char *q = skip_ws(brace + 1, end);
        if (q < end && *q == ',') {
            q = skip_ws(q + 1, end);
            if (q < end && *q == '{') {
                found = q - base;
                break;
            }
        }
        p = brace + 1;
    }
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(found);
}

PyDoc_STRVAR(members_doc,
             "members(buffer, pos, opening) -> (members, events_at)\n\n"
             "The members of a top-level JSON object as (key, value_start, value_end), from ``pos``:\n"
             "its '{' when ``opening``, else just after a member's value.  Stops at the key\n"
             "'traceEvents' and returns where its value begins; otherwise reads to the closing '}',\n"
             "checks that only whitespace follows, and returns -1.  ValueError if invalid.");

static PyObject *members(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t pos;
    int opening;
    if (!PyArg_ParseTuple(args, "y*np", &buf, &pos, &opening)) return NULL;
    const char *base = buf.buf;
    State st;
    memset(&st, 0, sizeof st);
    st.end = base + buf.len;
    PyObject *list = PyList_New(0);
    Py_ssize_t events_at = -1;
    const char *p = base + (pos < 0 || pos > buf.len ? buf.len : pos);
    if (list == NULL) goto fail;
    p = skip_ws(p, st.end);
    if (opening) {
        if (p >= st.end || *p != '{') goto bad;
        p = skip_ws(p + 1, st.end);
        if (p < st.end && *p == '}') {
            p++;
            goto closed;
        }
    } else {
        if (p < st.end && *p == '}') {
            p++;
            goto closed;
        }
        if (p >= st.end || *p != ',') goto bad;
        p = skip_ws(p + 1, st.end);
    }
    for (;;) {
        const char *s;
        size_t n;
        p = read_key(&st, p, &s, &n);
        if (p == NULL) goto bad;
        if (n == 11 && memcmp(s, "traceEvents", 11) == 0) {
            events_at = p - base;
            goto found;
        }
        const char *value = p;
        p = skip_value(&st, p, 1);
        if (p == NULL) goto bad;
        PyObject *item = Py_BuildValue("(s#nn)", s, (Py_ssize_t)n, (Py_ssize_t)(value - base), (Py_ssize_t)(p - base));
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
        int more = next_item(&st, &p, '}');
        if (more < 0) goto bad;
        if (!more) break;
    }
closed:
    if (skip_ws(p, st.end) != st.end) {
        st.fail.what = "data after the end of the document";
        st.fail.where = p;
        goto bad;
    }
found:
    PyBuffer_Release(&buf);
    PyObject *result = Py_BuildValue("(On)", list, events_at);
    Py_DECREF(list);
    return result;
bad:
    if (st.fail.what == NULL) {
        st.fail.what = "invalid JSON object";
        st.fail.where = p;
    }
    raise_failure(&st, base);
fail:
    Py_XDECREF(list);
    PyBuffer_Release(&buf);
    return NULL;
}

PyDoc_STRVAR(contains_doc,
             "contains(buffer, needle) -> bool\n\n"
             "Whether ``needle`` occurs in ``buffer``: the same answer as Python's ``in``, found by the\n"
             "C library's memmem without the GIL (about twice as fast on a window of a trace).");

static PyObject *contains(PyObject *self, PyObject *args) {
    Py_buffer buf, needle;
    if (!PyArg_ParseTuple(args, "y*y*", &buf, &needle)) return NULL;
    int found = needle.len == 0;
    if (!found && needle.len <= buf.len) {
        const void *at;
        Py_BEGIN_ALLOW_THREADS;
        at = memmem(buf.buf, (size_t)buf.len, needle.buf, (size_t)needle.len);
        Py_END_ALLOW_THREADS;
        found = at != NULL;
    }
    PyBuffer_Release(&needle);
    PyBuffer_Release(&buf);
    return PyBool_FromLong(found);
}

static PyMethodDef METHODS[] = {
    {"scan_events", scan_events, METH_VARARGS, scan_events_doc},
    {"next_event", next_event, METH_VARARGS, next_event_doc},
    {"members", members, METH_VARARGS, members_doc},
    {"arrow_column", arrow_column, METH_VARARGS, arrow_column_doc},
    {"contains", contains, METH_VARARGS, contains_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_fastscan", "Chrome-trace events → typed columns, without a Python object per event.",
    -1, METHODS,
};

PyMODINIT_FUNC PyInit__fastscan(void) {
    if (PyType_Ready(&ColumnType) < 0) return NULL;
    index_arg_keys();
#ifdef HAVE_STRTOD_L
    if (c_numeric == (locale_t)0) c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
#endif
    PyObject *m = PyModule_Create(&MODULE);
    if (m == NULL) return NULL;
    PyObject *version = PyLong_FromLong(1);
    if (version == NULL || PyModule_AddObject(m, "VERSION", version) < 0) {
        Py_XDECREF(version);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
