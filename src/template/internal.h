/* Shared types of the template interpreter: arena, values, tokens, AST,
   renderer state. Not for use outside src/template/. */
#ifndef MLLM_TEMPLATE_INTERNAL_H
#define MLLM_TEMPLATE_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "template/template.h"

/* Hard limits that keep a hostile template or context from eating the
   machine (Jinja2's sandbox has MAX_RANGE = 100000 too). */
enum {
    TPL_MAX_DEPTH = 200,            /* nesting of parse / macro calls / JSON */
    TPL_MAX_RANGE = 100000,         /* items range() may produce */
    TPL_ERR_CAP = 512,
};
#define TPL_MAX_ARENA ((size_t)512 << 20) /* bytes one render may allocate */

/* ---- arena: every value and AST node lives in one, freed at once ------ */
typedef struct tpl_chunk tpl_chunk;
typedef struct {
    tpl_chunk *head;
    size_t total;
    bool failed; /* an allocation failed or went over TPL_MAX_ARENA */
} tpl_arena;

void *tpl_alloc(tpl_arena *a, size_t n); /* zeroed; NULL on failure */
void tpl_arena_free(tpl_arena *a);

/* ---- values ------------------------------------------------------------ */
typedef enum {
    TV_UNDEF, TV_NONE, TV_BOOL, TV_INT, TV_FLOAT, TV_STR, TV_LIST, TV_DICT,
    TV_NS,     /* namespace(...): the one mutable object */
    TV_LOOP,   /* the `loop` variable of a for */
    TV_FUNC,   /* builtin function or bound method */
    TV_MACRO,
} tv_kind;

typedef struct tpl_list tpl_list;
typedef struct tpl_dict tpl_dict;
typedef struct tpl_loop tpl_loop;
typedef struct tpl_func tpl_func;
typedef struct tpl_macro tpl_macro;

typedef struct {
    tv_kind k;
    union {
        bool b;
        int64_t i;
        double f;
        struct { const char *p; size_t n; } s; /* UTF-8, not NUL-terminated */
        tpl_list *l;
        tpl_dict *d;   /* TV_DICT and TV_NS */
        tpl_loop *loop;
        tpl_func *fn;
        tpl_macro *m;
    } u;
    const char *undef_name; /* TV_UNDEF: what was missing (for errors) */
} tval;

struct tpl_list {
    tval *v;
    size_t n, cap;
    bool tuple; /* str() prints (a, b) */
};

/* Insertion-ordered; keys are strings. */
struct tpl_dict {
    tval *keys, *vals;
    size_t n, cap;
};

struct tpl_loop {
    tpl_list *items;
    size_t index0;
    int depth0;
};

typedef struct tpl_render tpl_render;
struct tpl_node;
/* A builtin: args are positional, then kw_n keyword args named kw_names. */
typedef bool (*tpl_builtin)(tpl_render *r, int line, tval self, const tval *args, size_t n,
                            const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out);
struct tpl_func {
    const char *name;
    tpl_builtin call;
    tval self;
};

struct tpl_scope;
struct tpl_macro {
    const struct tpl_node *def;
    struct tpl_scope *closure;
};

tval tv_undef(const char *name);
tval tv_none(void);
tval tv_bool(bool b);
tval tv_int(int64_t i);
tval tv_float(double f);
tval tv_str(const char *p, size_t n);
tval tv_cstr(const char *p);
bool tv_is_str(tval v, const char *lit);

tpl_list *tpl_list_new(tpl_arena *a, size_t cap);
bool tpl_list_push(tpl_arena *a, tpl_list *l, tval v);
tpl_dict *tpl_dict_new(tpl_arena *a, size_t cap);
/* Sets (replacing in place) key -> v. */
bool tpl_dict_set(tpl_arena *a, tpl_dict *d, const char *k, size_t kn, tval v);
tval *tpl_dict_get(const tpl_dict *d, const char *k, size_t kn);

const char *tv_type_name(tval v); /* Python's: str, int, list, dict, NoneType ... */
bool tv_truthy(tval v);
bool tv_equal(tval a, tval b);
/* Python ordering: numbers with numbers, str with str, lists elementwise.
   Returns false (no order) for other pairs. */
