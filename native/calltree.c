/*
 * profview._calltree: the host call tree's stack pass (analysis/calltree.py) in C.
 *
 * Input: host events sorted by (thread, ts, -dur) as four equal-length buffers: thread index
 * (int64), start and end (float64), is-operator flag (uint8).  Output: parent, op_parent and
 * subtree_end (int64), with the exact rule of the Python pass it replaces: an event is a child of
 * the innermost open event of its thread that contains it (end within ``tolerance``); an open
 * event that ended before it starts, or that it outlasts, is closed first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>

static int get(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what, Py_ssize_t n) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", what, n * itemsize, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *bytes_of(void *data, Py_ssize_t size) {
    return PyByteArray_FromStringAndSize((const char *)data, size);
}

PyDoc_STRVAR(nest_doc,
             "nest(thread, start, end, is_op, tolerance) -> (parent, op_parent, subtree_end)\n\n"
             "Buffers in, bytearrays of int64 out (see the module comment).");

static PyObject *nest(PyObject *self, PyObject *args) {
    PyObject *thread_obj, *start_obj, *end_obj, *op_obj;
    double tolerance;
    if (!PyArg_ParseTuple(args, "OOOOd", &thread_obj, &start_obj, &end_obj, &op_obj, &tolerance)) return NULL;
    Py_buffer thread_view, start_view, end_view, op_view;
    if (PyObject_GetBuffer(thread_obj, &thread_view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    Py_ssize_t n = thread_view.len / (Py_ssize_t)sizeof(int64_t);
    if (get(start_obj, &start_view, sizeof(double), "start", n) < 0) {
        PyBuffer_Release(&thread_view);
        return NULL;
    }
    if (get(end_obj, &end_view, sizeof(double), "end", n) < 0) {
        PyBuffer_Release(&thread_view);
        PyBuffer_Release(&start_view);
        return NULL;
    }
    if (get(op_obj, &op_view, 1, "is_op", n) < 0) {
        PyBuffer_Release(&thread_view);
        PyBuffer_Release(&start_view);
        PyBuffer_Release(&end_view);
        return NULL;
    }
    const int64_t *thread = thread_view.buf;
    const double *start = start_view.buf, *end = end_view.buf;
    const uint8_t *is_op = op_view.buf;
    int64_t *parent = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    int64_t *op_parent = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    int64_t *subtree_end = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    int64_t *stack = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    PyObject *result = NULL;
    if (!parent || !op_parent || !subtree_end || !stack) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        parent[i] = op_parent[i] = -1;
        subtree_end[i] = n;
        if (i > 0 && thread[i] != thread[i - 1]) {
            while (depth) subtree_end[stack[--depth]] = i;
        }
        while (depth) {
            int64_t top = stack[depth - 1];
            if (end[top] <= start[i] || end[i] > end[top] + tolerance) {
                subtree_end[top] = i;
                depth--;
            } else {
                break;
            }
        }
        if (depth) {
            int64_t top = stack[depth - 1];
            parent[i] = top;
            op_parent[i] = is_op[top] ? top : op_parent[top];
        }
        stack[depth++] = i;
    }
    Py_END_ALLOW_THREADS;
    PyObject *p = bytes_of(parent, n * 8), *o = bytes_of(op_parent, n * 8), *s = bytes_of(subtree_end, n * 8);
    if (p && o && s) result = PyTuple_Pack(3, p, o, s);
    Py_XDECREF(p);
    Py_XDECREF(o);
    Py_XDECREF(s);
done:
    free(parent);
    free(op_parent);
    free(subtree_end);
    free(stack);
    PyBuffer_Release(&thread_view);
    PyBuffer_Release(&start_view);
    PyBuffer_Release(&end_view);
    PyBuffer_Release(&op_view);
    return result;
}

static PyMethodDef METHODS[] = {
    {"nest", nest, METH_VARARGS, nest_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_calltree", "The host call tree's stack pass, compiled.", -1, METHODS,
};

PyMODINIT_FUNC PyInit__calltree(void) { return PyModule_Create(&MODULE); }
