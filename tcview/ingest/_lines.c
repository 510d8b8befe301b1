/* The trace's line matcher in C: what `tracefile.LINE.finditer` finds, without the regex.

   lines(buf, lo, hi) -> list of (s, pend, rank, ts, pid, seg, minor, minor_seg), one for each
   match of LINE in buf[lo:hi] (as `LINE.finditer(buf, lo, hi)` finds them, so nothing past hi
   is read): s is where the line starts (the match's start + 1), pend where the match ends (the
   record prefix's end, or the header's when a fast path took it), and the rest the match's six
   groups (bytes, or None where a group took no part). A test compares the two on generated
   and real traces (tests/test_lines_c.py); without this module, tracefile uses the regex.

   Every matcher below takes a position and returns the position after what it matched, or -1.
   The grammar is the regex's: at each point at most one alternative can go on, so matching
   greedily without backtracking finds what the regex finds. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef Py_ssize_t pos;

typedef struct {
    const unsigned char *b;
    pos end; /* hi: nothing at or past it is read, as the regex's endpos */
} Text;

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int word(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* printable ASCII but '"' and '\\': what a string of the fast path may hold */
static int plain(unsigned char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }

static pos lit(const Text *t, pos i, const char *s, pos n)
{
    if (i < 0 || t->end - i < n || memcmp(t->b + i, s, (size_t)n) != 0)
        return -1;
    return i + n;
}
#define LIT(t, i, s) lit((t), (i), (s), (pos)(sizeof(s) - 1))

static pos digits(const Text *t, pos i, pos most)
{
    pos j = i;
    while (j < t->end && j - i < most && is_digit(t->b[j]))
        j++;
    return j;
}

/* _INT: 0 | [1-9]\d{0,17} */
static pos m_int(const Text *t, pos i)
{
    if (i < 0 || i >= t->end)
        return -1;
    if (t->b[i] == '0')
        return i + 1;
    if (!is_digit(t->b[i]))
        return -1;
    return digits(t, i + 1, 17);
}

/* _SCALAR: -?INT(\.\d{1,17})? | true | false | null | "plain*" */
static pos m_scalar(const Text *t, pos i)
{
    if (i < 0 || i >= t->end)
        return -1;
    switch (t->b[i]) {
    case '"': {
        pos j = i + 1;
        while (j < t->end && plain(t->b[j]))
            j++;
        return j < t->end && t->b[j] == '"' ? j + 1 : -1;
    }
    case 't':
        return LIT(t, i, "true");
    case 'f':
        return LIT(t, i, "false");
    case 'n':
        return LIT(t, i, "null");
    }
    pos j = m_int(t, t->b[i] == '-' ? i + 1 : i);
    if (j >= 0 && j < t->end && t->b[j] == '.') {
        pos k = digits(t, j + 1, 17);
        if (k > j + 1)
            j = k;
    }
    return j;
}

/* _FIELD: "(?!has_payload")\w+": */
static pos m_field(const Text *t, pos i)
{
    if (i < 0 || i >= t->end || t->b[i] != '"')
        return -1;
    if (LIT(t, i + 1, "has_payload\"") >= 0)
        return -1;
    pos j = i + 1;
    while (j < t->end && word(t->b[j]))
        j++;
    return j > i + 1 ? LIT(t, j, "\": ") : -1;
}

/* open ( item (", " item)* )? close */
static pos m_seq(const Text *t, pos i, char open, char close, pos (*item)(const Text *, pos))
{
    if (i < 0 || i >= t->end || t->b[i] != open)
        return -1;
    pos j = i + 1;
    if (j < t->end && t->b[j] == close)
        return j + 1;
    for (;;) {
        j = item(t, j);
        if (j < 0 || j >= t->end)
            return -1;
        if (t->b[j] == close)
            return j + 1;
        j = LIT(t, j, ", ");
    }
}

static pos m_flat_item(const Text *t, pos i) { return m_scalar(t, m_field(t, i)); }

/* _VALUE: _SCALAR | [ _SCALAR, ... ] | _FLAT */
static pos m_value(const Text *t, pos i)
{
    if (i < 0 || i >= t->end)
        return -1;
    if (t->b[i] == '[')
        return m_seq(t, i, '[', ']', m_scalar);
    if (t->b[i] == '{')
        return m_seq(t, i, '{', '}', m_flat_item);
    return m_scalar(t, i);
}

static pos m_object_item(const Text *t, pos i) { return m_value(t, m_field(t, i)); }

static const char *const ID_KEYS[] = {
    "frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank"};

/* _CTX: (, "<id key>": (INT|null))*, its end (never -1: it may match nothing) */
static pos m_ctx(const Text *t, pos i)
{
    for (;;) {
        pos j = LIT(t, i, ", \""), k = -1;
        for (size_t n = 0; j >= 0 && k < 0 && n < sizeof(ID_KEYS) / sizeof(*ID_KEYS); n++) {
            k = lit(t, j, ID_KEYS[n], (pos)strlen(ID_KEYS[n]));
            k = LIT(t, k, "\": ");
        }
        if (k < 0)
            return i;
        pos v = LIT(t, k, "null");
        if (v < 0)
            v = m_int(t, k);
        if (v < 0)
            return i;
        i = v;
    }
}

static pos m_hex32(const Text *t, pos i)
{
    if (i < 0 || t->end - i < 32)
        return -1;
    for (pos j = i; j < i + 32; j++) {
        unsigned char c = t->b[j];
        if (!is_digit(c) && !(c >= 'a' && c <= 'f'))
            return -1;
    }
    return i + 32;
}

/* "}" with a newline after it: the header's end */
static int closes(const Text *t, pos i)
{
    return i >= 0 && t->end - i >= 2 && t->b[i] == '}' && t->b[i + 1] == '\n';
}

static const char *const MINOR[] = {"describe_source", "describe_storage", "describe_tensor"};

typedef struct {
    pos start, end;
} Span; /* a group's bytes; start -1: it did not take part */

/* The record prefix at i (RECORD_PREFIX: groups rank, ts, pid), its end or -1. */
static pos m_prefix(const Text *t, pos i, Span *rank, Span *ts, Span *pid)
{
    const unsigned char *b = t->b;
    pos j = LIT(t, i, "[rank");
    if (j >= 0) {
        pos k = digits(t, j, PY_SSIZE_T_MAX);
        if (k == j || (k = LIT(t, k, "]:")) < 0)
            return -1; /* "[" is not [A-Z] either */
        *rank = (Span){j, k - 2};
        i = k;
    }
    if (i >= t->end || b[i] < 'A' || b[i] > 'Z')
        return -1;
    j = i + 1; /* \d{4} \d\d:\d\d:\d\d\.\d+ */
    static const char shape[] = "0000 00:00:00.";
    for (size_t n = 0; n < sizeof(shape) - 1; n++, j++) {
        if (j >= t->end || (shape[n] == '0' ? !is_digit(b[j]) : b[j] != (unsigned char)shape[n]))
            return -1;
    }
    pos k = digits(t, j, PY_SSIZE_T_MAX);
    if (k == j)
        return -1;
    *ts = (Span){i + 1, k};
    j = k; /* " +(\d+) " */
    while (j < t->end && b[j] == ' ')
        j++;
    if (j == k)
        return -1;
    k = digits(t, j, PY_SSIZE_T_MAX);
    if (k == j || k >= t->end || b[k] != ' ')
        return -1;
    *pid = (Span){j, k};
    /* [^\]\n]*:\d+\] : the first ']' (no newline before it), digits before it, ':' before them */
    pos r = k + 1;
    while (r < t->end && b[r] != ']' && b[r] != '\n')
        r++;
    if (r >= t->end || b[r] != ']' || r + 1 >= t->end || b[r + 1] != ' ')
        return -1;
    pos d = r - 1;
    while (d > k && is_digit(b[d]))
        d--;
    if (d == r - 1 || b[d] != ':' || d < k + 1)
        return -1;
    return r + 2;
}

static PyObject *span_bytes(const Text *t, Span s)
{
    if (s.start < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)t->b + s.start, s.end - s.start);
}

