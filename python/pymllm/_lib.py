"""ctypes declarations of include/mllm/mllm.h and the loading of libmllm.so.

The Structures below mirror the header field by field. They are only used
after the library's own *_default_params() has said, through struct_size,
that its struct has exactly our size: a library built from another header
is refused at load instead of corrupting memory.
"""
import ctypes
import ctypes.util
import os
import threading

# The MLLM_ABI_VERSION of the header this module mirrors.
ABI_VERSION = 8

# mllm_status values.
MLLM_OK = 0
MLLM_ERR_INVALID_ARG = -1
MLLM_ERR_NOMEM = -2
MLLM_ERR_IO = -3
MLLM_ERR_FORMAT = -4
MLLM_ERR_UNSUPPORTED = -5
MLLM_ERR_CONTEXT_FULL = -6
MLLM_ERR_CANCELLED = -7
MLLM_ERR_BUFFER_TOO_SMALL = -8

STATUS_NAMES = {
    MLLM_OK: "MLLM_OK",
    MLLM_ERR_INVALID_ARG: "MLLM_ERR_INVALID_ARG",
    MLLM_ERR_NOMEM: "MLLM_ERR_NOMEM",
    MLLM_ERR_IO: "MLLM_ERR_IO",
    MLLM_ERR_FORMAT: "MLLM_ERR_FORMAT",
    MLLM_ERR_UNSUPPORTED: "MLLM_ERR_UNSUPPORTED",
    MLLM_ERR_CONTEXT_FULL: "MLLM_ERR_CONTEXT_FULL",
    MLLM_ERR_CANCELLED: "MLLM_ERR_CANCELLED",
    MLLM_ERR_BUFFER_TOO_SMALL: "MLLM_ERR_BUFFER_TOO_SMALL",
}


class MllmError(Exception):
    """A call into libmllm failed.

    status: the mllm_status (a negative int, see STATUS_NAMES);
    message: mllm_last_error() of the thread that made the call.
    """

    def __init__(self, status, message):
        self.status = int(status)
        self.message = message
        name = STATUS_NAMES.get(self.status, str(self.status))
        super().__init__(f"{message} [{name}]" if message else name)

    @property
    def status_name(self):
        return STATUS_NAMES.get(self.status, str(self.status))


class LoadParamsBase(ctypes.Structure):
    """mllm_load_params of libraries built before chat_template was added."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("n_threads", ctypes.c_int),
        ("use_mmap", ctypes.c_int),
        ("tokenizer_path", ctypes.c_char_p),
    ]


class LoadParams(LoadParamsBase):
    """mllm_load_params with chat_template (appended, same ABI version) and
    exact (ABI 4), mmproj (ABI 5), backend and n_gpu_layers (ABI 6), requant
    (ABI 7), weights (ABI 8: a speech model's weight type)."""
    _fields_ = [("chat_template", ctypes.c_char_p), ("exact", ctypes.c_int), ("mmproj", ctypes.c_char_p),
                ("backend", ctypes.c_char_p), ("n_gpu_layers", ctypes.c_int), ("requant", ctypes.c_char_p),
                ("weights", ctypes.c_char_p)]


# The mllm_load_params layout of the loaded library (one of the two above).
load_params_type = LoadParams


class SessionParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("n_ctx", ctypes.c_int),
        ("n_threads", ctypes.c_int),
        ("kv_type", ctypes.c_int),        # 0 contiguous f32; 1/2/3 paged f32/f16/q8
        ("kv_block_size", ctypes.c_int),  # paged: positions per block; 0 = 16
    ]


_SAMPLING_V1_FIELDS = [
    ("struct_size", ctypes.c_uint32),
    ("temperature", ctypes.c_float),
    ("top_p", ctypes.c_float),
    ("min_p", ctypes.c_float),
    ("repeat_penalty", ctypes.c_float),
    ("top_k", ctypes.c_int),
    ("repeat_last_n", ctypes.c_int),
    ("max_tokens", ctypes.c_int),
    ("seed", ctypes.c_uint64),
    ("ignore_eos", ctypes.c_int),
]


class SamplingBase(ctypes.Structure):
    """mllm_sampling as first released: its size is what an older library fills."""
    _fields_ = _SAMPLING_V1_FIELDS


