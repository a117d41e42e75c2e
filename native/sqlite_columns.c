/*
 * profview._sqlite_columns: one query of a read-only SQLite database read straight into columns.
 *
 * read(uri, sql, kinds) opens the database ``uri`` names (the caller gives ``mode=ro&immutable=1``:
 * no write, no journal, no lock) read-only, runs ``sql`` and returns ``(rows, columns)``: per result column, as ``kinds`` names it,
 *   'i' (64-bit integer): (values, validity)            int64 values, Arrow validity bitmap;
 *   's' (UTF-8 text):     (offsets, data, validity)     int64 offsets (rows + 1), the bytes.
 * Every buffer is a bytearray laid out as Arrow's, so pyarrow wraps it without a copy.  The query
 * runs without the GIL (no Python object is touched until it is done), so several tables are read
 * at once from several threads.  A value of another storage class than its column's (a REAL or a
 * TEXT in an integer column, a BLOB anywhere) raises TypeError naming the column; an SQLite
 * failure raises OSError with SQLite's message.  Python's sqlite3 module builds a tuple of Python
 * objects per row, which costs more than SQLite's own work; this reads the same values without
 * them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len, cap;
} buffer;

static int reserve(buffer *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more) cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) return -1;
    b->data = grown;
    b->cap = cap;
    return 0;
}

typedef struct {
    char kind;
    buffer values;   /* int64 values, or text bytes */
    buffer offsets;  /* text only: int64 offsets */
    buffer validity; /* one bit per row, set where the value is not null */
} column;

enum { OK = 0, NO_MEMORY, WRONG_TYPE, SQLITE_FAILED };

static int set_valid(column *c, int64_t row, int valid) {
    if (row % 8 == 0) {
        if (reserve(&c->validity, 1)) return -1;
        c->validity.data[c->validity.len++] = 0;
    }
    if (valid) c->validity.data[row / 8] |= (char)(1u << (row % 8));
    return 0;
}

static int append(column *c, sqlite3_stmt *stmt, int index, int64_t row) {
    int type = sqlite3_column_type(stmt, index);
    if (set_valid(c, row, type != SQLITE_NULL)) return NO_MEMORY;
    if (c->kind == 'i') {
        if (type != SQLITE_NULL && type != SQLITE_INTEGER) return WRONG_TYPE;
        int64_t value = type == SQLITE_NULL ? 0 : (int64_t)sqlite3_column_int64(stmt, index);
        if (reserve(&c->values, sizeof value)) return NO_MEMORY;
        memcpy(c->values.data + c->values.len, &value, sizeof value);
        c->values.len += sizeof value;
        return OK;
    }
    if (type != SQLITE_NULL && type != SQLITE_TEXT) return WRONG_TYPE;
    if (type == SQLITE_TEXT) {
        const unsigned char *text = sqlite3_column_text(stmt, index);
        size_t size = (size_t)sqlite3_column_bytes(stmt, index);
        if (!text && size) return NO_MEMORY;
        if (reserve(&c->values, size)) return NO_MEMORY;
        if (size) memcpy(c->values.data + c->values.len, text, size);
        c->values.len += size;
    }
    int64_t end = (int64_t)c->values.len;
    if (reserve(&c->offsets, sizeof end)) return NO_MEMORY;
    memcpy(c->offsets.data + c->offsets.len, &end, sizeof end);
    c->offsets.len += sizeof end;
    return OK;
}

static PyObject *as_bytes(buffer *b) {
    PyObject *out = PyByteArray_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return out;
}

PyDoc_STRVAR(read_doc,
             "read(uri, sql, kinds) -> (rows, columns)\n\n"
             "The rows of one query as Arrow-laid-out buffers (see the module comment).");

static PyObject *read_query(PyObject *self, PyObject *args) {
    const char *uri, *sql, *kinds;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "sss#", &uri, &sql, &kinds, &width)) return NULL;
    for (Py_ssize_t k = 0; k < width; k++) {
        if (kinds[k] != 'i' && kinds[k] != 's') {
            PyErr_SetString(PyExc_ValueError, "kinds: 'i' or 's' per column");
            return NULL;
        }
    }
    if (width < 0 || width > 32767) {
        PyErr_SetString(PyExc_ValueError, "kinds: at most 32,767 columns");
        return NULL;
    }
    column *columns = calloc((size_t)width + 1, sizeof(column));
    if (!columns) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < width; k++) {
        columns[k].kind = kinds[k];
    }
    int status = OK, wrong = -1;
    int64_t rows = 0;
    char message[512] = "";
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    Py_BEGIN_ALLOW_THREADS;
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK && sqlite3_column_count(stmt) != width) {
        snprintf(message, sizeof message, "the query has %d columns, %zd kinds were given",
                 sqlite3_column_count(stmt), width);
        status = SQLITE_FAILED;
    }
    for (Py_ssize_t k = 0; rc == SQLITE_OK && status == OK && k < width; k++) {
        if (columns[k].kind == 's') {
            int64_t zero = 0;
            if (reserve(&columns[k].offsets, sizeof zero)) status = NO_MEMORY;
            else {
                memcpy(columns[k].offsets.data, &zero, sizeof zero);
                columns[k].offsets.len = sizeof zero;
            }
        }
    }
    while (rc == SQLITE_OK && status == OK) {
        int step = sqlite3_step(stmt);
        if (step == SQLITE_DONE) break;
        if (step != SQLITE_ROW) {
            rc = step;
            break;
        }
        for (Py_ssize_t k = 0; k < width && status == OK; k++) {
            status = append(&columns[k], stmt, (int)k, rows);
            if (status == WRONG_TYPE) wrong = (int)k;
        }
        rows++;
    }
    if (rc != SQLITE_OK && status == OK) {
        snprintf(message, sizeof message, "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        status = SQLITE_FAILED;
    }
    if (status == WRONG_TYPE && stmt) {
        const char *name = sqlite3_column_name(stmt, wrong);
        snprintf(message, sizeof message, "column %s holds a value of storage class %d where %s was expected",
                 name ? name : "?", sqlite3_column_type(stmt, wrong),
                 columns[wrong].kind == 'i' ? "an integer" : "text");
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    Py_END_ALLOW_THREADS;

    PyObject *result = NULL, *list = NULL;
    if (status == NO_MEMORY) PyErr_NoMemory();
    else if (status == WRONG_TYPE) PyErr_SetString(PyExc_TypeError, message);
    else if (status == SQLITE_FAILED) PyErr_SetString(PyExc_OSError, message);
    else if ((list = PyList_New(width))) {
        for (Py_ssize_t k = 0; k < width; k++) {
            column *c = &columns[k];
            PyObject *item = c->kind == 'i'
                                 ? Py_BuildValue("(NN)", as_bytes(&c->values), as_bytes(&c->validity))
                                 : Py_BuildValue("(NNN)", as_bytes(&c->offsets), as_bytes(&c->values),
                                                 as_bytes(&c->validity));
            if (!item) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, k, item);
        }
        if (list) result = Py_BuildValue("(LN)", (long long)rows, list);
    }
    for (Py_ssize_t k = 0; k < width; k++) {
        free(columns[k].values.data);
        free(columns[k].offsets.data);
        free(columns[k].validity.data);
    }
    free(columns);
    return result;
}

static PyMethodDef methods[] = {
    {"read", read_query, METH_VARARGS, read_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sqlite_columns", "One SQLite query read into Arrow-laid-out columns.", -1, methods,
};

PyMODINIT_FUNC PyInit__sqlite_columns(void) { return PyModule_Create(&module); }
