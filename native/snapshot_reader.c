/*
 * profview._snapshot_reader: a PyTorch CUDA memory snapshot's pickle read straight into columns.
 *
 * A pickle VM for protocols 2-5 that builds no Python object per event or block: it walks the
 * opcodes, guesses each new dict or list's role from where it is on the stack (the top-level
 * dict, ``segments`` and a segment, its ``blocks`` and a block, ``device_traces``, a trace and
 * an event, a ``frames`` list and a frame), and writes an event's or a block's fields into
 * columns as its SETITEMS come.  Every guess is checked when the container is attached to its
 * parent, and the whole layout once more at STOP (each trace's and each segment's rows
 * consecutive, every row attached once); anything else a snapshot may hold (allocator
 * settings, annotations, a segment's own fields) is built as plain Python objects.
 *
 * The reader is a fast path, never a different answer: whatever it does not recognise (an
 * opcode of code, an opcode it does not implement, a value of a type the columns do not take,
 * a guess that does not hold, damage, a memo index out of range) makes it return
 * ("fallback", why) and the caller reads the file with the no-globals unpickler, which gives
 * the answer or the refusal it always gave.  Nothing a file names is ever imported or called:
 * the opcodes that could reach code end the read before anything else happens.  Every read is
 * bounds-checked against the buffer; the VM keeps its own stack (no recursion).
 *
 * Output (success): a dict of bytearrays (columns: int64 values with a uint8 presence byte per
 * row, int32 codes into ``strings``, -1 for null), ``strings`` (the distinct texts), the
 * frames of each distinct stack, the traces' and segments' row counts, the segments' other
 * fields and the top level's other keys as Python objects.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------- values */

enum { V_MARK, V_NONE, V_TRUE, V_FALSE, V_INT, V_FLOAT, V_PY, V_OBJ, V_DEAD };
enum { R_TOP, R_SEGMENTS, R_SEGMENT, R_BLOCKS, R_BLOCK, R_TRACES, R_TRACE, R_EVENT, R_FRAMES, R_FRAME };
enum { K_GENERIC = -1, K_INVALID = -2 };

typedef struct Obj Obj;
typedef struct {
    int tag;
    union {
        int64_t i;
        double d;
        PyObject *o;
        Obj *r;
    } u;
} Value;

struct Obj {
    int role;
    Py_ssize_t refs;
    uint64_t serial, parent;   /* who this container was guessed for (rows only) */
    int attached;              /* attached to its parent (rows: once) */
    int frozen;                /* frames and frame dicts: read, no more changes */
    int64_t row;               /* an event's or block's row; a trace's or blocks list's first row */
    int64_t count;             /* rows attached to a trace or a blocks list */
    int64_t id;                /* a frames list's stack or a frame dict's frame, once frozen; -1 */
    Py_ssize_t memo_slot;      /* a row's memo index + 1 (0: none; -1: memoised twice) */
    /* a frame dict's fields */
    int32_t name, filename;
    int64_t line;
    int has_line;
    /* children kept: a frames list's frames, the segments or traces lists' elements */
    Obj **kids;
    Py_ssize_t nkids, capkids;
    /* a segment's own fields (a dict), its blocks; the top level's other keys */
    PyObject *dict;
    Obj *blocks, *segments, *traces;
};

typedef struct {
    void *data;
    size_t n, cap, item;
} Vec;