class Sampling(ctypes.Structure):
    """mllm_sampling with the fields appended since (same ABI version). Not a
    subclass of SamplingBase: ctypes would put the new fields after the
    base's tail padding, C puts them right after ignore_eos."""
    _fields_ = _SAMPLING_V1_FIELDS + [
        ("presence_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("logit_bias_ids", ctypes.c_void_p),
        ("logit_bias", ctypes.c_void_p),
        ("n_logit_bias", ctypes.c_int),
        ("on_logprobs", ctypes.c_void_p),
        ("logprobs_user", ctypes.c_void_p),
        ("n_top_logprobs", ctypes.c_int),
        ("grammar", ctypes.c_void_p),  # ABI 4: an mllm_grammar
    ]


class Timings(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("load_ms", ctypes.c_double),
        ("n_prompt", ctypes.c_int),
        ("prompt_ms", ctypes.c_double),
        ("n_gen", ctypes.c_int),
        ("gen_ms", ctypes.c_double),
        ("n_grammar", ctypes.c_int),
        ("grammar_ms", ctypes.c_double),
        ("n_images", ctypes.c_int),  # ABI 5
        ("n_images_cached", ctypes.c_int),
        ("n_image_tokens", ctypes.c_int),
        ("image_decode_ms", ctypes.c_double),
        ("vision_ms", ctypes.c_double),
    ]


class EmbedParams(ctypes.Structure):
    """mllm_embed_params."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("pooling", ctypes.c_int),      # mllm_pooling: 0 default, 1 mean, 2 cls, 3 last
        ("normalize", ctypes.c_int),    # -1 as the model says, 0 raw, 1 L2-normalised
        ("max_tokens", ctypes.c_int32),  # 0: the model's limit
    ]


POOLING = {None: 0, "default": 0, "mean": 1, "cls": 2, "last": 3}


# typedef int (*mllm_on_token)(void *user, int32_t id, const char *piece, size_t len);
ON_TOKEN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                            ctypes.c_size_t)

_c_int32_p = ctypes.POINTER(ctypes.c_int32)
_c_size_t_p = ctypes.POINTER(ctypes.c_size_t)
_vp = ctypes.c_void_p
_st = ctypes.c_int  # mllm_status is a C enum: an int

# name: (restype, argtypes). Those in OPTIONAL may be missing from an older
# library; the features that need them then raise MLLM_ERR_UNSUPPORTED.
_FUNCTIONS = {
    "mllm_version": (ctypes.c_char_p, []),
    "mllm_abi_version": (ctypes.c_int, []),
    "mllm_status_str": (ctypes.c_char_p, [_st]),
    "mllm_last_error": (ctypes.c_char_p, []),
    "mllm_load_default_params": (None, [_vp]),
    "mllm_model_load": (_st, [ctypes.c_char_p, _vp, ctypes.POINTER(_vp)]),
    "mllm_model_free": (None, [_vp]),
    "mllm_model_info_json": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, _c_size_t_p]),
    "mllm_model_n_vocab": (ctypes.c_int32, [_vp]),
    "mllm_model_n_ctx_train": (ctypes.c_int32, [_vp]),
    "mllm_model_bos": (ctypes.c_int32, [_vp]),
    "mllm_model_eos": (ctypes.c_int32, [_vp]),
    "mllm_tokenize": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, _c_int32_p,
                            ctypes.c_size_t, _c_size_t_p]),
    "mllm_token_to_piece": (_st, [_vp, ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t,
                                  _c_size_t_p]),
    "mllm_session_default_params": (None, [_vp]),
    "mllm_session_new": (_st, [_vp, ctypes.POINTER(SessionParams), ctypes.POINTER(_vp)]),
    "mllm_session_free": (None, [_vp]),
    "mllm_session_reset": (None, [_vp]),
    "mllm_sampling_default": (None, [_vp]),
    "mllm_session_n_past": (ctypes.c_int, [_vp]),
    "mllm_session_n_ctx": (ctypes.c_int, [_vp]),
    "mllm_generate": (_st, [_vp, ctypes.c_char_p, ctypes.POINTER(Sampling), ON_TOKEN, _vp]),
    "mllm_generate_ids": (_st, [_vp, _c_int32_p, ctypes.c_size_t, ctypes.POINTER(Sampling),
                                ON_TOKEN, _vp]),
    "mllm_chat_render": (_st, [_vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                               _c_size_t_p]),
    "mllm_chat": (_st, [_vp, ctypes.c_char_p, ctypes.POINTER(Sampling), ON_TOKEN, _vp,
                        _c_size_t_p]),
    "mllm_chat_tokenize": (_st, [_vp, ctypes.c_char_p, _c_int32_p, ctypes.c_size_t, _c_size_t_p]),
    "mllm_session_cancel": (None, [_vp]),
    "mllm_session_timings": (None, [_vp, ctypes.POINTER(Timings)]),
    "mllm_grammar_new": (_st, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_vp)]),
    "mllm_grammar_from_json_schema": (_st, [ctypes.c_char_p, ctypes.POINTER(_vp)]),
    "mllm_grammar_free": (None, [_vp]),
    "mllm_detokenize": (ctypes.c_int, [_vp, _c_int32_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p,
                                       ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "mllm_embed_default_params": (None, [_vp]),
    "mllm_model_n_embd": (ctypes.c_int32, [_vp]),
    "mllm_model_can_generate": (ctypes.c_int, [_vp]),
    "mllm_embed": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(EmbedParams),
                         ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, _c_size_t_p]),
    "mllm_embed_tokenize": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(EmbedParams),
                                  _c_int32_p, ctypes.c_size_t, _c_size_t_p]),
}
OPTIONAL = {"mllm_chat_render", "mllm_chat", "mllm_chat_tokenize", "mllm_embed_default_params",
            "mllm_model_n_embd", "mllm_model_can_generate", "mllm_embed", "mllm_embed_tokenize"}


def _candidates():
    """Where libmllm is looked for, in order."""
    env = os.environ.get("MLLM_LIBRARY")
    if env:
        return [env]  # an explicit choice is the only one tried
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, n) for n in ("libmllm.so", "libmllm.so.0")]
    found = [p for p in found if os.path.exists(p)]
    found += ["libmllm.so.0", "libmllm.so"]  # the system loader's search path
    name = ctypes.util.find_library("mllm")
    if name:
        found.append(name)
    return found


def _struct_size(lib, fill):
    """The struct_size the library's default function writes, read from a
    buffer large enough for any future version of the struct."""
    buf = ctypes.create_string_buffer(4096)
    fill(buf)
    return ctypes.c_uint32.from_buffer(buf).value


def _bind(lib, path):
    for name, (restype, argtypes) in _FUNCTIONS.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in OPTIONAL:
                continue
            raise MllmError(MLLM_ERR_UNSUPPORTED, f"{path}: no symbol {name}: not an mllm library")
        fn.restype = restype
        fn.argtypes = argtypes
    abi = lib.mllm_abi_version()
    if abi != ABI_VERSION:
        raise MllmError(MLLM_ERR_UNSUPPORTED,
                        f"{path}: libmllm ABI version {abi}, pymllm was written for {ABI_VERSION}")
    global load_params_type
    size = _struct_size(lib, lib.mllm_load_default_params)
    load_params_type = LoadParamsBase if size == ctypes.sizeof(LoadParamsBase) else LoadParams
    for fill, struct in ((lib.mllm_load_default_params, load_params_type),
                         (lib.mllm_session_default_params, SessionParams),
                         (lib.mllm_sampling_default, Sampling)) + (
                            ((lib.mllm_embed_default_params, EmbedParams),)
                            if has(lib, "mllm_embed_default_params") else ()):
        size = _struct_size(lib, fill)
        # An older library fills only the first mllm_sampling (Sampling is
        # larger, so that is safe) and reads struct_size, which it set.
        older = struct is Sampling and size == ctypes.sizeof(SamplingBase)
        if size != ctypes.sizeof(struct) and not older:
            raise MllmError(MLLM_ERR_UNSUPPORTED,
                            f"{path}: {fill.__name__} says struct_size {size}, pymllm's "
                            f"{struct.__name__} has {ctypes.sizeof(struct)} bytes: "
                            f"pymllm and libmllm come from different headers")
    return lib


_lib = None
_lib_lock = threading.Lock()


def load_library(path=None):
    """Loads and checks libmllm once (path, else MLLM_LIBRARY, else next to
    the package, else the system loader) and returns the ctypes handle."""
    global _lib
    with _lib_lock:
        if _lib is not None and path is None:
            return _lib
        errors = []
        for cand in [path] if path else _candidates():
            try:
                lib = ctypes.CDLL(cand)
            except OSError as e:
                errors.append(f"{cand}: {e}")
                continue
            _lib = _bind(lib, cand)
            return _lib
        raise MllmError(MLLM_ERR_IO, "cannot load libmllm (set MLLM_LIBRARY to its path): "
                        + "; ".join(errors))


def has(lib, name):
    """Whether the loaded library has the (optional) function name."""
    try:
        getattr(lib, name)
        return True
    except AttributeError:
        return False