/* The match of LINE whose newline is at p (p + 1 < hi, b[p + 1] not a tab or newline). */
static PyObject *match_at(const Text *t, pos p)
{
    const Span none = {-1, -1};
    Span g[6] = {none, none, none, none, none, none};
    pos s = p + 1, pend = s;
    pos q = m_prefix(t, s, &g[0], &g[1], &g[2]);
    if (q < 0) {
        g[0] = g[1] = g[2] = none; /* what matched before the prefix failed is no group */
    } else {
        pend = q;
        pos j = LIT(t, q, "{\"chromium_event\": {}");
        if (j >= 0) {
            pos c = m_ctx(t, j), h = m_hex32(t, LIT(t, c, ", \"has_payload\": \""));
            h = LIT(t, h, "\"");
            h = h >= 0 ? h : c;
            if (closes(t, h)) {
                g[3] = (Span){j, c};
                pend = h + 1;
            }
        } else if ((j = LIT(t, q, "{\"")) >= 0) {
            for (size_t n = 0; n < sizeof(MINOR) / sizeof(*MINOR); n++) {
                pos k = lit(t, j, MINOR[n], (pos)strlen(MINOR[n]));
                pos o = m_seq(t, LIT(t, k, "\": "), '{', '}', m_object_item);
                if (o < 0)
                    continue;
                pos c = m_ctx(t, o);
                if (closes(t, c)) {
                    g[4] = (Span){j, k};
                    g[5] = (Span){o, c};
                    pend = c + 1;
                }
                break;
            }
        }
    }
    PyObject *out = PyTuple_New(8);
    if (out == NULL)
        return NULL;
    PyObject *a = PyLong_FromSsize_t(s), *e = PyLong_FromSsize_t(pend);
    PyTuple_SET_ITEM(out, 0, a);
    PyTuple_SET_ITEM(out, 1, e);
    for (int n = 0; n < 6; n++)
        PyTuple_SET_ITEM(out, 2 + n, span_bytes(t, g[n]));
    for (int n = 0; n < 8; n++) {
        if (PyTuple_GET_ITEM(out, n) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *lines(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    pos lo, hi;
    if (!PyArg_ParseTuple(args, "y*nn:lines", &view, &lo, &hi))
        return NULL;
    if (lo < 0)
        lo = 0;
    if (hi > view.len)
        hi = view.len;
    Text t = {(const unsigned char *)view.buf, hi};
    PyObject *out = PyList_New(0);
    pos p = lo;
    while (out != NULL && p < hi) {
        const unsigned char *nl = memchr(t.b + p, '\n', (size_t)(hi - p));
        if (nl == NULL)
            break;
        p = nl - t.b;
        if (p + 1 < hi && t.b[p + 1] != '\t' && t.b[p + 1] != '\n') {
            PyObject *m = match_at(&t, p);
            if (m == NULL || PyList_Append(out, m) < 0)
                Py_CLEAR(out);
            Py_XDECREF(m);
        }
        p++;
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"lines", lines, METH_VARARGS, "LINE's matches in buf[lo:hi], as tuples (see the module)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tcview.ingest._lines", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__lines(void) { return PyModule_Create(&module); }
