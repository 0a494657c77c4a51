/* cloudhpc profiler helper for Python programs: the Python frames that made an MPI call.
 *
 * Built against the running Python's headers (profile/build.py) and named to the PMPI library by
 * CLOUDHPC_PROFILE_PYSITE; the library calls it from its wrappers when the process is Python.
 * mpi4py releases the GIL around most MPI calls, so nothing here may take it or allocate Python
 * objects: the frames are read from this thread's own interpreter stack (CPython's internal
 * frame structures, stable while this thread is inside the C call), and a frame is turned into
 * file:line only the first time its (code object, instruction) pair is seen, while that frame is
 * still running and so keeps its code object alive.
 *
 *   int cloudhpc_pysite_frames(void **out, int depth)
 *       out[2i], out[2i+1] = code object, instruction byte offset of the i-th innermost frame
 *       (at most `depth`); returns the number of frames.
 *   int cloudhpc_pysite_describe(void *code, void *offset, char *out, size_t n)
 *       appends "file\tline\tfunction\n" (UTF-8) to out; -1 if it does not fit.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#include <internal/pycore_frame.h>
#else
#error "call sites of Python programs need CPython 3.11 to 3.13"
#endif

static _PyInterpreterFrame *top_frame(PyThreadState *ts) {
#if PY_VERSION_HEX >= 0x030D0000
    return ts->current_frame;
#else
    return ts->cframe ? ts->cframe->current_frame : NULL;
#endif
}

static PyCodeObject *frame_code(_PyInterpreterFrame *f) {
#if PY_VERSION_HEX >= 0x030D0000
    return (PyCodeObject *)f->f_executable;
#else
    return f->f_code;
#endif
}

static int frame_skipped(_PyInterpreterFrame *f) {
#if PY_VERSION_HEX >= 0x030C0000
    /* frames owned by the C stack (shims between C and Python calls) carry no code of ours */
    if (f->owner == FRAME_OWNED_BY_CSTACK) return 1;
#endif
#if PY_VERSION_HEX >= 0x030D0000
    if (!PyCode_Check(f->f_executable)) return 1;
#endif
    if (_PyFrame_IsIncomplete(f)) return 1;
    /* the import system's own frames (importing mpi4py.MPI calls MPI_Init_thread): the site is
     * the program's import line further out */
    PyObject *file = frame_code(f)->co_filename;
    return file && PyUnicode_IS_COMPACT_ASCII(file) && PyUnicode_GET_LENGTH(file) > 8 &&
           memcmp(PyUnicode_DATA(file), "<frozen ", 8) == 0;
}

int cloudhpc_pysite_frames(void **out, int depth) {
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (!ts) return 0;
    int n = 0;
    for (_PyInterpreterFrame *f = top_frame(ts); f && n < depth; f = f->previous) {
        if (frame_skipped(f)) continue;
        out[2 * n] = frame_code(f);
        out[2 * n + 1] =
            (void *)(intptr_t)(_PyInterpreterFrame_LASTI(f) * (int)sizeof(_Py_CODEUNIT));
        n++;
    }
    return n;
}

/* A str as UTF-8 without allocating (UTF-8 encoding of its code points) */
static size_t utf8_of(PyObject *s, char *out, size_t n) {
    size_t len = 0;
    if (!s || !PyUnicode_Check(s) || n == 0) return 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t m = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        char buf[4];
        size_t k;
        if (c < 0x80) {
            buf[0] = (char)c;
            k = 1;
        } else if (c < 0x800) {
            buf[0] = (char)(0xC0 | (c >> 6));
            buf[1] = (char)(0x80 | (c & 0x3F));
            k = 2;
        } else if (c < 0x10000) {
            buf[0] = (char)(0xE0 | (c >> 12));
            buf[1] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[2] = (char)(0x80 | (c & 0x3F));
            k = 3;
        } else {
            buf[0] = (char)(0xF0 | (c >> 18));
            buf[1] = (char)(0x80 | ((c >> 12) & 0x3F));
            buf[2] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[3] = (char)(0x80 | (c & 0x3F));
            k = 4;
        }
        if (len + k >= n) break;
        for (size_t j = 0; j < k; j++) out[len++] = (buf[j] == '\t' || buf[j] == '\n') ? ' ' : buf[j];
    }
    out[len] = 0;
    return len;
}

int cloudhpc_pysite_describe(void *code, void *offset, char *out, size_t n) {
    PyCodeObject *co = (PyCodeObject *)code;
    char file[4096], func[512];
    utf8_of(co->co_filename, file, sizeof file);
    utf8_of(co->co_qualname ? co->co_qualname : co->co_name, func, sizeof func);
    int line = PyCode_Addr2Line(co, (int)(intptr_t)offset);
    int k = snprintf(out, n, "%s\t%d\t%s\n", file, line, func);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}