static int vec_grow(Vec *v, size_t need) {
    if (need <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 1024;
    while (cap < need) cap *= 2;
    void *data = realloc(v->data, cap * v->item);
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

/* Columns of one row kind: int64 fields (with presence bytes) and int32 fields. */
#define EV_INTS 5   /* addr, size, stream, time_us, device_free */
#define EV_CODES 4  /* action, compile_context, user_metadata, stack */
#define BL_INTS 3   /* address, size, requested_size */
#define BL_CODES 2  /* state, stack */

typedef struct {
    int nints, ncodes;
    Vec ints[EV_INTS], present[EV_INTS], codes[EV_CODES];
    int64_t n;
} Rows;

typedef struct {
    PyObject *key;
    int32_t code;
} CacheSlot;

#define CACHE_SIZE 4096

typedef struct {
    const unsigned char *buf;
    Py_ssize_t len, pos;
    int file_backed;
    Py_ssize_t released;    /* bytes before this were handed back to the page cache */
    Value *stack;
    Py_ssize_t sp, stack_cap;
    Py_ssize_t *marks;
    Py_ssize_t nmarks, marks_cap;
    Value *memo;
    Py_ssize_t memo_cap, memo_len;
    int used_memoize, used_put;
    uint64_t next_serial;
    Obj *top;
    Rows events, blocks;
    /* texts: a dict str -> code, the list of texts, a pointer cache in front */
    PyObject *text_codes, *texts;
    CacheSlot text_cache[CACHE_SIZE];
    /* field names: pointer cache of key objects -> field code */
    PyObject *field_codes;
    CacheSlot field_cache[CACHE_SIZE];
    /* frames: (name, filename, line) -> frame id; stacks: frame-id tuple -> stack id */
    PyObject *frame_ids, *stack_ids, *stack_frames; /* stack_frames: list of tuples of frame ids */
    Vec frame_name, frame_file, frame_line, frame_has_line;
    char why[160];
} VM;

/* Field codes (one dict for all row kinds; each kind takes those it knows). */
enum {
    F_ACTION = 1, F_ADDR, F_SIZE, F_STREAM, F_TIME_US, F_DEVICE_FREE, F_FRAMES, F_COMPILE_CONTEXT,
    F_USER_METADATA, F_ADDRESS, F_REQUESTED_SIZE, F_STATE, F_NAME, F_FILENAME, F_LINE, F_BLOCKS,
    F_SEGMENTS, F_DEVICE_TRACES, F_HISTORY, F_OTHER
};
static const char *FIELD_NAMES[] = {
    NULL, "action", "addr", "size", "stream", "time_us", "device_free", "frames", "compile_context",
    "user_metadata", "address", "requested_size", "state", "name", "filename", "line", "blocks",
    "segments", "device_traces", "history",
};

#define FALLBACK(vm, ...) (snprintf((vm)->why, sizeof((vm)->why), __VA_ARGS__), -1)

static void obj_release(Obj *r);

static void v_release(Value *v) {
    if (v->tag == V_PY) Py_DECREF(v->u.o);
    else if (v->tag == V_OBJ) obj_release(v->u.r);
    v->tag = V_NONE;
}

static Value v_copy(Value v) {
    if (v.tag == V_PY) Py_INCREF(v.u.o);
    else if (v.tag == V_OBJ) v.u.r->refs++;
    return v;
}

static void obj_release(Obj *r) {
    if (--r->refs > 0) return;
    for (Py_ssize_t i = 0; i < r->nkids; i++) obj_release(r->kids[i]);
    free(r->kids);
    Py_XDECREF(r->dict);
    if (r->blocks) obj_release(r->blocks);
    if (r->segments) obj_release(r->segments);
    if (r->traces) obj_release(r->traces);
    free(r);
}

static int push(VM *vm, Value v) {
    if (vm->sp == vm->stack_cap) {
        Py_ssize_t cap = vm->stack_cap ? vm->stack_cap * 2 : 256;
        Value *s = realloc(vm->stack, (size_t)cap * sizeof(Value));
        if (!s) {
            v_release(&v);
            return FALLBACK(vm, "out of memory (stack)");
        }
        vm->stack = s;
        vm->stack_cap = cap;
    }
    vm->stack[vm->sp++] = v;
    return 0;
}

static Value make_py(PyObject *o) {
    Value v;
    v.tag = V_PY;
    v.u.o = o;
    return v;
}

/* The Python object of a value (new reference); NULL (with why set) for a container this
 * reader keeps as columns. */
static PyObject *to_py(VM *vm, Value *v) {
    switch (v->tag) {
    case V_NONE: Py_RETURN_NONE;
    case V_TRUE: Py_RETURN_TRUE;
    case V_FALSE: Py_RETURN_FALSE;
    case V_INT: return PyLong_FromLongLong(v->u.i);
    case V_FLOAT: return PyFloat_FromDouble(v->u.d);
    case V_PY: Py_INCREF(v->u.o); return v->u.o;
    default:
        (void)FALLBACK(vm, "a snapshot container inside plain data");
        return NULL;
    }
}

/* ---------------------------------------------------------------- texts */

static int32_t cached_code(CacheSlot *cache, PyObject *key) {
    size_t slot = ((uintptr_t)key >> 4) & (CACHE_SIZE - 1);
    return cache[slot].key == key ? cache[slot].code : INT32_MIN;
}

static void cache_put(CacheSlot *cache, PyObject *key, int32_t code) {
    size_t slot = ((uintptr_t)key >> 4) & (CACHE_SIZE - 1);
    Py_XDECREF(cache[slot].key);
    Py_INCREF(key);
    cache[slot].key = key;
    cache[slot].code = code;
}

/* A text's code (its place in vm->texts); -1 with why set on failure. */
static int32_t text_code(VM *vm, PyObject *text) {
    int32_t code = cached_code(vm->text_cache, text);
    if (code != INT32_MIN) return code;
    PyObject *known = PyDict_GetItemWithError(vm->text_codes, text);
    if (known) {
        code = (int32_t)PyLong_AsLong(known);
    } else {
        if (PyErr_Occurred()) return FALLBACK(vm, "text lookup failed");
        Py_ssize_t n = PyList_GET_SIZE(vm->texts);
        if (n >= INT32_MAX) return FALLBACK(vm, "too many distinct texts");
        PyObject *number = PyLong_FromSsize_t(n);
        if (!number || PyDict_SetItem(vm->text_codes, text, number) < 0 || PyList_Append(vm->texts, text) < 0) {
            Py_XDECREF(number);
            return FALLBACK(vm, "out of memory (texts)");
        }
        Py_DECREF(number);
        code = (int32_t)n;
    }
    cache_put(vm->text_cache, text, code);
    return code;
}

static int field_code(VM *vm, Value *key) {
    if (key->tag != V_PY || !PyUnicode_CheckExact(key->u.o)) return FALLBACK(vm, "a key that is not a string");
    int32_t code = cached_code(vm->field_cache, key->u.o);
    if (code != INT32_MIN) return code;
    PyObject *known = PyDict_GetItemWithError(vm->field_codes, key->u.o);
    if (!known && PyErr_Occurred()) return FALLBACK(vm, "key lookup failed");
    code = known ? (int32_t)PyLong_AsLong(known) : F_OTHER;
    cache_put(vm->field_cache, key->u.o, code);
    return code;
}

/* ---------------------------------------------------------------- rows */

static int rows_init(Rows *rows, int nints, int ncodes) {
    rows->nints = nints;
    rows->ncodes = ncodes;
    rows->n = 0;
    for (int i = 0; i < nints; i++) {
        rows->ints[i].item = sizeof(int64_t);
        rows->present[i].item = 1;
    }
    for (int i = 0; i < ncodes; i++) rows->codes[i].item = sizeof(int32_t);
    return 0;
}

static void rows_free(Rows *rows) {
    for (int i = 0; i < EV_INTS; i++) {
        free(rows->ints[i].data);
        free(rows->present[i].data);
    }
    for (int i = 0; i < EV_CODES; i++) free(rows->codes[i].data);
}

static int64_t rows_add(VM *vm, Rows *rows) {
    size_t n = (size_t)rows->n;
    for (int i = 0; i < rows->nints; i++) {
        if (vec_grow(&rows->ints[i], n + 1) < 0 || vec_grow(&rows->present[i], n + 1) < 0)
            return FALLBACK(vm, "out of memory (columns)");
        ((int64_t *)rows->ints[i].data)[n] = 0;
        ((uint8_t *)rows->present[i].data)[n] = 0;
    }
    for (int i = 0; i < rows->ncodes; i++) {
        if (vec_grow(&rows->codes[i], n + 1) < 0) return FALLBACK(vm, "out of memory (columns)");
        ((int32_t *)rows->codes[i].data)[n] = -1;
    }
    return rows->n++;
}

static int set_int(VM *vm, Rows *rows, int field, int64_t row, Value *v, const char *what) {
    if (v->tag == V_INT) {
        ((int64_t *)rows->ints[field].data)[row] = v->u.i;
        ((uint8_t *)rows->present[field].data)[row] = 1;
        return 0;
    }
    if (v->tag == V_NONE) {
        ((uint8_t *)rows->present[field].data)[row] = 0;
        return 0;
    }
    return FALLBACK(vm, "%s is not a 64-bit whole number", what);
}

static int set_text(VM *vm, Rows *rows, int field, int64_t row, Value *v, const char *what) {
    int32_t code = -1;
    if (v->tag == V_PY && PyUnicode_CheckExact(v->u.o)) {
        code = text_code(vm, v->u.o);
        if (code < 0) return -1;
    } else if (v->tag != V_NONE) {
        return FALLBACK(vm, "%s is not a string", what);
    }
    ((int32_t *)rows->codes[field].data)[row] = code;
    return 0;
}

/* ---------------------------------------------------------------- stacks */

static int64_t frame_id(VM *vm, Obj *frame) {
    if (frame->id >= 0) return frame->id;
    PyObject *key = Py_BuildValue("(iiLi)", frame->name, frame->filename, (long long)frame->line, frame->has_line);
    if (!key) return FALLBACK(vm, "out of memory (frames)");
    PyObject *known = PyDict_GetItemWithError(vm->frame_ids, key);
    int64_t id;
    if (known) {
        id = PyLong_AsLongLong(known);
    } else {
        id = (int64_t)PyDict_GET_SIZE(vm->frame_ids);
        PyObject *number = PyLong_FromLongLong(id);
        size_t n = (size_t)id;
        if (!number || PyDict_SetItem(vm->frame_ids, key, number) < 0 || vec_grow(&vm->frame_name, n + 1) < 0 ||
            vec_grow(&vm->frame_file, n + 1) < 0 || vec_grow(&vm->frame_line, n + 1) < 0 ||
            vec_grow(&vm->frame_has_line, n + 1) < 0) {
            Py_XDECREF(number);
            Py_DECREF(key);
            return FALLBACK(vm, "out of memory (frames)");
        }
        Py_DECREF(number);
        ((int32_t *)vm->frame_name.data)[n] = frame->name;
        ((int32_t *)vm->frame_file.data)[n] = frame->filename;
        ((int64_t *)vm->frame_line.data)[n] = frame->line;
        ((uint8_t *)vm->frame_has_line.data)[n] = (uint8_t)frame->has_line;
        vm->frame_name.n = vm->frame_file.n = vm->frame_line.n = vm->frame_has_line.n = n + 1;
    }
    Py_DECREF(key);
    frame->frozen = 1;
    frame->id = id;
    return id;
}

/* The stack number of a frames value (-1: null, as for no frames or an empty list). */
static int64_t stack_of(VM *vm, Value *v, int *failed) {
    *failed = 0;
    if (v->tag == V_NONE) return -1;
    if (v->tag != V_OBJ || v->u.r->role != R_FRAMES) {
        *failed = 1;
        return FALLBACK(vm, "'frames' is not a frames list");
    }
    Obj *frames = v->u.r;
    if (frames->frozen) return frames->id;
    frames->frozen = 1;
    if (frames->nkids == 0) {
        frames->id = -1;
        return -1;
    }
    PyObject *key = PyTuple_New(frames->nkids);
    if (!key) {
        *failed = 1;
        return FALLBACK(vm, "out of memory (stacks)");
    }
    for (Py_ssize_t i = 0; i < frames->nkids; i++) {
        int64_t id = frame_id(vm, frames->kids[i]);
        PyObject *number = id < 0 ? NULL : PyLong_FromLongLong(id);
        if (!number) {
            Py_DECREF(key);
            *failed = 1;
            return -1;
        }
        PyTuple_SET_ITEM(key, i, number);
    }
    PyObject *known = PyDict_GetItemWithError(vm->stack_ids, key);
    int64_t id;
    if (known) {
        id = PyLong_AsLongLong(known);
    } else {
        id = (int64_t)PyList_GET_SIZE(vm->stack_frames);
        PyObject *number = PyLong_FromLongLong(id);
        if (!number || PyDict_SetItem(vm->stack_ids, key, number) < 0 || PyList_Append(vm->stack_frames, key) < 0) {
            Py_XDECREF(number);
            Py_DECREF(key);
            *failed = 1;
            return FALLBACK(vm, "out of memory (stacks)");
        }
        Py_DECREF(number);
    }
    Py_DECREF(key);
    frames->id = id;
    return id;
}

/* ---------------------------------------------------------------- roles */

static int is_dict_like(Value *v) {
    if (v->tag == V_PY) return PyDict_CheckExact(v->u.o);
    if (v->tag != V_OBJ) return 0;
    int r = v->u.r->role;
    return r == R_TOP || r == R_SEGMENT || r == R_BLOCK || r == R_EVENT || r == R_FRAME;
}

static int is_list_like(Value *v) {
    if (v->tag == V_PY) return PyList_CheckExact(v->u.o);
    if (v->tag != V_OBJ) return 0;
    int r = v->u.r->role;
    return r == R_SEGMENTS || r == R_BLOCKS || r == R_TRACES || r == R_TRACE || r == R_FRAMES;
}

/* The role a child of ``parent`` (under ``key`` for a dict) has: a role, K_GENERIC (plain
 * data), or K_INVALID when the key is not a string where a snapshot's keys are. */
static int child_role(VM *vm, Value *parent, Value *key) {
    if (parent->tag != V_OBJ) return K_GENERIC;
    int field = 0;
    if (key) {
        field = field_code(vm, key);
        if (field < 0) {
            PyErr_Clear();
            return K_INVALID;
        }
    }
    switch (parent->u.r->role) {
    case R_TOP: return field == F_SEGMENTS ? R_SEGMENTS : field == F_DEVICE_TRACES ? R_TRACES : K_GENERIC;
    case R_SEGMENTS: return R_SEGMENT;
    case R_SEGMENT: return field == F_BLOCKS ? R_BLOCKS : field == F_FRAMES ? R_FRAMES : K_GENERIC;
    case R_BLOCKS: return R_BLOCK;
    case R_BLOCK: return field == F_FRAMES ? R_FRAMES : K_GENERIC;
    case R_TRACES: return R_TRACE;
    case R_TRACE: return R_EVENT;
    case R_EVENT: return field == F_FRAMES ? R_FRAMES : K_GENERIC;
    case R_FRAMES: return R_FRAME;
    default: return K_GENERIC;
    }
}

static int role_is_dict(int role) {
    return role == R_TOP || role == R_SEGMENT || role == R_BLOCK || role == R_EVENT || role == R_FRAME;
}

typedef struct {
    int role;
    Value *parent;
} Guess;

static int fits(int role, int is_dict) {
    return role == K_GENERIC || (role >= 0 && role_is_dict(role) == is_dict);
}

/* The role of a new dict or list, from the stack under it: the container under the topmost
 * mark (a batch being filled), or the container right under it (a single APPEND or SETITEM). */
static Guess guess(VM *vm, int is_dict) {
    Guess a = {K_INVALID, NULL}, b = {K_INVALID, NULL};
    Py_ssize_t len = vm->sp;
    if (len == 0 && vm->nmarks == 0) {
        Guess top = {vm->top == NULL && is_dict ? R_TOP : K_GENERIC, NULL};
        return top;
    }
    Py_ssize_t m = vm->nmarks ? vm->marks[vm->nmarks - 1] : -1; /* stack index of the first item above the mark */
    if (m > 0) {
        Value *parent = &vm->stack[m - 1];
        Py_ssize_t n = len - m;
        if (is_dict_like(parent)) {
            if (n % 2 == 1) a.role = child_role(vm, parent, &vm->stack[len - 1]), a.parent = parent;
        } else if (is_list_like(parent)) {
            a.role = child_role(vm, parent, NULL), a.parent = parent;
        }
    }
    if (len >= 1 && len - 1 >= m) {
        Value *t = &vm->stack[len - 1];
        if (is_list_like(t) && len - 1 >= m) {
            b.role = child_role(vm, t, NULL), b.parent = t;
        } else if (len >= 2 && len - 2 >= m && t->tag == V_PY && PyUnicode_CheckExact(t->u.o) &&
                   is_dict_like(&vm->stack[len - 2])) {
            b.role = child_role(vm, &vm->stack[len - 2], t), b.parent = &vm->stack[len - 2];
        }
    }
    int a_ok = fits(a.role, is_dict), b_ok = fits(b.role, is_dict);
    if (a_ok && a.role >= 0) return a;
    if (b_ok && b.role >= 0) return b;
    Guess generic = {K_GENERIC, NULL};
    return generic;
}

static Obj *obj_new(VM *vm, int role) {
    Obj *r = calloc(1, sizeof(Obj));
    if (!r) return NULL;
    r->role = role;
    r->refs = 1;
    r->serial = ++vm->next_serial;
    r->row = -1;
    r->id = -1;
    r->name = r->filename = -1;
    return r;
}

static int new_container(VM *vm, int is_dict) {
    Guess g = guess(vm, is_dict);
    if (g.role == K_GENERIC || g.role == K_INVALID) {
        PyObject *o = is_dict ? PyDict_New() : PyList_New(0);
        if (!o) return FALLBACK(vm, "out of memory");
        return push(vm, make_py(o));
    }
    Obj *r = obj_new(vm, g.role);
    if (!r) return FALLBACK(vm, "out of memory");
    if (g.parent) r->parent = g.parent->u.r->serial;
    if (g.role == R_TOP) vm->top = r;
    if (g.role == R_EVENT) r->row = rows_add(vm, &vm->events);
    if (g.role == R_BLOCK) r->row = rows_add(vm, &vm->blocks);
    if (g.role == R_SEGMENT || g.role == R_TOP) {
        r->dict = PyDict_New();
        if (!r->dict) {
            obj_release(r);
            return FALLBACK(vm, "out of memory");
        }
    }
    if ((g.role == R_EVENT || g.role == R_BLOCK) && r->row < 0) {
        obj_release(r);
        return -1;
    }
    Value v;
    v.tag = V_OBJ;
    v.u.r = r;
    return push(vm, v);
}

static int add_kid(VM *vm, Obj *parent, Obj *kid) {
    if (parent->nkids == parent->capkids) {
        Py_ssize_t cap = parent->capkids ? parent->capkids * 2 : 8;
        Obj **kids = realloc(parent->kids, (size_t)cap * sizeof(Obj *));
        if (!kids) return FALLBACK(vm, "out of memory");
        parent->kids = kids;
        parent->capkids = cap;
    }
    kid->refs++;
    parent->kids[parent->nkids++] = kid;
    return 0;
}

/* The row of a child attached to its trace or blocks list: in the order they were made. */
static int attach_row(VM *vm, Obj *list, Obj *kid) {
    if (kid->attached) return FALLBACK(vm, "a row attached twice");
    if (kid->parent != list->serial) return FALLBACK(vm, "a row attached to another list than guessed");
    if (list->count == 0) list->row = kid->row;
    else if (kid->row != list->row + list->count) return FALLBACK(vm, "rows attached out of order");
    list->count++;
    kid->attached = 1;
    if (kid->memo_slot > 0) { /* the memo's reference dropped: an event's container is freed once read */
        Value *slot = &vm->memo[kid->memo_slot - 1];
        if (slot->tag == V_OBJ && slot->u.r == kid) {
            v_release(slot);
            slot->tag = V_DEAD;
        }
    }
    return 0;
}

/* APPEND of ``item`` (consumed) to ``list``. */
static int append(VM *vm, Value *list, Value *item) {
    int rc = 0;
    if (list->tag == V_PY) {
        if (!PyList_CheckExact(list->u.o)) {
            rc = FALLBACK(vm, "APPEND to a non-list");
        } else {
            PyObject *o = to_py(vm, item);
            if (!o || PyList_Append(list->u.o, o) < 0) rc = FALLBACK(vm, "APPEND failed");
            Py_XDECREF(o);
        }
        v_release(item);
        return rc;
    }
    if (list->tag != V_OBJ || !is_list_like(list)) {
        v_release(item);
        return FALLBACK(vm, "APPEND to a non-list");
    }
    Obj *p = list->u.r;
    int want = child_role(vm, list, NULL);
    if (item->tag != V_OBJ || item->u.r->role != want) {
        v_release(item);
        return FALLBACK(vm, "an element of the wrong kind in a snapshot list");
    }
    Obj *kid = item->u.r;
    switch (p->role) {
    case R_TRACE:
    case R_BLOCKS:
        rc = attach_row(vm, p, kid);
        break;
    case R_FRAMES:
        if (p->frozen) rc = FALLBACK(vm, "a frames list changed after it was read");
        else rc = add_kid(vm, p, kid);
        break;
    default: /* segments, device_traces */
        if (kid->attached || kid->parent != p->serial) rc = FALLBACK(vm, "a list attached twice or elsewhere");
        else {
            kid->attached = 1;
            rc = add_kid(vm, p, kid);
        }
    }
    v_release(item);
    return rc;
}

/* SETITEM of ``key``: ``value`` (both consumed) in ``dict``. */
static int setitem(VM *vm, Value *dict, Value *key, Value *value) {
    int rc = 0;
    if (dict->tag == V_PY) {
        if (!PyDict_CheckExact(dict->u.o)) {
            rc = FALLBACK(vm, "SETITEM on a non-dict");
        } else {
            PyObject *k = to_py(vm, key);
            PyObject *v = k ? to_py(vm, value) : NULL;
            if (!k || !v || PyDict_SetItem(dict->u.o, k, v) < 0) rc = FALLBACK(vm, "SETITEM failed");
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        goto done;
    }
    if (dict->tag != V_OBJ || !is_dict_like(dict)) {
        rc = FALLBACK(vm, "SETITEM on a non-dict");
        goto done;
    }
    Obj *d = dict->u.r;
    int field = field_code(vm, key);
    if (field < 0) {
        rc = -1;
        goto done;
    }
    int want = child_role(vm, dict, key);
    if (value->tag == V_OBJ) {
        if (value->u.r->role != want) {
            rc = FALLBACK(vm, "a snapshot container under another key than guessed");
            goto done;
        }
    } else if (want >= 0 && !(want == R_FRAMES && value->tag == V_NONE) &&
               !(want == R_BLOCKS && value->tag == V_NONE && d->role == R_SEGMENT)) {
        rc = FALLBACK(vm, "a value of another kind where a snapshot list goes");
        goto done;
    }
    int failed = 0;
    int64_t stack;
    switch (d->role) {
    case R_EVENT: {
        if (d->attached) {
            rc = FALLBACK(vm, "an event changed after it was read");
            break;
        }
        Rows *ev = &vm->events;
        int64_t row = d->row;
        switch (field) {
        case F_ACTION: rc = set_text(vm, ev, 0, row, value, "action"); break;
        case F_ADDR: rc = set_int(vm, ev, 0, row, value, "addr"); break;
        case F_SIZE: rc = set_int(vm, ev, 1, row, value, "size"); break;
        case F_STREAM: rc = set_int(vm, ev, 2, row, value, "stream"); break;
        case F_TIME_US: rc = set_int(vm, ev, 3, row, value, "time_us"); break;
        case F_DEVICE_FREE: rc = set_int(vm, ev, 4, row, value, "device_free"); break;
        case F_COMPILE_CONTEXT: rc = set_text(vm, ev, 1, row, value, "compile_context"); break;
        case F_USER_METADATA: rc = set_text(vm, ev, 2, row, value, "user_metadata"); break;
        case F_FRAMES:
            stack = stack_of(vm, value, &failed);
            if (failed) rc = -1;
            else ((int32_t *)ev->codes[3].data)[row] = (int32_t)stack;
            break;
        default: break;
        }
        break;
    }
    case R_BLOCK: {
        if (d->attached) {
            rc = FALLBACK(vm, "a block changed after it was read");
            break;
        }
        Rows *bl = &vm->blocks;
        int64_t row = d->row;
        switch (field) {
        case F_ADDRESS: rc = set_int(vm, bl, 0, row, value, "address"); break;
        case F_SIZE: rc = set_int(vm, bl, 1, row, value, "size"); break;
        case F_REQUESTED_SIZE: rc = set_int(vm, bl, 2, row, value, "requested_size"); break;
        case F_STATE: rc = set_text(vm, bl, 0, row, value, "state"); break;
        /* the layout before blocks had frames: the allocation's stack and size are in its history */
        case F_HISTORY: rc = FALLBACK(vm, "a block's history (the older layout)"); break;
        case F_FRAMES:
            stack = stack_of(vm, value, &failed);
            if (failed) rc = -1;
            else ((int32_t *)bl->codes[1].data)[row] = (int32_t)stack;
            break;
        default: break;
        }
        break;
    }
    case R_FRAME: {
        if (d->frozen) {
            rc = FALLBACK(vm, "a frame changed after it was read");
            break;
        }
        if (field == F_NAME || field == F_FILENAME) {
            int32_t code = -1;
            if (value->tag == V_PY && PyUnicode_CheckExact(value->u.o)) code = text_code(vm, value->u.o);
            else if (value->tag != V_NONE) code = FALLBACK(vm, "a frame's name or file is not a string");
            if (code < -1 || (code == -1 && value->tag != V_NONE)) rc = -1;
            else if (field == F_NAME) d->name = code;
            else d->filename = code;
        } else if (field == F_LINE) {
            if (value->tag == V_INT) d->line = value->u.i, d->has_line = 1;
            else if (value->tag == V_NONE) d->line = 0, d->has_line = 0;
            else rc = FALLBACK(vm, "a frame's line is not a whole number");
        }
        break;
    }
    case R_SEGMENT:
        if (field == F_BLOCKS) {
            if (d->blocks) obj_release(d->blocks);
            d->blocks = NULL;
            if (value->tag == V_OBJ) {
                Obj *b = value->u.r;
                if (b->attached || b->parent != d->serial) {
                    rc = FALLBACK(vm, "a blocks list attached twice or elsewhere");
                    break;
                }
                b->attached = 1;
                b->refs++;
                d->blocks = b;
            }
        } else if (field == F_FRAMES && value->tag == V_OBJ) {
            /* a segment's own frames are not read */
        } else {
            PyObject *k = to_py(vm, key), *v = k ? to_py(vm, value) : NULL;
            if (!k || !v || PyDict_SetItem(d->dict, k, v) < 0) rc = FALLBACK(vm, "SETITEM failed");
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        break;
    case R_TOP:
        if (field == F_SEGMENTS || field == F_DEVICE_TRACES) {
            Obj *list = value->u.r; /* checked above: a segments or traces list */
            if (list->attached || list->parent != d->serial) {
                rc = FALLBACK(vm, "a snapshot list attached twice or elsewhere");
                break;
            }
            list->attached = 1;
            list->refs++;
            Obj **slot = field == F_SEGMENTS ? &d->segments : &d->traces;
            if (*slot) obj_release(*slot);
            *slot = list;
        } else {
            PyObject *k = to_py(vm, key), *v = k ? to_py(vm, value) : NULL;
            if (!k || !v || PyDict_SetItem(d->dict, k, v) < 0) rc = FALLBACK(vm, "SETITEM failed");
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        break;
    default:
        rc = FALLBACK(vm, "SETITEM on a non-dict");
    }
done:
    if (PyErr_Occurred()) PyErr_Clear();
    v_release(key);
    v_release(value);
    return rc;
}

/* ---------------------------------------------------------------- the opcode loop */

static const char *dangerous(unsigned char op) {
    switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    default: return NULL;
    }
}

#define NEED(k)                                                                          \
    do {                                                                                 \
        if ((size_t)(vm->len - vm->pos) < (size_t)(k)) return FALLBACK(vm, "truncated"); \
    } while (0)

static uint64_t le(const unsigned char *p, int n) {
    uint64_t x = 0;
    for (int i = n - 1; i >= 0; i--) x = (x << 8) | p[i];
    return x;
}

static int memo_put(VM *vm, Py_ssize_t idx) {
    if (vm->sp == 0 || vm->stack[vm->sp - 1].tag == V_MARK) return FALLBACK(vm, "memo put of nothing");
    /* the pickler numbers its memo 0, 1, 2, ...: an index past the next one is handed back
     * (it could ask for a memo of any size) */
    if (idx < 0 || idx > vm->memo_len || idx > vm->len) return FALLBACK(vm, "memo index out of range");
    if (idx >= vm->memo_cap) {
        Py_ssize_t cap = vm->memo_cap ? vm->memo_cap : 1024;
        while (cap <= idx) cap *= 2;
        Value *memo = realloc(vm->memo, (size_t)cap * sizeof(Value));
        if (!memo) return FALLBACK(vm, "out of memory (memo)");
        for (Py_ssize_t i = vm->memo_cap; i < cap; i++) memo[i].tag = V_MARK; /* empty slot */
        vm->memo = memo;
        vm->memo_cap = cap;
    }
    if (vm->memo[idx].tag == V_MARK) vm->memo_len++;
    else v_release(&vm->memo[idx]);
    Value *top = &vm->stack[vm->sp - 1];
    if (top->tag == V_OBJ && (top->u.r->role == R_EVENT || top->u.r->role == R_BLOCK))
        top->u.r->memo_slot = top->u.r->memo_slot == 0 ? idx + 1 : -1;
    vm->memo[idx] = v_copy(*top);
    return 0;
}

static int memo_get(VM *vm, Py_ssize_t idx) {
    if (idx < 0 || idx >= vm->memo_cap || vm->memo[idx].tag == V_MARK) return FALLBACK(vm, "memo index not found");
    Value v = vm->memo[idx];
    if (v.tag == V_DEAD) return FALLBACK(vm, "an event or block used twice");
    if (v.tag == V_OBJ && v.u.r->attached && (v.u.r->role == R_EVENT || v.u.r->role == R_BLOCK)) {
        return FALLBACK(vm, "an event or block used twice");
    }
    return push(vm, v_copy(v));
}

static int push_text(VM *vm, size_t n, int is_text) {
    NEED(n);
    const char *s = (const char *)vm->buf + vm->pos;
    vm->pos += (Py_ssize_t)n;
    PyObject *o = is_text ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogatepass")
                          : PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
    if (!o) {
        PyErr_Clear();
        return FALLBACK(vm, "a string that is not UTF-8");
    }
    return push(vm, make_py(o));
}

static int push_long(VM *vm, size_t n) {
    NEED(n);
    const unsigned char *p = vm->buf + vm->pos;
    vm->pos += (Py_ssize_t)n;
    Value v;
    if (n == 0) {
        v.tag = V_INT;
        v.u.i = 0;
        return push(vm, v);
    }
    if (n <= 8) {
        uint64_t x = le(p, (int)n);
        if (n < 8 && (p[n - 1] & 0x80)) x |= ~(uint64_t)0 << (8 * n); /* sign-extend */
        v.tag = V_INT;
        memcpy(&v.u.i, &x, sizeof x);
        return push(vm, v);
    }
    /* past 64 bits: int.from_bytes(bytes, 'little', signed=True), kept as a Python int */
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    PyObject *o = NULL;
    if (bytes) {
        PyObject *args = Py_BuildValue("(Os)", bytes, "little");
        PyObject *kw = Py_BuildValue("{s:O}", "signed", Py_True);
        PyObject *from = PyObject_GetAttrString((PyObject *)&PyLong_Type, "from_bytes");
        if (args && kw && from) o = PyObject_Call(from, args, kw);
        Py_XDECREF(args);
        Py_XDECREF(kw);
        Py_XDECREF(from);
        Py_DECREF(bytes);
    }
    if (!o) {
        PyErr_Clear();
        return FALLBACK(vm, "out of memory (a long integer)");
    }
    return push(vm, make_py(o));
}

static Py_ssize_t marker(VM *vm) {
    if (vm->nmarks == 0) return -1;
    return vm->marks[--vm->nmarks];
}

static int run(VM *vm) {
    while (1) {
        if (vm->file_backed && vm->pos - vm->released > (64 << 20)) {
            /* the bytes read are handed back to the page cache (a file-backed read-only map re-reads
             * them if a memoised string there is used again): the file never sits whole in memory */
            long page = sysconf(_SC_PAGESIZE);
            uintptr_t start = ((uintptr_t)(vm->buf + vm->released) + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
            uintptr_t end = ((uintptr_t)(vm->buf + vm->pos - (1 << 20))) & ~((uintptr_t)page - 1);
            if (end > start) madvise((void *)start, end - start, MADV_DONTNEED);
            vm->released = vm->pos - (1 << 20);
        }
        NEED(1);
        Py_ssize_t at = vm->pos;
        unsigned char op = vm->buf[vm->pos++];
        const char *bad = dangerous(op);
        if (bad) return FALLBACK(vm, "opcode %s at byte %zd", bad, at);
        Value v;
        switch (op) {
        case 0x80: /* PROTO */
            NEED(1);
            if (vm->buf[vm->pos] > 5) return FALLBACK(vm, "unsupported protocol");
            vm->pos++;
            break;
        case 0x95: /* FRAME */
            NEED(8);
            if (le(vm->buf + vm->pos, 8) > (uint64_t)(vm->len - vm->pos - 8)) return FALLBACK(vm, "frame past the end");
            vm->pos += 8;
            break;
        case '.': { /* STOP */
            if (vm->sp == 0 || vm->stack[vm->sp - 1].tag != V_OBJ || vm->stack[vm->sp - 1].u.r != vm->top)
                return FALLBACK(vm, "the pickle's value is not a snapshot's top level");
            return 0;
        }
        case '(': /* MARK */
            if (vm->nmarks == vm->marks_cap) {
                Py_ssize_t cap = vm->marks_cap ? vm->marks_cap * 2 : 64;
                Py_ssize_t *marks = realloc(vm->marks, (size_t)cap * sizeof(Py_ssize_t));
                if (!marks) return FALLBACK(vm, "out of memory (marks)");
                vm->marks = marks;
                vm->marks_cap = cap;
            }
            vm->marks[vm->nmarks++] = vm->sp;
            break;
        case '}': if (new_container(vm, 1) < 0) return -1; break;
        case ']': if (new_container(vm, 0) < 0) return -1; break;
        case ')': {
            PyObject *t = PyTuple_New(0);
            if (!t || push(vm, make_py(t)) < 0) return FALLBACK(vm, "out of memory");
            break;
        }
        case 0x85: case 0x86: case 0x87: case 't': { /* TUPLE1-3, TUPLE */
            Py_ssize_t n, base;
            if (op == 't') {
                base = marker(vm);
                if (base < 0) return FALLBACK(vm, "TUPLE without a mark");
                n = vm->sp - base;
            } else {
                n = op - 0x84;
                base = vm->sp - n;
                if (base < (vm->nmarks ? vm->marks[vm->nmarks - 1] : 0)) return FALLBACK(vm, "stack underflow");
            }
            PyObject *t = PyTuple_New(n);
            if (!t) return FALLBACK(vm, "out of memory");
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *o = to_py(vm, &vm->stack[base + i]);
                if (!o) {
                    Py_DECREF(t);
                    return -1;
                }
                PyTuple_SET_ITEM(t, i, o);
            }
            for (Py_ssize_t i = base; i < vm->sp; i++) v_release(&vm->stack[i]);
            vm->sp = base;
            if (push(vm, make_py(t)) < 0) return -1;
            break;
        }
        case 's': { /* SETITEM */
            Py_ssize_t floor = vm->nmarks ? vm->marks[vm->nmarks - 1] : 0;
            if (vm->sp - 3 < floor) return FALLBACK(vm, "stack underflow");
            Value value = vm->stack[--vm->sp], key = vm->stack[--vm->sp];
            if (setitem(vm, &vm->stack[vm->sp - 1], &key, &value) < 0) return -1;
            break;
        }
        case 'u': { /* SETITEMS */
            Py_ssize_t base = marker(vm);
            if (base < 1 || (vm->sp - base) % 2) return FALLBACK(vm, "SETITEMS without a dict or with an odd count");
            Py_ssize_t floor = vm->nmarks ? vm->marks[vm->nmarks - 1] : 0;
            if (base - 1 < floor) return FALLBACK(vm, "stack underflow");
            Value *dict = &vm->stack[base - 1];
            int rc = 0;
            for (Py_ssize_t i = base; i < vm->sp; i += 2) {
                if (rc == 0) rc = setitem(vm, dict, &vm->stack[i], &vm->stack[i + 1]);
                else v_release(&vm->stack[i]), v_release(&vm->stack[i + 1]);
            }
            vm->sp = base;
            if (rc < 0) return -1;
            break;
        }
        case 'a': { /* APPEND */
            Py_ssize_t floor = vm->nmarks ? vm->marks[vm->nmarks - 1] : 0;
            if (vm->sp - 2 < floor) return FALLBACK(vm, "stack underflow");
            Value item = vm->stack[--vm->sp];
            if (append(vm, &vm->stack[vm->sp - 1], &item) < 0) return -1;
            break;
        }
        case 'e': { /* APPENDS */
            Py_ssize_t base = marker(vm);
            if (base < 1) return FALLBACK(vm, "APPENDS without a list");
            Py_ssize_t floor = vm->nmarks ? vm->marks[vm->nmarks - 1] : 0;
            if (base - 1 < floor) return FALLBACK(vm, "stack underflow");
            Value *list = &vm->stack[base - 1];
            int rc = 0;
            for (Py_ssize_t i = base; i < vm->sp; i++) {
                if (rc == 0) rc = append(vm, list, &vm->stack[i]);
                else v_release(&vm->stack[i]);
            }
            vm->sp = base;
            if (rc < 0) return -1;
            break;
        }
        case '0': { /* POP */
            if (vm->nmarks && vm->marks[vm->nmarks - 1] == vm->sp) {
                vm->nmarks--; /* POP of a mark */
                break;
            }
            if (vm->sp == 0) return FALLBACK(vm, "stack underflow");
            v_release(&vm->stack[--vm->sp]);
            break;
        }
        case '1': { /* POP_MARK */
            Py_ssize_t base = marker(vm);
            if (base < 0) return FALLBACK(vm, "POP_MARK without a mark");
            while (vm->sp > base) v_release(&vm->stack[--vm->sp]);
            break;
        }
        case 'X': NEED(4); { size_t n = (size_t)le(vm->buf + vm->pos, 4); vm->pos += 4; if (push_text(vm, n, 1) < 0) return -1; } break;
        case 0x8c: NEED(1); { size_t n = vm->buf[vm->pos]; vm->pos += 1; if (push_text(vm, n, 1) < 0) return -1; } break;
        case 0x8d: NEED(8); { uint64_t n = le(vm->buf + vm->pos, 8); vm->pos += 8; if (n > (uint64_t)PY_SSIZE_T_MAX) return FALLBACK(vm, "truncated"); if (push_text(vm, (size_t)n, 1) < 0) return -1; } break;
        case 'B': NEED(4); { size_t n = (size_t)le(vm->buf + vm->pos, 4); vm->pos += 4; if (push_text(vm, n, 0) < 0) return -1; } break;
        case 'C': NEED(1); { size_t n = vm->buf[vm->pos]; vm->pos += 1; if (push_text(vm, n, 0) < 0) return -1; } break;
        case 0x8e: NEED(8); { uint64_t n = le(vm->buf + vm->pos, 8); vm->pos += 8; if (n > (uint64_t)PY_SSIZE_T_MAX) return FALLBACK(vm, "truncated"); if (push_text(vm, (size_t)n, 0) < 0) return -1; } break;
        case 'J': /* BININT */
            NEED(4);
            v.tag = V_INT;
            v.u.i = (int32_t)(uint32_t)le(vm->buf + vm->pos, 4);
            vm->pos += 4;
            if (push(vm, v) < 0) return -1;
            break;
        case 'K': NEED(1); v.tag = V_INT; v.u.i = vm->buf[vm->pos]; vm->pos += 1; if (push(vm, v) < 0) return -1; break;
        case 'M': NEED(2); v.tag = V_INT; v.u.i = (int64_t)le(vm->buf + vm->pos, 2); vm->pos += 2; if (push(vm, v) < 0) return -1; break;
        case 0x8a: NEED(1); { size_t n = vm->buf[vm->pos]; vm->pos += 1; if (push_long(vm, n) < 0) return -1; } break;
        case 0x8b: NEED(4); {
            int32_t n = (int32_t)(uint32_t)le(vm->buf + vm->pos, 4);
            vm->pos += 4;
            if (n < 0) return FALLBACK(vm, "LONG4 with a negative length");
            if (push_long(vm, (size_t)n) < 0) return -1;
        } break;
        case 'G': { /* BINFLOAT, big-endian */
            NEED(8);
            uint64_t bits = 0;
            for (int i = 0; i < 8; i++) bits = (bits << 8) | vm->buf[vm->pos + i];
            vm->pos += 8;
            v.tag = V_FLOAT;
            memcpy(&v.u.d, &bits, sizeof bits);
            if (push(vm, v) < 0) return -1;
            break;
        }
        case 'N': v.tag = V_NONE; v.u.i = 0; if (push(vm, v) < 0) return -1; break;
        case 0x88: v.tag = V_TRUE; v.u.i = 0; if (push(vm, v) < 0) return -1; break;
        case 0x89: v.tag = V_FALSE; v.u.i = 0; if (push(vm, v) < 0) return -1; break;
        case 0x94: /* MEMOIZE */
            if (vm->used_put) return FALLBACK(vm, "MEMOIZE and BINPUT mixed");
            vm->used_memoize = 1;
            if (memo_put(vm, vm->memo_len) < 0) return -1;
            break;
        case 'q': case 'r': { /* BINPUT, LONG_BINPUT */
            if (vm->used_memoize) return FALLBACK(vm, "MEMOIZE and BINPUT mixed");
            vm->used_put = 1;
            int n = op == 'q' ? 1 : 4;
            NEED(n);
            uint64_t idx = le(vm->buf + vm->pos, n);
            vm->pos += n;
            if (idx > (uint64_t)vm->len) return FALLBACK(vm, "memo index out of range");
            if (memo_put(vm, (Py_ssize_t)idx) < 0) return -1;
            break;
        }
        case 'h': case 'j': { /* BINGET, LONG_BINGET */
            int n = op == 'h' ? 1 : 4;
            NEED(n);
            uint64_t idx = le(vm->buf + vm->pos, n);
            vm->pos += n;
            if (idx >= (uint64_t)vm->memo_cap) return FALLBACK(vm, "memo index not found");
            if (memo_get(vm, (Py_ssize_t)idx) < 0) return -1;
            break;
        }
        default:
            return FALLBACK(vm, "opcode 0x%02x at byte %zd is not read here", op, at);
        }
    }
}

/* ---------------------------------------------------------------- result */

static PyObject *take(Vec *v, size_t n) {
    PyObject *out = PyByteArray_FromStringAndSize(v->data ? (const char *)v->data : "", (Py_ssize_t)(n * v->item));
    free(v->data);
    v->data = NULL;
    v->cap = 0;
    return out;
}

static int put(PyObject *dict, const char *name, PyObject *value) {
    if (!value) return -1;
    int rc = PyDict_SetItemString(dict, name, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *lengths(VM *vm, Obj *list, int64_t total, int blocks) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    int64_t expected = 0;
    for (Py_ssize_t i = 0; list && i < list->nkids; i++) {
        Obj *kid = list->kids[i];
        Obj *rows = blocks ? kid->blocks : kid;
        int64_t count = rows ? rows->count : 0;
        if (count && rows->row != expected) {
            Py_DECREF(out);
            (void)FALLBACK(vm, "rows out of order");
            return Py_None; /* a marker, not a reference */
        }
        expected += count;
        PyObject *n = PyLong_FromLongLong(count);
        if (!n || PyList_Append(out, n) < 0) {
            Py_XDECREF(n);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(n);
    }
    if (expected != total) {
        Py_DECREF(out);
        (void)FALLBACK(vm, "rows not attached to the snapshot");
        return Py_None;
    }
    return out;
}

static PyObject *result(VM *vm) {
    Obj *top = vm->top;
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    PyObject *trace_lengths = lengths(vm, top->traces, vm->events.n, 0);
    if (trace_lengths == Py_None) {
        Py_DECREF(out);
        return Py_BuildValue("(ss)", "fallback", vm->why);
    }
    if (put(out, "trace_lengths", trace_lengths) < 0) goto fail;
    PyObject *block_lengths = lengths(vm, top->segments, vm->blocks.n, 1);
    if (block_lengths == Py_None) {
        Py_DECREF(out);
        return Py_BuildValue("(ss)", "fallback", vm->why);
    }
    if (put(out, "block_lengths", block_lengths) < 0) goto fail;
    if (put(out, "has_segments", PyBool_FromLong(top->segments != NULL)) < 0) goto fail;
    if (put(out, "has_traces", PyBool_FromLong(top->traces != NULL)) < 0) goto fail;
    PyObject *segments = PyList_New(0);
    if (!segments || put(out, "segments", segments) < 0) goto fail;
    for (Py_ssize_t i = 0; top->segments && i < top->segments->nkids; i++)
        if (PyList_Append(segments, top->segments->kids[i]->dict) < 0) goto fail;
    Py_INCREF(top->dict);
    if (put(out, "other", top->dict) < 0) goto fail;
    static const char *EV_INT_NAMES[] = {"addr", "size", "stream", "time_us", "device_free"};
    static const char *EV_CODE_NAMES[] = {"action", "compile_context", "user_metadata", "stack"};
    static const char *BL_INT_NAMES[] = {"address", "size", "requested_size"};
    static const char *BL_CODE_NAMES[] = {"state", "stack"};
    PyObject *events = PyDict_New(), *blocks = PyDict_New();
    if (!events || put(out, "events", events) < 0) {
        Py_XDECREF(blocks);
        goto fail;
    }
    if (!blocks || put(out, "blocks", blocks) < 0) goto fail;
    char name[64];
    for (int i = 0; i < EV_INTS; i++) {
        if (put(events, EV_INT_NAMES[i], take(&vm->events.ints[i], (size_t)vm->events.n)) < 0) goto fail;
        snprintf(name, sizeof name, "%s_present", EV_INT_NAMES[i]);
        if (put(events, name, take(&vm->events.present[i], (size_t)vm->events.n)) < 0) goto fail;
    }
    for (int i = 0; i < EV_CODES; i++)
        if (put(events, EV_CODE_NAMES[i], take(&vm->events.codes[i], (size_t)vm->events.n)) < 0) goto fail;
    for (int i = 0; i < BL_INTS; i++) {
        if (put(blocks, BL_INT_NAMES[i], take(&vm->blocks.ints[i], (size_t)vm->blocks.n)) < 0) goto fail;
        snprintf(name, sizeof name, "%s_present", BL_INT_NAMES[i]);
        if (put(blocks, name, take(&vm->blocks.present[i], (size_t)vm->blocks.n)) < 0) goto fail;
    }
    for (int i = 0; i < BL_CODES; i++)
        if (put(blocks, BL_CODE_NAMES[i], take(&vm->blocks.codes[i], (size_t)vm->blocks.n)) < 0) goto fail;
    Py_INCREF(vm->texts);
    if (put(out, "strings", vm->texts) < 0) goto fail;
    Py_INCREF(vm->stack_frames);
    if (put(out, "stacks", vm->stack_frames) < 0) goto fail;
    size_t nf = vm->frame_name.n;
    if (put(out, "frame_name", take(&vm->frame_name, nf)) < 0 || put(out, "frame_filename", take(&vm->frame_file, nf)) < 0 ||
        put(out, "frame_line", take(&vm->frame_line, nf)) < 0 ||
        put(out, "frame_has_line", take(&vm->frame_has_line, nf)) < 0)
        goto fail;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static void vm_free(VM *vm) {
    for (Py_ssize_t i = 0; i < vm->sp; i++) v_release(&vm->stack[i]);
    free(vm->stack);
    free(vm->marks);
    for (Py_ssize_t i = 0; i < vm->memo_cap; i++)
        if (vm->memo[i].tag != V_MARK) v_release(&vm->memo[i]);
    free(vm->memo);
    rows_free(&vm->events);
    rows_free(&vm->blocks);
    for (int i = 0; i < CACHE_SIZE; i++) {
        Py_XDECREF(vm->text_cache[i].key);
        Py_XDECREF(vm->field_cache[i].key);
    }
    Py_XDECREF(vm->text_codes);
    Py_XDECREF(vm->texts);
    Py_XDECREF(vm->field_codes);
    Py_XDECREF(vm->frame_ids);
    Py_XDECREF(vm->stack_ids);
    Py_XDECREF(vm->stack_frames);
    free(vm->frame_name.data);
    free(vm->frame_file.data);
    free(vm->frame_line.data);
    free(vm->frame_has_line.data);
}

PyDoc_STRVAR(read_doc,
             "read(buffer, file_backed=False) -> dict | ('fallback', why)\n\n"
             "A memory snapshot's pickle (its bytes) as columns (see the module comment); "
             "file_backed: the buffer is a read-only map of the file, whose pages may be handed back as read.");

static PyObject *read_pickle(PyObject *self, PyObject *args) {
    PyObject *source;
    int file_backed = 0;
    if (!PyArg_ParseTuple(args, "O|p", &source, &file_backed)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) < 0) return NULL;
    VM *vm = calloc(1, sizeof(VM));
    if (!vm) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    vm->buf = view.buf;
    vm->len = view.len;
    vm->file_backed = file_backed;
    rows_init(&vm->events, EV_INTS, EV_CODES);
    rows_init(&vm->blocks, BL_INTS, BL_CODES);
    vm->frame_name.item = vm->frame_file.item = sizeof(int32_t);
    vm->frame_line.item = sizeof(int64_t);
    vm->frame_has_line.item = 1;
    vm->text_codes = PyDict_New();
    vm->texts = PyList_New(0);
    vm->field_codes = PyDict_New();
    vm->frame_ids = PyDict_New();
    vm->stack_ids = PyDict_New();
    vm->stack_frames = PyList_New(0);
    PyObject *out = NULL;
    if (!vm->text_codes || !vm->texts || !vm->field_codes || !vm->frame_ids || !vm->stack_ids || !vm->stack_frames)
        goto done;
    for (int i = 1; i < F_OTHER; i++) {
        PyObject *code = PyLong_FromLong(i);
        if (!code || PyDict_SetItemString(vm->field_codes, FIELD_NAMES[i], code) < 0) {
            Py_XDECREF(code);
            goto done;
        }
        Py_DECREF(code);
    }
    if (run(vm) < 0) {
        PyErr_Clear();
        out = Py_BuildValue("(ss)", "fallback", vm->why);
    } else {
        out = result(vm);
    }
done:
    vm_free(vm);
    free(vm);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"read", read_pickle, METH_VARARGS, read_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_snapshot_reader", "A memory snapshot's pickle read into columns.", -1, methods,
};

PyMODINIT_FUNC PyInit__snapshot_reader(void) { return PyModule_Create(&module); }