bool tv_compare(tval a, tval b, int *cmp);

/* ---- growable byte buffer (plain heap, not arena) --------------------- */
typedef struct {
    char *p;
    size_t n, cap;
    bool failed;
} tpl_buf;
void tpl_buf_put(tpl_buf *b, const char *s, size_t n);
void tpl_buf_putc(tpl_buf *b, char c);
void tpl_buf_printf(tpl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tpl_buf_free(tpl_buf *b);
/* Moves the buffer's bytes into an arena string (frees the buffer). */
bool tpl_buf_take(tpl_render *r, int line, tpl_buf *b, tval *out);

/* str(v) as Python prints it (str of a str is itself; None -> "None";
   1.0 -> "1.0"; lists and dicts with repr() of their items). */
bool tv_str_append(tpl_buf *b, tval v);
bool tv_repr_append(tpl_buf *b, tval v);
void tpl_float_repr(double f, char *out, size_t cap); /* Python repr(float) */
/* str(v) as an arena string value. */
bool tv_to_str(tpl_render *r, int line, tval v, tval *out);

/* ---- JSON in (Python json.loads) and out (json.dumps) ------------------- */
/* Parses a JSON document into arena values; int vs float kept as written. */
bool tpl_json_parse(tpl_arena *a, const char *s, size_t n, tval *out, char *err, size_t errcap);
/* json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys).
   indent NULL: one line with ", " and ": ". Returns false with a message
   in err when v holds something JSON cannot show (undefined, a macro ...). */
bool tpl_json_dump(tpl_buf *b, tval v, const char *indent, bool sort_keys, char *err,
                   size_t errcap);

/* ---- UTF-8 ------------------------------------------------------------- */
size_t tpl_utf8_len(const char *s, size_t n);                    /* code points */
size_t tpl_utf8_offset(const char *s, size_t n, size_t cp_index); /* byte offset */
/* Decodes one code point at s[*i], advancing *i (invalid byte: its value). */
uint32_t tpl_utf8_next(const char *s, size_t n, size_t *i);
void tpl_utf8_put(tpl_buf *b, uint32_t cp);
bool tpl_is_space(uint32_t cp); /* Python str.isspace() */

/* ---- lexer --------------------------------------------------------------- */
typedef enum {
    TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END,
    TK_NAME, TK_INT, TK_FLOAT, TK_STRING, TK_OP, TK_EOF,
} tk_kind;

/* Operators, one code each (TK_OP tokens). */
typedef enum {
    OP_ADD = 1, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_TILDE,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_ASSIGN, OP_DOT, OP_COMMA,
    OP_COLON, OP_PIPE, OP_LPAREN, OP_RPAREN, OP_LBRACKET, OP_RBRACKET, OP_LBRACE,
    OP_RBRACE, OP_SEMICOLON,
    /* not lexed; used by the AST */
    OP_IN, OP_NOT_IN, OP_AND, OP_OR, OP_NOT, OP_NEG, OP_POS,
} tpl_op;

typedef struct {
    tk_kind k;
    int line;
    int op;            /* TK_OP */
    const char *p;     /* TK_DATA / TK_NAME: the source bytes; TK_STRING: unescaped */
    size_t n;
    int64_t i;
    double f;
} tpl_token;

typedef struct {
    tpl_token *t;
    size_t n, cap;
} tpl_tokens;

/* Splits the source into tokens with Jinja's whitespace rules applied
   (trim_blocks, lstrip_blocks, {%- -%}). Strings are unescaped into the
   arena. On error writes "line N: ..." into err. */
bool tpl_lex(tpl_arena *a, const char *src, size_t n, tpl_tokens *out, char *err, size_t errcap);

/* ---- AST ----------------------------------------------------------------- */
typedef enum {
    /* statements */
    N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET, N_SET_BLOCK, N_MACRO, N_BREAK, N_CONTINUE,
    N_FILTER_BLOCK, N_BLOCK, /* N_BLOCK: a body run in place ({% generation %}) */
    /* expressions */
    N_CONST, N_NAME, N_GETATTR, N_GETITEM, N_SLICE, N_CALL, N_FILTER, N_TEST,
    N_UNARY, N_BINARY, N_COMPARE, N_AND, N_OR, N_NOT, N_COND, N_LIST, N_TUPLE, N_DICT,
    N_CONCAT,
} tpl_node_kind;

typedef struct tpl_node tpl_node;
typedef struct {
    tpl_node **v;
    size_t n, cap;
} tpl_nodes;

struct tpl_node {
    tpl_node_kind kind;
    int line;
    int op;            /* operator; N_TEST: negated; N_FOR: has recursive */
    tval val;          /* N_CONST value; N_TEXT text */
    const char *name;  /* NUL-terminated identifier (attr, filter, test, var) */
    tpl_node *a, *b, *c;
    tpl_nodes args;    /* call/filter/test args, list items, dict keys, compare operands */
    tpl_nodes kw;      /* keyword arg values / dict values / macro defaults */
    const char **kw_names; /* keyword arg names / macro param names (args.n or kw.n) */
    int *cmp_ops;      /* N_COMPARE: args.n - 1 operators */
    tpl_nodes body, orelse; /* N_IF: body/orelse (elif is a nested N_IF in orelse) */
    const char **targets; size_t n_targets; /* N_FOR / N_SET names */
    bool target_tuple;
};

/* Parses the token stream into a body of statements (err: "line N: ..."). */
bool tpl_parse(tpl_arena *a, const tpl_tokens *toks, tpl_nodes *out, char *err, size_t errcap);

/* Filters and tests are looked up by name at parse time (unknown names are
   compile errors, as in Jinja2) and called at render time. */
typedef bool (*tpl_filter_fn)(tpl_render *r, int line, tval v, const tval *args, size_t n,
                              const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out);
typedef bool (*tpl_test_fn)(tpl_render *r, int line, tval v, const tval *args, size_t n,
                            bool *out);
tpl_filter_fn tpl_filter_find(const char *name);
tpl_test_fn tpl_test_find(const char *name);

/* ---- rendering ------------------------------------------------------------ */
typedef struct tpl_scope {
    struct tpl_scope *parent;
    tpl_dict vars;
} tpl_scope;

struct tpl_render {
    tpl_arena *a;
    tpl_buf *out;
    tpl_scope *globals;  /* builtins + context */
    int depth;
    int loop_ctl;        /* 0, or OP code of pending break (1) / continue (2) */
    bool failed;
    bool oom;            /* the failure was an allocation */
    char err[TPL_ERR_CAP];
};

/* Records the first error ("line N: ...") and returns false. */
bool tpl_fail(tpl_render *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool tpl_nomem(tpl_render *r, int line);

bool tpl_render_body(tpl_render *r, tpl_scope *s, const tpl_nodes *body);
bool tpl_eval(tpl_render *r, tpl_scope *s, const tpl_node *e, tval *out);
/* Calls a macro or builtin with evaluated arguments. */
bool tpl_call_value(tpl_render *r, int line, tval fn, const tval *args, size_t n,
                    const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out);
/* Attribute (obj.name) and item (obj[key]) lookup with Jinja2's fallbacks. */
bool tpl_getattr(tpl_render *r, int line, tval obj, const char *name, size_t nn, tval *out);
bool tpl_getitem(tpl_render *r, int line, tval obj, tval key, tval *out);
/* Iterable -> list (dict: keys; str: characters; undefined: empty). */
bool tpl_iterate(tpl_render *r, int line, tval v, tpl_list **out);

/* str / dict / list methods (obj.name when obj is not a dict key hit). */
bool tpl_method_find(tpl_render *r, tval obj, const char *name, size_t nn, tval *out);
/* The global functions: range, namespace, raise_exception, strftime_now, dict. */
bool tpl_globals_init(tpl_render *r, tpl_scope *g);

/* Keyword-argument helper: the value of keyword `name` or positional i. */
const tval *tpl_arg(const tval *args, size_t n, size_t i, const tval *kw_names,
                    const tval *kw_vals, size_t kw_n, const char *name);

#endif
